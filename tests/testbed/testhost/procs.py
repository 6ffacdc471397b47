"""Process identity that survives PID reuse.

PIDs wrap quickly on this machine (pid_max 32768), so a saved PID alone may name a stranger by the
time we kill it. Every kill here is guarded by the start time (field 22 of /proc/PID/stat) saved
with the PID.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tests.testbed.testhost.layout import cgroup2_root


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may contain spaces and parentheses: split after the last ')'
    return raw[raw.rindex(")") + 2 :].split()


def start_time(pid: int) -> int | None:
    """Start time in clock ticks since boot, or None when the PID does not exist."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def is_alive(pid: int | None, started: int | None) -> bool:
    """True while that very process exists and is not a zombie (a zombie holds no namespaces)."""
    if pid is None:
        return False
    fields = _stat_fields(pid)
    if not fields or fields[0] == "Z":
        return False
    return started is None or int(fields[19]) == started


def kill_if_same(pid: int | None, started: int | None, sig: int = signal.SIGKILL) -> bool:
    """Send `sig` only if `pid` is still the process that started at `started`."""
    if pid is None or started is None or not is_alive(pid, started):
        return False
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def wait_gone(pid: int | None, started: int | None, timeout: float = 5.0) -> bool:
    """Wait until the process is gone (or a zombie); True if it went in time."""
    deadline = time.monotonic() + timeout
    while is_alive(pid, started):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def pid_namespace_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/pid").st_ino
    except OSError:
        return None


def pids_in_pid_namespace(inode: int, cgroup: Path | None = None) -> list[int]:
    """Every live process of the machine whose PID namespace is `inode` (outer PIDs), and, with `cgroup`,
    that also lives in that cgroup or below it.

    Why the cgroup too: the kernel recycles a namespace's inode number as soon as the namespace is freed,
    so a test host started a moment later by anything else on the machine can carry a torn-down host's
    inode. Its processes are never in the torn-down host's own cgroup subtree.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and pid_namespace_inode(int(entry.name)) == inode:
            fields = _stat_fields(int(entry.name))
            if fields and fields[0] != "Z" and (cgroup is None or in_cgroup(int(entry.name), cgroup)):
                found.append(int(entry.name))
    return found


def cgroup_of(pid: int, root: Path) -> Path | None:
    """The cgroup2 folder of a process (`0::/path` in /proc/PID/cgroup, under `root`), or None when gone."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    unified = next((line[3:] for line in lines if line.startswith("0::")), None)
    return None if unified is None else root / unified.lstrip("/")


def in_cgroup(pid: int, cgroup: Path) -> bool:
    """Whether the process lives in `cgroup` (a folder under the cgroup2 mount) or in a cgroup below it."""
    found = cgroup_of(pid, cgroup2_root())
    return found is not None and (found == cgroup or cgroup in found.parents)


def first_child(pid: int) -> int | None:
    """The first child of `pid` (unshare --fork has exactly one: the namespace's PID 1)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    return int(children[0]) if children else None
