"""Who still holds the unit's GPUs after the engine stopped, and which of them are the old engine's orphans.

Parses what `specops.commands.engine_stop.INSPECT_SCRIPT` prints (nvidia-smi's memory and compute apps, the
processes in the unit's cgroup, the engine's user and the unit's invocation, and NUL-separated /proc facts of
each process) and judges every process on the unit's GPUs. An ORPHAN of the old engine (what `--reap` may stop)
must prove it on every count: it was reparented to PID 1 (its engine is gone), its cgroup is not another
service's, it runs as the engine's user, its working directory is a release of this service, and, the tie that
no other process has, its environment carries the INVOCATION_ID that systemd gave one run of this unit (the
unit's current one, or one systemd itself logged for this unit). A working directory alone proves nothing: any
local user may start a process in a release. Anything else on those GPUs is someone else's and is only named,
never stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specops.commands.engine_stop import INVOCATION_ID
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
    uids: str = ""  # real, effective, saved and filesystem uid
    invocation: str = ""  # INVOCATION_ID from its environment (32 hex digits), "" without one
    run: str = ""  # "last": the unit's current invocation; "journal": one PID 1 logged for the unit; "": neither


@dataclass(frozen=True)
class GpuSnapshot:
    has_gpus: bool  # False: no nvidia-smi on the host, nothing to judge
    used_mib: dict[int, int]  # GPU index -> MiB used
    uuids: dict[str, int]  # GPU uuid -> index
    apps: list[tuple[int, int, str]]  # (pid, MiB, gpu uuid)
    unit_pids: list[int]
    procs: dict[int, Proc] = field(default_factory=dict)
    engine_uid: str = ""  # the engine user's uid on the host ("" unknown: no process is proven the engine's)


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
    invocation: str = ""  # the unit's INVOCATION_ID it carries: the reap checks it again

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


class InspectError(ValueError):
    """The host's process listing is not in the form the inspect script writes: nothing can be judged from it."""


FIELDS = ("stat", "uid", "exe", "cwd", "cgroup", "cmdline", "invocation", "run")
RECORD = 2 + 2 * len(FIELDS)  # "@proc", pid, then key and value for each field, in this order


def parse_inspect(text: str) -> GpuSnapshot:
    """The line sections, then the NUL-separated process records (InspectError when they are malformed)."""
    head, has_procs, records = text.partition("@procs\n")
    section, used, uuids, apps, members = "", {}, {}, [], []
    engine: dict[str, str] = {}
    has_gpus = True
    for line in head.splitlines():
        if line.startswith("@"):
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
        elif section == "@engine":
            key, _, value = line.partition(" ")
            engine[key] = value.strip()
    procs = _records(records) if has_procs else {}
    uid = engine.get("uid", "")
    return GpuSnapshot(has_gpus, used, uuids, apps, members, procs, uid if uid.isdigit() else "")


def _records(text: str) -> dict[int, Proc]:
    """One Proc per `@proc` record. Every record has every field, in order; a pid listed twice is an error (a
    later record never replaces an earlier one)."""
    tokens = text.split("\0")
    if tokens[-2:] != ["@end", ""]:
        raise InspectError("the process listing does not end with @end")
    procs: dict[int, Proc] = {}
    for at in range(0, len(tokens) - 2, RECORD):
        record = tokens[at : at + RECORD]
        keys = tuple(record[2::2])
        if len(record) < RECORD or record[0] != "@proc" or not record[1].isdigit() or keys != FIELDS:
            raise InspectError(f"malformed process record {record[:2]!r}")
        pid, values = int(record[1]), dict(zip(keys, record[3::2], strict=True))
        if pid in procs:
            raise InspectError(f"pid {pid} is listed twice")
        procs[pid] = _proc(pid, values)
    return procs


def _proc(pid: int, values: dict[str, str]) -> Proc:
    """The stat line's fields come after the command name's closing paren; a process that exited while it was
    read leaves empty values (no parent, no start time: never an orphan)."""
    stat = values["stat"]
    if stat and not stat.startswith(f"{pid} ("):
        raise InspectError(f"the stat line of pid {pid} names another process")
    after = stat.rsplit(")", 1)[-1].split()
    ppid = int(after[1]) if len(after) > 1 and after[1].isdigit() else 0
    start = after[19] if len(after) > 19 and after[19].isdigit() else ""
    invocation = values["invocation"] if INVOCATION_ID.fullmatch(values["invocation"]) else ""
    return Proc(pid, ppid, start, values["exe"], values["cwd"], _v2_cgroup(values["cgroup"]),
                values["cmdline"].strip(), values["uid"].strip(), invocation, values["run"])  # fmt: skip


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
    holders = [_holder(pid, on, snapshot.procs.get(pid), unit, service_dir, snapshot.engine_uid)
               for pid, on in sorted(held.items())]  # fmt: skip
    unexplained = []
    for index in sorted(mine & set(snapshot.used_mib)):
        listed = sum(on.get(index, 0) for on in held.values())
        if snapshot.used_mib[index] - listed > BASELINE_SLACK_MIB:
            unexplained.append(f"GPU {index}: {snapshot.used_mib[index] - listed} MiB used by no listed process")
    return GpuVerdict(unit_left, holders, unexplained)


def _holder(pid: int, on: dict[int, int], proc: Proc | None, unit: str, service_dir: str, engine_uid: str) -> Holder:
    mib, gpus = sum(on.values()), tuple(sorted(on))
    if proc is None:
        return Holder(pid, "", "", mib, gpus, False, "not visible in this host's /proc: another PID namespace?")
    orphan, why = is_orphan(proc, unit, service_dir, engine_uid)
    return Holder(pid, proc.start, proc.cmdline, mib, gpus, orphan, why, proc.invocation if orphan else "")


RUNS = {"last": "its last run", "journal": "a run in the journal"}


def is_orphan(proc: Proc, unit: str, service_dir: str, engine_uid: str) -> tuple[bool, str]:
    """Whether `proc` is a leftover of the managed unit's engine, with the evidence either way. `engine_uid`:
    the uid the engine runs as on the host ("" unknown: nothing is proven)."""
    releases = service_dir.rstrip("/") + "/releases/"
    from_release = proc.cwd.startswith(releases)
    other_service = proc.cgroup.rsplit("/", 1)[-1]
    foreign_unit = other_service.endswith(".service") and not in_unit(proc.cgroup, unit)
    engine_user = bool(engine_uid) and proc.uids.split() == [engine_uid] * 4
    of_unit = bool(proc.invocation) and proc.run in RUNS
    facts = [
        "reparented to PID 1" if proc.ppid == 1 else f"parent pid {proc.ppid}",
        f"cwd {proc.cwd or '?'}" + (f" (a release of {unit})" if from_release else ""),
        f"cgroup {proc.cgroup or '?'}" + (" (another service)" if foreign_unit else ""),
        f"uid {proc.uids.split()[0] if proc.uids else '?'}" + ("" if engine_user else " (not the engine's user)"),
        f"invocation {proc.invocation} of {unit} ({RUNS[proc.run]})" if of_unit
        else f"no invocation of {unit} in its environment",
        f"exe {proc.exe or '?'}",
    ]  # fmt: skip
    orphan = proc.ppid == 1 and from_release and not foreign_unit and engine_user and of_unit
    return orphan, "; ".join(facts)


def gpu_indexes(cuda_visible_devices: str | None) -> set[int] | None:
    """The unit's GPUs from hosts.NAME.gpus ("0,1"); None (every GPU) when unset or not plain indexes."""
    if not cuda_visible_devices:
        return None
    words = [word.strip() for word in cuda_visible_devices.split(",")]
    return {int(word) for word in words} if all(word.isdigit() for word in words) else None
