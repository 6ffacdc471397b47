"""What a host can leave behind on the machine, and how to see it.

One function lists the leftovers of one host (processes, mounts, veth link, cgroup, state dir);
`stop_host` raises when the list is not empty, and tests call `assert_no_leftovers()` at the end.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tests.testbed.testhost import procs
from tests.testbed.testhost.layout import (
    CGROUP_PREFIX,
    LINK_PREFIX,
    HostRecord,
    base_dir,
    cgroup2_root,
)
from tests.testbed.testhost.network import link_exists


class LeftoverError(AssertionError):
    """A stopped host left something on the machine (the message lists what)."""


def mounts_mentioning(path: Path) -> list[str]:
    """'PID: mountinfo line' for every mount, in any mount namespace, whose line names `path`."""
    needle = f"{path}/"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            lines = (entry / "mountinfo").read_text().splitlines()
        except OSError:
            continue
        found += [f"{entry.name}: {line}" for line in lines if needle in f"{line}/"]
    return found


def _reused_by_newer_host(record: HostRecord, state_dir: Path) -> tuple[bool, bool, bool]:
    """(name, index, PID namespace inode) reused: what a newer host owns now is not a leftover.

    Names and indexes are recycled quickly (th1, th2...), also by other pytest sessions, and the
    kernel recycles namespace inode numbers as soon as a namespace is freed.
    """
    current = HostRecord.load(state_dir)
    name_reused = current is not None and current.incarnation != record.incarnation
    index_reused = ns_reused = False
    if base_dir().is_dir():
        for other_dir in base_dir().iterdir():
            other = HostRecord.load(other_dir) if other_dir.is_dir() else None
            if other is None or other.incarnation == record.incarnation:
                continue
            index_reused = index_reused or other.index == record.index
            ns_reused = ns_reused or other.pidns_inode == record.pidns_inode
    return name_reused, index_reused, ns_reused


def host_leftovers(record: HostRecord, state_dir: Path) -> list[str]:
    """Human-readable leftovers of one host; empty when it is completely gone."""
    found = []
    if procs.is_alive(record.systemd_pid, record.systemd_start):
        found.append(f"process: PID 1 of {record.name} (outer PID {record.systemd_pid}) is alive")
    name_reused, index_reused, ns_reused = _reused_by_newer_host(record, state_dir)
    if record.pidns_inode is not None and not ns_reused:
        pids = procs.pids_in_pid_namespace(record.pidns_inode, Path(record.cgroup))
        if pids:
            found.append(f"process: {len(pids)} processes left in {record.name}'s PID namespace: {pids}")
    if not name_reused:
        mounts = mounts_mentioning(state_dir)
        if mounts:
            found.append(f"mount: {len(mounts)} mounts mention {state_dir}, first: {mounts[0]}")
        if Path(record.cgroup).exists():
            found.append(f"cgroup: {record.cgroup} still exists")
        if state_dir.exists():
            found.append(f"state dir: {state_dir} still exists")
    if not index_reused and link_exists(record.link):
        found.append(f"link: {record.link} still exists")
    return found


def harness_leftovers() -> list[str]:
    """Everything this harness owns on the machine right now, live hosts included."""
    found = []
    base = base_dir()
    if base.is_dir():
        found += [f"state dir: {d}" for d in sorted(base.iterdir()) if d.is_dir()]
        mounts = mounts_mentioning(base)
        if mounts:
            found.append(f"mount: {len(mounts)} mounts mention {base}, first: {mounts[0]}")
    found += [f"cgroup: {c}" for c in sorted(cgroup2_root().glob(f"{CGROUP_PREFIX}*"))]
    found += [f"link: {name}" for name in harness_links()]
    return found


def harness_links() -> list[str]:
    """Outer veth ends named like ours (stho<N>)."""
    links = []
    for net in Path("/sys/class/net").iterdir():
        suffix = net.name.removeprefix(LINK_PREFIX)
        if suffix != net.name and suffix.isdigit():
            links.append(net.name)
    return sorted(links)


def assert_no_leftovers(records: Iterable[tuple[HostRecord, Path]] | None = None, everything: bool = False) -> None:
    """Raise LeftoverError if any host started by this process (or `records`) left anything behind.

    `everything=True` also demands that the harness owns nothing at all on the machine (no state
    dir, cgroup or link of any host): right for CI, wrong where other sessions run hosts at once.
    """
    from tests.testbed.testhost.teardown import started_records  # late: teardown imports us

    found = []
    for record, state_dir in records if records is not None else started_records():
        found += host_leftovers(record, state_dir)
    if everything:
        found += harness_leftovers()
    if found:
        raise LeftoverError("test hosts left things behind:\n  " + "\n  ".join(found))
