"""Pure builders for installing a unit: where it goes, how it is validated, when systemd must reload.

Ansible's lesson (validate before the atomic move) and its bug #77606 (a changed unit without
daemon-reload): the new unit is verified under a scratch path, moved into place atomically, and
`daemon-reload` runs exactly when the content changed or systemd says NeedDaemonReload=yes.
"""

from __future__ import annotations

import hashlib

UNIT_DIR = "/etc/systemd/system"
VERIFY_DIR = "/run/specops/verify"


def unit_path(unit_name: str) -> str:
    return f"{UNIT_DIR}/{unit_name}"


def verify_path(unit_name: str) -> str:
    """A scratch copy under its real name: systemd-analyze derives the unit type from the file name."""
    return f"{VERIFY_DIR}/{unit_name}"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def verify_argv(unit_name: str) -> list[str]:
    """`systemd-analyze verify` of the scratch copy (skipped by the executor when the tool is absent)."""
    return ["systemd-analyze", "verify", verify_path(unit_name)]


def show_argv(unit_name: str, properties: list[str], *more_units: str) -> list[str]:
    """`systemctl show`; with `more_units`, one block per unit in this order (parse_show_units)."""
    return ["systemctl", "show", unit_name, *more_units, "-p", ",".join(properties)]


def parse_show(text: str) -> dict[str, str]:
    """`systemctl show` KEY=VALUE lines into a dict (values may contain '=')."""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def parse_show_units(text: str) -> list[dict[str, str]]:
    """`systemctl show A B -p ...`: one dict per unit, in the order named (systemd separates them by an empty
    line; a unit it does not know still gets its block)."""
    return [parse_show(block) for block in text.split("\n\n") if block.strip()]


def all_enabled(states: list[dict[str, str]]) -> bool:
    """Whether every unit's link is in place for the next boot: UnitFileState `enabled` exactly (not
    `enabled-runtime`, which a reboot forgets, nor `static`, `linked` or `masked`)."""
    return bool(states) and all(state.get("UnitFileState", "").strip() == "enabled" for state in states)


def needs_daemon_reload(old_unit: str | None, new_unit: str, need_daemon_reload: str) -> bool:
    """Reload exactly when the file changes or systemd already knows its copy is stale."""
    return old_unit != new_unit or need_daemon_reload.strip().lower() == "yes"


def read_unit_argv(unit_name: str) -> list[str]:
    """The installed unit's text (exits non-zero when none is installed: that is an answer, not a failure)."""
    return ["cat", unit_path(unit_name)]


def mkdir_argv(path: str) -> list[str]:
    return ["mkdir", "-p", path]


def remove_argv(path: str) -> list[str]:
    return ["rm", "-f", path]


def daemon_reload_argv() -> list[str]:
    return ["systemctl", "daemon-reload"]


def enable_argv(*unit_names: str) -> list[str]:
    """Enable the units (their [Install] WantedBy=multi-user.target): a reboot starts the engine again.

    Idempotent, and kept by a rollback: the link in multi-user.target.wants/ names the unit's path, whose
    text a rollback rewrites in place. systemd reloads itself after every enable, links new or not (about as
    long as a daemon-reload), and that reload is needed: with `--no-reload` systemd would not know the target
    wants the unit, and would unload it once stopped (its InvocationID gone), so the deploy skips the enable
    only where both units are enabled already."""
    return ["systemctl", "enable", *unit_names]


def reset_failed_argv(unit_name: str) -> list[str]:
    """Forget the unit's failed state and its start-rate counter before a DELIBERATE restart.

    Why: StartLimitBurst= counts every start, including the ones a deploy or rollback asks for; without this,
    the (burst+1)-th deploy within StartLimitIntervalSec= ends in `start-limit-hit`. Crash loops (systemd's
    own Restart=) still count: nothing resets between those.
    """
    return ["systemctl", "reset-failed", unit_name]


def restart_argv(unit_name: str) -> list[str]:
    return ["systemctl", "restart", unit_name]


def deliberate_restart_argvs(unit_name: str) -> list[list[str]]:
    """What every intentional restart runs, in order: the plan shows these and the executor runs them."""
    return [reset_failed_argv(unit_name), restart_argv(unit_name)]


MANAGED_HEADER = "# Managed by specops."  # the first line of every unit specops writes (units/*.j2)


def is_managed(text: str) -> bool:
    """Whether a unit file is one specops wrote: it never overwrites or restarts any other."""
    return text.startswith(MANAGED_HEADER)


def unmanaged_reason(unit_name: str, load_state: str, fragment_path: str, text: str | None) -> str | None:
    """Why `unit_name` on the host is not specops's to write, or None when it is (or does not exist yet).

    A unit systemd loads from another file (a vendor unit under /lib or /usr/lib: `ssh.service`) would be
    overridden by a file in /etc; one in /etc without specops's header belongs to someone else."""
    ours = unit_path(unit_name)
    if load_state not in ("", "not-found") and fragment_path and fragment_path != ours:
        return f"{unit_name} is a unit specops does not manage (systemd loads it from {fragment_path})"
    if text is not None and not is_managed(text):
        return f"{ours} exists and was not written by specops (its first line is not {MANAGED_HEADER!r})"
    return None
