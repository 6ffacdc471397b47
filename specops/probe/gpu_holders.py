"""Who still holds the unit's GPUs after the engine stopped, and which of them are the old engine's orphans.

Parses what `specops.commands.engine_stop.INSPECT_SCRIPT` prints (nvidia-smi's memory and compute apps, the
processes in the unit's cgroup, and /proc facts of each) and judges every process on the unit's GPUs. An
ORPHAN of the old engine (what `--reap` may stop) must prove it on three counts: it was reparented to PID 1
(its engine is gone), its working directory is a release of this service (systemd started it there, under
`<base_dir>/<service>/releases/`), and its cgroup is not another service's. Anything else on those GPUs is
someone else's and is only named, never stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specops.config.redact import mask_secrets

BASELINE_SLACK_MIB = 1024  # memory a GPU reports used with no process listed (driver, a kill being cleaned up)


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    start: str  # clock ticks since boot: tells this process from a later one with the same pid
    exe: str
    cwd: str
    cgroup: str
    cmdline: str


@dataclass(frozen=True)
class GpuSnapshot:
    has_gpus: bool  # False: no nvidia-smi on the host, nothing to judge
    used_mib: dict[int, int]  # GPU index -> MiB used
    uuids: dict[str, int]  # GPU uuid -> index
    apps: list[tuple[int, int, str]]  # (pid, MiB, gpu uuid)
    unit_pids: list[int]
    procs: dict[int, Proc] = field(default_factory=dict)


@dataclass(frozen=True)
class Holder:
    """A process holding memory on one of the unit's GPUs. `command` is its /proc cmdline as read (the engine's
    holds the expanded --api-key): every text made from it for output masks it (config.redact)."""

    pid: int
    start: str
    command: str
    mib: int
    gpus: tuple[int, ...]
    orphan: bool
    why: str  # the evidence, in words

    def describe(self) -> str:
        kind = "orphan of the old engine" if self.orphan else "not the unit's"
        on, command = ",".join(str(gpu) for gpu in self.gpus), mask_secrets(self.command)
        return f"pid {self.pid} ({command or '?'}) holds {self.mib} MiB on GPU {on}: {kind} ({self.why})"

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "command": mask_secrets(self.command), "mib": self.mib, "gpus": list(self.gpus),
                "orphan": self.orphan, "why": self.why}  # fmt: skip


@dataclass(frozen=True)
class GpuVerdict:
    unit_left: list[Proc]  # processes still in the unit's cgroup
    holders: list[Holder]
    unexplained: list[str]  # GPUs whose memory is above baseline with no process to show for it

    @property
    def free(self) -> bool:
        return not self.unit_left and not self.holders and not self.unexplained


def parse_inspect(text: str) -> GpuSnapshot:
    section, used, uuids, apps, members = "", {}, {}, [], []
    procs: dict[int, Proc] = {}
    current: dict[str, str] = {}
    has_gpus = True
    for line in text.splitlines():
        if line.startswith("@"):
            _close(current, procs)
            current = {"pid": line.split()[1]} if line.startswith("@proc ") else {}
            section = line.split()[0]
            has_gpus = has_gpus and section != "@nogpu"
            continue
        words = [word.strip() for word in line.split(",")]
        if section == "@gpus" and len(words) >= 3 and words[0].isdigit() and words[2].isdigit():
            used[int(words[0])], uuids[words[1]] = int(words[2]), int(words[0])
        elif section == "@apps" and len(words) >= 3 and words[0].isdigit() and words[1].isdigit():
            apps.append((int(words[0]), int(words[1]), words[2]))
        elif section == "@unit" and line.strip().isdigit():
            members.append(int(line.strip()))
        elif section == "@proc":
            key, _, value = line.partition(" ")
            current[key] = value.strip()
    _close(current, procs)
    return GpuSnapshot(has_gpus, used, uuids, apps, members, procs)


def _close(current: dict[str, str], procs: dict[int, Proc]) -> None:
    """One @proc block into a Proc; the stat line's fields come after the command name's closing paren."""
    if "pid" not in current or not current["pid"].isdigit():
        return
    after = current.get("stat", "").rsplit(")", 1)[-1].split()
    ppid = int(after[1]) if len(after) > 1 and after[1].isdigit() else 0
    start = after[19] if len(after) > 19 else ""
    pid = int(current["pid"])
    procs[pid] = Proc(pid, ppid, start, current.get("exe", ""), current.get("cwd", ""),
                      _v2_cgroup(current.get("cgroup", "")), current.get("cmdline", "").strip())  # fmt: skip


def _v2_cgroup(lines: str) -> str:
    """The unified hierarchy's path (`0::/system.slice/x.service`), else systemd's named one."""
    entries = [entry.split(":", 2) for entry in lines.split(";") if entry.count(":") >= 2]
    for wanted in ("", "name=systemd"):
        for _, controllers, path in entries:
            if controllers == wanted:
                return path
    return ""


def in_unit(cgroup: str, unit: str) -> bool:
    return cgroup.endswith("/" + unit) or f"/{unit}/" in cgroup


def judge(snapshot: GpuSnapshot, unit: str, service_dir: str, gpus: set[int] | None) -> GpuVerdict:
    """`gpus`: the unit's (CUDA_VISIBLE_DEVICES); None: every GPU of the host."""
    mine = set(snapshot.used_mib) if gpus is None else gpus
    unit_left = [snapshot.procs[pid] for pid in snapshot.unit_pids if pid in snapshot.procs]
    held: dict[int, dict[int, int]] = {}
    for pid, mib, uuid in snapshot.apps:
        index = snapshot.uuids.get(uuid)
        if index is not None and index in mine:
            held.setdefault(pid, {})[index] = held.get(pid, {}).get(index, 0) + mib
    holders = [_holder(pid, on, snapshot.procs.get(pid), unit, service_dir) for pid, on in sorted(held.items())]
    unexplained = []
    for index in sorted(mine & set(snapshot.used_mib)):
        listed = sum(on.get(index, 0) for on in held.values())
        if snapshot.used_mib[index] - listed > BASELINE_SLACK_MIB:
            unexplained.append(f"GPU {index}: {snapshot.used_mib[index] - listed} MiB used by no listed process")
    return GpuVerdict(unit_left, holders, unexplained)


def _holder(pid: int, on: dict[int, int], proc: Proc | None, unit: str, service_dir: str) -> Holder:
    mib, gpus = sum(on.values()), tuple(sorted(on))
    if proc is None:
        return Holder(pid, "", "", mib, gpus, False, "not visible in this host's /proc: another PID namespace?")
    orphan, why = is_orphan(proc, unit, service_dir)
    return Holder(pid, proc.start, proc.cmdline, mib, gpus, orphan, why)


def is_orphan(proc: Proc, unit: str, service_dir: str) -> tuple[bool, str]:
    """Whether `proc` is a leftover of the managed unit's engine, with the evidence either way."""
    releases = service_dir.rstrip("/") + "/releases/"
    from_release = proc.cwd.startswith(releases)
    other_service = proc.cgroup.rsplit("/", 1)[-1]
    foreign_unit = other_service.endswith(".service") and not in_unit(proc.cgroup, unit)
    facts = [
        "reparented to PID 1" if proc.ppid == 1 else f"parent pid {proc.ppid}",
        f"cwd {proc.cwd or '?'}" + (f" (a release of {unit})" if from_release else ""),
        f"cgroup {proc.cgroup or '?'}" + (" (another service)" if foreign_unit else ""),
        f"exe {proc.exe or '?'}",
    ]
    return proc.ppid == 1 and from_release and not foreign_unit, "; ".join(facts)


def gpu_indexes(cuda_visible_devices: str | None) -> set[int] | None:
    """The unit's GPUs from hosts.NAME.gpus ("0,1"); None (every GPU) when unset or not plain indexes."""
    if not cuda_visible_devices:
        return None
    words = [word.strip() for word in cuda_visible_devices.split(",")]
    return {int(word) for word in words} if all(word.isdigit() for word in words) else None
