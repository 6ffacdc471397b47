"""Find and remove what earlier runs left behind.

A test run killed with SIGKILL (or a crashed CI job) cannot stop its hosts. Every host's record
names the process that started it, so a later run can tell a leftover (its owner is gone) from a
host another pytest session on the same machine is using right now (its owner is alive), and only
removes the former. Orphaned cgroups and veth links that no record claims are removed too.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from tests.testbed.testhost import network, procs
from tests.testbed.testhost.layout import CGROUP_PREFIX, HostRecord, base_dir, cgroup2_root
from tests.testbed.testhost.leftovers import harness_links, mounts_mentioning
from tests.testbed.testhost.lifecycle import harness_lock, require_root
from tests.testbed.testhost.teardown import kill_cgroup, remove_cgroup, teardown_record


@dataclass(frozen=True)
class HostStatus:
    """One line of `list`: a host's name, index, who owns it and whether its PID 1 runs."""

    name: str
    index: int | None
    owner: str  # "pid 1234", "pid 1234 (gone)", "manual", "unknown"
    running: bool
    state_dir: Path


def _owner_alive(record: HostRecord) -> bool:
    return record.owner_pid is not None and procs.is_alive(record.owner_pid, record.owner_start)


def _status(state_dir: Path) -> HostStatus:
    record = HostRecord.load(state_dir)
    if record is None:
        return HostStatus(state_dir.name, None, "unknown", False, state_dir)
    if record.owner_pid is None:
        owner = "manual"
    else:
        owner = f"pid {record.owner_pid}" + ("" if _owner_alive(record) else " (gone)")
    running = procs.is_alive(record.systemd_pid, record.systemd_start)
    return HostStatus(record.name, record.index, owner, running, state_dir)


def list_hosts() -> list[HostStatus]:
    base = base_dir()
    return [_status(d) for d in sorted(base.iterdir()) if d.is_dir()] if base.is_dir() else []


def _is_stale(record: HostRecord | None, include_live: bool) -> bool:
    if include_live or record is None:
        return True
    return record.owner_pid is not None and not _owner_alive(record)


def _remove_unrecorded(state_dir: Path) -> None:
    """A state dir without a record: a crash between mkdir and the first save; nothing runs."""
    if not mounts_mentioning(state_dir):
        shutil.rmtree(state_dir, ignore_errors=True)


def _remove_orphans(claimed_names: set[str], claimed_links: set[str]) -> list[str]:
    removed = []
    for cgroup in sorted(cgroup2_root().glob(f"{CGROUP_PREFIX}*")):
        if cgroup.name.removeprefix(CGROUP_PREFIX) not in claimed_names:
            kill_cgroup(cgroup)
            remove_cgroup(cgroup)
            removed.append(f"cgroup {cgroup}")
    for link in harness_links():
        if link not in claimed_links:
            network.unplug(link)
            removed.append(f"link {link}")
    return removed


def cleanup_stale(include_live: bool = False) -> list[str]:
    """Remove leftovers of earlier runs; return what was removed (one string per item).

    Hosts whose starting process still runs (another pytest session) and hosts started by hand
    (`python -m tests.testbed.testhost up`) are kept unless `include_live=True`.
    """
    require_root()
    removed: list[str] = []
    with harness_lock():
        claimed_names, claimed_links = set(), set()
        for state_dir in sorted(d for d in base_dir().iterdir() if d.is_dir()):
            record = HostRecord.load(state_dir)
            if not _is_stale(record, include_live):
                claimed_names.add(state_dir.name)
                claimed_links.add(record.link if record else "")
                continue
            if record is None:
                _remove_unrecorded(state_dir)
            else:
                teardown_record(record, state_dir)
            removed.append(f"host {state_dir.name}")
        removed += _remove_orphans(claimed_names, claimed_links)
    return removed
