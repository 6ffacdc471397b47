"""Install the engine's env file and unit on a host: validated, atomic, reloaded exactly when needed."""

from __future__ import annotations

from dataclasses import dataclass

from specops.commands.boot import boot_unit, boot_unit_path, boot_unit_text
from specops.commands.release import release_env_path
from specops.commands.units import (
    deliberate_restart_argvs,
    enable_argv,
    needs_daemon_reload,
    parse_show,
    read_unit_argv,
    show_argv,
    unit_path,
    unmanaged_reason,
    verify_argv,
    verify_path,
)
from specops.config.inventory import HostSpec
from specops.errors import ExitCode, SpecopsError
from specops.host.base import Host
from specops.ops.release import restore_config

UNIT_TIMEOUT_S = 60.0


class UnitInvalid(SpecopsError):
    """systemd-analyze rejected the rendered unit on the host; nothing was installed."""


@dataclass(frozen=True)
class UnitChange:
    changed: bool
    reloaded: bool
    verified: bool


def read_unit(host: Host, spec: HostSpec) -> str | None:
    """The unit file installed now, or None."""
    result = host.run(["cat", unit_path(spec.unit_name)], timeout=UNIT_TIMEOUT_S, check=False)  # none installed
    return result.text if result.ok else None


def install_env_file(host: Host, spec: HostSpec, text: str) -> None:
    """The env file holds secrets: root-owned 0600, written by an atomic rename (put)."""
    host.run(["mkdir", "-p", spec.service_dir], timeout=UNIT_TIMEOUT_S)
    host.put(text.encode("utf-8"), spec.env_file, mode=0o600)


def install_release_env(host: Host, spec: HostSpec, release_id: str, text: str) -> None:
    """The release's own env file (root-only 0600, atomic rename): what it is verified with, and what a
    rollback to it, or any restart of it, puts back as the live env file (remote/release/relconfig.py)."""
    host.put(text.encode("utf-8"), release_env_path(spec, release_id), mode=0o600)


class UnitNotManaged(SpecopsError):
    """The unit's name belongs to a unit specops did not write: writing it could take the host down (ssh)."""

    exit_code = ExitCode.CHECKS_FAILED


def install_unit(host: Host, spec: HostSpec, text: str) -> UnitChange:
    """Verify the unit under a scratch path (when systemd-analyze exists), move it in, daemon-reload if needed.

    Checked again right before writing (the preflight checked it too): a unit specops does not manage is
    never overwritten, whatever --force says."""
    old = read_unit(host, spec)
    state = parse_show(host.run(show_argv(spec.unit_name, ["LoadState", "FragmentPath"]), timeout=UNIT_TIMEOUT_S).text)
    reason = unmanaged_reason(spec.unit_name, state.get("LoadState", ""), state.get("FragmentPath", ""), old)
    if reason is not None:
        raise UnitNotManaged(
            f"{spec.name}: {reason}; nothing was written",
            hint=f"name the engine's own unit with hosts.{spec.name}.service (e.g. 'sglang')",
        )
    verified = _verify(host, spec, text)
    if old != text:
        host.put(text.encode("utf-8"), unit_path(spec.unit_name), mode=0o644)
    show = host.run(show_argv(spec.unit_name, ["NeedDaemonReload"]), timeout=UNIT_TIMEOUT_S)
    need = parse_show(show.text).get("NeedDaemonReload", "no")
    reload = needs_daemon_reload(old, text, need)
    if reload:
        host.run(["systemctl", "daemon-reload"], timeout=UNIT_TIMEOUT_S)
    enable_unit(host, spec)
    return UnitChange(changed=old != text, reloaded=reload, verified=verified)


def enable_unit(host: Host, spec: HostSpec) -> None:
    """Enable the engine's unit and the boot unit, on every deploy (a unit installed by an older specops was
    never enabled): a host that reboots starts the release `current` names, and the boot unit has the guard
    roll back one that was never verified. The boot unit must be installed first (install_boot_unit)."""
    host.run(enable_argv(spec.unit_name, boot_unit(spec)), timeout=UNIT_TIMEOUT_S)


def install_boot_unit(host: Host, spec: HostSpec, lock_dir: str, stale_after_s: float) -> bool:
    """Write the boot unit (commands/boot.py) when its text differs; True when it was written. Enabling it (and
    the reload that loads it) is `enable_unit`'s."""
    text = boot_unit_text(spec, lock_dir, stale_after_s)
    old = host.run(read_unit_argv(boot_unit(spec)), timeout=UNIT_TIMEOUT_S, check=False)  # none before the first
    if old.ok and old.text == text:
        return False
    host.put(text.encode("utf-8"), boot_unit_path(spec), mode=0o644)
    return True


def _verify(host: Host, spec: HostSpec, text: str) -> bool:
    scratch = verify_path(spec.unit_name)
    host.run(["mkdir", "-p", scratch.rsplit("/", 1)[0]], timeout=UNIT_TIMEOUT_S)
    host.put(text.encode("utf-8"), scratch, mode=0o644)
    try:
        result = host.run(verify_argv(spec.unit_name), timeout=UNIT_TIMEOUT_S, check=False)  # judged below
    finally:
        host.run(["rm", "-f", scratch], timeout=UNIT_TIMEOUT_S)
    if result.exit_code == 127:
        return False  # no systemd-analyze on this host: install without the extra check
    if not result.ok:
        raise UnitInvalid(
            f"{spec.name}: systemd-analyze rejected the unit:\n{result.err_tail(10)}",
            hint="`specops render HOST` shows the unit; nothing was installed",
        )
    return True


def restart(host: Host, spec: HostSpec) -> None:
    """A deliberate restart of the current release, with its configuration: its recorded unit and env file are
    put back first (the live env file is written from the release's own here, so a deploy's new env file takes
    effect with the restart after its switch, and any other restart never runs a release under a configuration
    it was not verified with). Then `reset-failed`, so specops's own restarts never use up StartLimitBurst=.

    Not checked: a unit that fails at once is still "restarted"; readiness reads the journal and names why
    (a better error than `systemctl restart` exiting 1). `reset-failed` exits 1 for a unit systemd has not
    loaded yet (a first deploy): nothing to forget then."""
    restore_config(host, spec)
    for argv in deliberate_restart_argvs(spec.unit_name):
        host.run(argv, timeout=UNIT_TIMEOUT_S, check=False)
