"""Names and places a test host owns on the outer machine.

Everything a host leaves on the machine (state dir, cgroup, veth link, subnet) is derived from its
name and index here, in one place, so that start, stop, the leftover check and the stale cleanup can
never disagree about what belongs to a host.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,19}$")
MAX_INDEX = 254
CGROUP_PREFIX = "specops-testhost-"
LINK_PREFIX = "stho"  # outer veth end: stho<INDEX>; short enough for IFNAMSIZ (15)
INNER_LINK_PREFIX = "sthi"  # inner end until it is renamed to eth0 inside the host
RECORD_FILE = "host.json"


def base_dir() -> Path:
    """The folder holding one state dir per host (env SPECOPS_TESTHOST_DIR overrides).

    The default lives under /tmp on purpose: each host mounts a tmpfs on its own /tmp, so no host
    can see (or loop into) its own upper layer or another host's.
    """
    return Path(os.environ.get("SPECOPS_TESTHOST_DIR", "/tmp/specops-testhosts"))


def check_name_and_index(name: str, index: int) -> None:
    """Reject names that cannot be a hostname/cgroup name and indexes outside 10.200.1-254."""
    if not NAME_PATTERN.match(name):
        raise ValueError(f"test host name {name!r} must match {NAME_PATTERN.pattern}")
    if not 1 <= index <= MAX_INDEX:
        raise ValueError(f"test host index {index} must be between 1 and {MAX_INDEX}")


def inner_ip(index: int) -> str:
    return f"10.200.{index}.2"


def outer_ip(index: int) -> str:
    return f"10.200.{index}.1"


def outer_link(index: int) -> str:
    return f"{LINK_PREFIX}{index}"


def inner_link(index: int) -> str:
    return f"{INNER_LINK_PREFIX}{index}"


def cgroup2_root() -> Path:
    """Where the cgroup2 hierarchy is mounted on this machine.

    Found from mountinfo, not hard-coded: a cgroup-hybrid VM has it at /sys/fs/cgroup/unified,
    a pure-v2 machine at /sys/fs/cgroup.
    """
    candidates: list[Path] = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] == "cgroup2":
            candidates.append(Path(left.split(" ")[4]))
    if not candidates:
        raise RuntimeError("no cgroup2 hierarchy is mounted; test hosts need one")
    return min(candidates, key=lambda p: len(p.parts))


def cgroup_dir(name: str) -> Path:
    return cgroup2_root() / f"{CGROUP_PREFIX}{name}"


@dataclass
class HostRecord:
    """What stop and cleanup need to find a host again, saved as STATE/host.json.

    Written before anything is started, and completed step by step, so a crash at any point
    leaves enough behind for `cleanup_stale` to undo what was done.
    """

    name: str
    index: int
    owner_pid: int | None  # the process that started it; None = started by hand (CLI `up`)
    owner_start: int | None
    cgroup: str
    link: str
    # names are reused (th1, th2...): stopping an old TestHost must never stop a newer host that
    # got the same name, so every start gets its own id, kept in the record and in the TestHost
    incarnation: str = ""
    launcher_pid: int | None = None
    launcher_start: int | None = None
    systemd_pid: int | None = None
    systemd_start: int | None = None
    pidns_inode: int | None = None
    lower: str = "/"  # the overlay's lower layer: a reboot mounts the same one again

    def save(self, state_dir: Path) -> None:
        tmp = state_dir / f".{RECORD_FILE}.tmp"
        tmp.write_text(json.dumps(asdict(self), indent=1))
        tmp.replace(state_dir / RECORD_FILE)

    @classmethod
    def load(cls, state_dir: Path) -> HostRecord | None:
        try:
            return cls(**json.loads((state_dir / RECORD_FILE).read_text()))
        except (OSError, ValueError, TypeError):
            return None
