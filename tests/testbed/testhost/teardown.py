"""Undo a host, from whatever step its start reached, and remember which hosts we started.

Stopping relies on the kernel: SIGKILL to the host's PID 1 (guarded against PID reuse) kills its
whole PID namespace, and the mount and net namespaces (overlay, tmpfs, veth) die with their last
process. What is left to do by hand is small: reap the launcher, kill anything that escaped into
the host's cgroup, delete the veth end if it survived, remove the cgroup subtree and the state dir.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from tests.testbed.testhost import network, procs
from tests.testbed.testhost.layout import HostRecord
from tests.testbed.testhost.leftovers import LeftoverError, host_leftovers, mounts_mentioning

_registry_lock = threading.Lock()
_launchers: dict[str, subprocess.Popen[bytes]] = {}  # state dir -> launcher we must reap
_started: list[tuple[HostRecord, Path]] = []


def started_records() -> list[tuple[HostRecord, Path]]:
    """Every host this process started (for the final leftover check)."""
    with _registry_lock:
        return list(_started)


def remember_start(record: HostRecord, state_dir: Path, launcher: subprocess.Popen[bytes]) -> None:
    """Note a host this process launched: its launcher must be reaped, and it must be checked."""
    remember_launcher(state_dir, launcher)
    with _registry_lock:
        _started.append((record, state_dir))


def remember_launcher(state_dir: Path, launcher: subprocess.Popen[bytes]) -> None:
    """The launcher of the host's current boot: the one to reap (a reboot replaces it)."""
    with _registry_lock:
        _launchers[str(state_dir)] = launcher


def kill_cgroup(cgroup: Path) -> None:
    """Fallback when something outlived PID 1: SIGKILL the whole subtree (kernel >= 5.14)."""
    if not cgroup.is_dir():
        return
    busy = any(p.read_text().strip() for p in cgroup.rglob("cgroup.procs"))
    if busy and (cgroup / "cgroup.kill").exists():
        (cgroup / "cgroup.kill").write_text("1")
    elif busy:
        for procs_file in cgroup.rglob("cgroup.procs"):
            for pid in procs_file.read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)


def remove_cgroup(cgroup: Path, timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while cgroup.exists() and time.monotonic() < deadline:
        for sub in sorted((p for p in cgroup.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                sub.rmdir()
        with contextlib.suppress(OSError):
            cgroup.rmdir()
        if cgroup.exists():
            time.sleep(0.05)


def reap_launcher(record: HostRecord, state_dir: Path) -> None:
    with _registry_lock:
        launcher = _launchers.pop(str(state_dir), None)
    if launcher is not None:
        try:
            launcher.wait(timeout=5)
        except subprocess.TimeoutExpired:
            launcher.kill()
            launcher.wait(timeout=5)
    elif record.launcher_start is not None:  # started by another process: only wait for it to go
        procs.wait_gone(record.launcher_pid, record.launcher_start, 5)


def teardown_record(
    record: HostRecord, state_dir: Path, lock: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext
) -> None:
    """Undo everything start did, from whatever step it reached; then check nothing is left.

    `lock`: the harness lock, for a caller that does not hold it already. The last steps (the state dir's
    removal and the check) run under it: the moment the folder is gone, another session may reserve the same
    name and index, and a check made while it does so would take the newcomer's folder or cgroup for ours.
    """
    procs.kill_if_same(record.systemd_pid, record.systemd_start)
    procs.wait_gone(record.systemd_pid, record.systemd_start)
    reap_launcher(record, state_dir)
    kill_cgroup(Path(record.cgroup))
    network.unplug(record.link)
    with lock():
        remove_cgroup(Path(record.cgroup))
        if state_dir.exists() and _same_incarnation(record, state_dir):
            if mounts_mentioning(state_dir):  # never delete through a live overlay
                raise LeftoverError(f"{state_dir} is still mounted somewhere; not removing it")
            shutil.rmtree(state_dir)
        found = host_leftovers(record, state_dir)
    if found:
        raise LeftoverError(f"test host {record.name} left things behind:\n  " + "\n  ".join(found))


def _same_incarnation(record: HostRecord, state_dir: Path) -> bool:
    """The folder is still this host's (or a record-less leftover of it), not a newer host's of the same name."""
    current = HostRecord.load(state_dir)
    return current is None or current.incarnation == record.incarnation
