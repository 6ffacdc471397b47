"""Install the engine's env file and unit on a host: validated, atomic, reloaded exactly when needed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specops.commands.boot import boot_unit_text
from specops.commands.planned import HostCommand, Times
from specops.commands.unit import deliberate_restart_argvs, needs_daemon_reload, parse_show, unmanaged_reason
from specops.config.inventory import HostSpec
from specops.errors import ExitCode, SpecopsError
from specops.host.base import Host, Result
from specops.ops.planned import execute
from specops.ops.release import run_script
from specops.ops.release_changes import restore_config

UNIT_TIMEOUT_S = 60.0


class UnitInvalid(SpecopsError):
    """systemd-analyze rejected the rendered unit on the host; nothing was installed."""


@dataclass(frozen=True)
class UnitChange:
    changed: bool
    reloaded: bool
    verified: bool


# the parts of the deploy's unit step (deploy/step_commands.py unit_commands), each run by the function named
RELEASE_ENV, BOOT, UNIT, ENABLE = "release-env", "boot", "unit", "enable"


def install_env_file(host: Host, commands: Sequence[HostCommand], text: str) -> None:
    """The env file holds secrets: root-owned 0600, written by an atomic rename (put). `commands`: the plan's
    (its folder made, the file written: step_commands.py env_commands)."""
    mkdir, write = commands
    execute(host, mkdir, timeout=UNIT_TIMEOUT_S)
    execute(host, write, data=text.encode("utf-8"))


def install_release_env(host: Host, commands: Sequence[HostCommand], text: str) -> None:
    """The release's own env file (root-only 0600, atomic rename): what it is verified with, and what a
    rollback to it, or any restart of it, puts back as the live env file (remote/release/relconfig.py)."""
    (write,) = commands
    execute(host, write, data=text.encode("utf-8"))


class UnitNotManaged(SpecopsError):
    """The unit's name belongs to a unit specops did not write: writing it could take the host down (ssh)."""

    exit_code = ExitCode.CHECKS_FAILED


def install_unit(host: Host, spec: HostSpec, text: str, commands: Sequence[HostCommand]) -> UnitChange:
    """Verify the unit under a scratch path (when systemd-analyze exists), move it in, daemon-reload if needed.
    `commands`: the plan's, in this order (step_commands.py unit_commands, the UNIT part).

    Checked again right before writing (the preflight checked it too): a unit specops does not manage is
    never overwritten, whatever --force says."""
    read, show, mkdir, scratch, verify, remove, write, need, reload_command = commands
    found = execute(host, read, timeout=UNIT_TIMEOUT_S, check=False)  # none installed: exit 1
    old = found.text if found is not None and found.ok else None
    state = parse_show(_text(execute(host, show, timeout=UNIT_TIMEOUT_S)))
    reason = unmanaged_reason(spec.unit_name, state.get("LoadState", ""), state.get("FragmentPath", ""), old)
    if reason is not None:
        raise UnitNotManaged(
            f"{spec.name}: {reason}; nothing was written",
            hint=f"name the engine's own unit with hosts.{spec.name}.service (e.g. 'sglang')",
        )
    verified = _verify(host, spec, text, (mkdir, scratch, verify, remove))
    if old != text:
        execute(host, write, data=text.encode("utf-8"))
    reload = needs_daemon_reload(old, text, parse_show(_text(execute(host, need, timeout=UNIT_TIMEOUT_S))).get(
        "NeedDaemonReload", "no"))  # fmt: skip
    if reload:
        execute(host, reload_command, timeout=UNIT_TIMEOUT_S)
    return UnitChange(changed=old != text, reloaded=reload, verified=verified)


def enable_unit(host: Host, commands: Sequence[HostCommand], *, boot_written: bool, reloaded: bool) -> None:
    """Enable the engine's unit and the boot unit unless both were enabled when the host was read (a unit
    installed by an older specops was never enabled): a host that reboots starts the release `current` names,
    and the boot unit has the guard roll back one that was never verified. The boot unit must be installed first
    (install_boot_unit). Already enabled, the plan holds only the reload a rewritten boot unit needs: run when
    it was rewritten (`boot_written`) and the unit's own daemon-reload did not follow (`reloaded`)."""
    (command,) = commands
    if command.times is Times.IF_NEEDED and (not boot_written or reloaded):
        return
    execute(host, command, timeout=UNIT_TIMEOUT_S)


def install_boot_unit(host: Host, spec: HostSpec, commands: Sequence[HostCommand], lock_dir: str,
                      stale_after_s: float) -> bool:  # fmt: skip
    """Write the boot unit (commands/boot.py) when its text differs; True when it was written. Enabling it (and
    the reload that loads it) is `enable_unit`'s. `commands`: the plan's (its read, its write)."""
    read, write = commands
    text = boot_unit_text(spec, lock_dir, stale_after_s)
    old = execute(host, read, timeout=UNIT_TIMEOUT_S, check=False)  # none before the first
    if old is not None and old.ok and old.text == text:
        return False
    execute(host, write, data=text.encode("utf-8"))
    return True


def _text(result: Result | None) -> str:
    return result.text if result is not None else ""


def _verify(host: Host, spec: HostSpec, text: str, commands: tuple[HostCommand, ...]) -> bool:
    mkdir, scratch, verify, remove = commands
    execute(host, mkdir, timeout=UNIT_TIMEOUT_S)
    execute(host, scratch, data=text.encode("utf-8"))
    try:
        result = execute(host, verify, timeout=UNIT_TIMEOUT_S, check=False)  # judged below
    finally:
        execute(host, remove, timeout=UNIT_TIMEOUT_S)
    if result is not None and result.exit_code == 127:
        return False  # no systemd-analyze on this host: install without the extra check
    if result is not None and not result.ok:
        raise UnitInvalid(
            f"{spec.name}: systemd-analyze rejected the unit:\n{result.err_tail(10)}",
            hint="`specops render HOST` shows the unit; nothing was installed",
        )
    return True


# The roles of the restart's commands in a plan (HostCommand.role): specops/deploy/engine_commands.py builds them.
RESTORE, RESET, RESTART = "restore-config", "reset-failed", "restart"


def restart(host: Host, spec: HostSpec, planned: Sequence[HostCommand] = ()) -> None:
    """A deliberate restart of the current release, with its configuration: its recorded unit and env file are
    put back first (the live env file is written from the release's own here, so a deploy's new env file takes
    effect with the restart after its switch, and any other restart never runs a release under a configuration
    it was not verified with). Then `reset-failed`, so specops's own restarts never use up StartLimitBurst=.

    Not checked: a unit that fails at once is still "restarted"; readiness reads the journal and names why
    (a better error than `systemctl restart` exiting 1). `reset-failed` exits 1 for a unit systemd has not
    loaded yet (a first deploy): nothing to forget then. `planned`: the plan's gates commands, whose restore,
    reset and restart parts run as they are."""
    by_role = {command.role: command for command in planned if command.role in (RESTORE, RESET, RESTART)}
    if by_role:
        run_script(host, spec, list(by_role[RESTORE].argv))
        argvs = [list(by_role[RESET].argv), list(by_role[RESTART].argv)]
    else:  # a restart without a plan (the engine's own tests)
        restore_config(host, spec)
        argvs = deliberate_restart_argvs(spec.unit_name)
    for argv in argvs:
        host.run(argv, timeout=UNIT_TIMEOUT_S, check=False)
