"""Who holds a host's deploy lock: the record written to `<lock root>/holder.json`, and how it reads back.

holder.json is host data like a manifest: it carries `"schema": HOLDER_SCHEMA`, and a holder written by a newer
specops is refused (HostDataTooNew, exit 5) instead of being half-read; one without a version (written before
versions existed) has the same fields and is read as it is. `machine_id` and `process_start` were added
later without a new version: they are optional (an older specops ignores them, a holder without them is read
with ""), and only make a dead holder provable (`dead_here`). Its JSON shape is also what the host-side lock
script greps for the token (specops/commands/lock.py), so `to_json` keeps json.dumps' default separators.
"""

from __future__ import annotations

import getpass
import json
import os
import secrets
import shlex
import socket
import sys
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from specops import __version__
from specops.commands.hostdata import HOLDER_SCHEMA, SCHEMA_KEY, check_schema, json_object


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class LockHolder:
    """Who holds a lock, as written to holder.json; `token` is the secret-free proof of ownership."""

    user: str
    machine: str
    pid: int
    command: str
    started_at: str
    heartbeat_at: str
    version: str
    token: str = field(repr=False)
    machine_id: str = ""  # /etc/machine-id: a host name alone can be shared by two laptops
    process_start: str = ""  # boot id and start time of `pid`: a reused pid is another process

    @classmethod
    def current(cls, command: str | None = None) -> LockHolder:
        """This process: user@machine, pid, the command line (default: sys.argv), a fresh random token."""
        now = utc_now()
        line = command if command is not None else shlex.join(["specops", *sys.argv[1:]])
        return cls(
            user=_user(), machine=socket.gethostname(), pid=os.getpid(), command=line, started_at=now,
            heartbeat_at=now, version=__version__, token=secrets.token_hex(16), machine_id=machine_id(),
            process_start=process_start(os.getpid()),
        )  # fmt: skip

    @property
    def who(self) -> str:
        return f"{self.user}@{self.machine}"

    def to_json(self) -> bytes:
        return (json.dumps({SCHEMA_KEY: HOLDER_SCHEMA, **asdict(self)}, sort_keys=True) + "\n").encode()

    @classmethod
    def from_json(cls, text: str, host: str = "", path: str = "holder.json") -> LockHolder | None:
        """The one reader of holder.json (pure): a holder, or None when it is missing or unreadable (the lock
        still counts): not a JSON object, a required field absent, or a field of another type (a `pid` that is
        not a number must not reach a `kill -0`). HostDataTooNew when a newer specops wrote it (`host` and `path`
        name it in the error)."""
        try:
            data = json_object(json.loads(text), path)
            check_schema(host, data, path, HOLDER_SCHEMA)
        except ValueError:
            return None
        pid = data.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool):
            return None

        def field_text(name: str, optional: bool = False) -> str:
            value = data.get(name, "" if optional else None)  # optional: added later, absent in older holders
            if not isinstance(value, str):
                raise ValueError(f"{path}: {name} is not a string")
            return value

        try:
            return cls(
                user=field_text("user"), machine=field_text("machine"), pid=pid, command=field_text("command"),
                started_at=field_text("started_at"), heartbeat_at=field_text("heartbeat_at"),
                version=field_text("version"), token=field_text("token"),
                machine_id=field_text("machine_id", True), process_start=field_text("process_start", True),
            )  # fmt: skip
        except ValueError:
            return None


@dataclass(frozen=True)
class LockInfo:
    """A lock as seen from outside: its holder (None if unreadable) and ages measured on the host's clock."""

    host: str
    holder: LockHolder | None
    heartbeat_age_s: int | None
    stale_after_s: float

    @property
    def stale(self) -> bool:
        return self.heartbeat_age_s is not None and self.heartbeat_age_s > self.stale_after_s

    @property
    def holder_dead(self) -> str:
        """Why the holder provably no longer runs (a process on THIS machine that is gone), or "": then the next
        deploy takes the lock over at once, whatever the heartbeat says."""
        return dead_here(self.holder, need_machine_id=False) if self.holder is not None else ""

    @property
    def age_s(self) -> float | None:
        """Seconds since the lock was taken (holder's clock vs ours: for people, not for decisions)."""
        if self.holder is None:
            return None
        try:
            started = datetime.strptime(self.holder.started_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except ValueError:
            return None
        return max(0.0, (datetime.now(UTC) - started).total_seconds())

    def describe(self) -> str:
        """One line naming the holder: `root@laptop pid 42 (`specops deploy ...`) since ..., heartbeat 3s ago`."""
        beat = "never" if self.heartbeat_age_s is None else f"{self.heartbeat_age_s}s ago"
        if self.holder is None:
            return f"an unknown holder (holder.json missing or unreadable), last sign of life {beat}"
        holder = self.holder
        return f"{holder.who} pid {holder.pid} (`{holder.command}`) since {holder.started_at}, last heartbeat {beat}"

    def to_json(self) -> dict[str, object]:
        holder = asdict(self.holder) if self.holder else None
        if holder:
            holder.pop("token")
        return {"host": self.host, "holder": holder, "age_s": self.age_s, "heartbeat_age_s": self.heartbeat_age_s,
                "stale_after_s": self.stale_after_s, "stale": self.stale,
                "holder_dead": self.holder_dead or None}  # fmt: skip


def local_who() -> str:
    """`user@machine` of this process: how locks and audit entries name the operator."""
    return f"{_user()}@{socket.gethostname()}"


def machine_id() -> str:
    """This machine's systemd/D-Bus machine id, or "" where there is none (then no holder is provably ours)."""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            return Path(path).read_text(encoding="ascii").strip()
        except (OSError, ValueError):
            continue
    return ""


def process_start(pid: int) -> str:
    """`BOOT_ID:START_TICKS` of a process (Linux /proc), or "" when unknown: equal only for the same process."""
    stat = _proc_stat(pid)
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return ""
    return f"{boot}:{stat[19]}" if len(stat) > 19 else ""  # field 22: starttime


def _proc_stat(pid: int) -> list[str]:
    """/proc/PID/stat from field 3 (state) on; [] when unknown. The name (field 2) may hold spaces and ")"."""
    try:
        return Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[-1].split()
    except (OSError, ValueError):
        return []


def dead_here(holder: LockHolder, *, need_machine_id: bool = True) -> str:
    """Why `holder` provably no longer runs (its process on THIS machine is gone or is another one), or "".

    Proof needs the same machine (host name, and machine id when the holder recorded one; `need_machine_id`:
    a holder without one is never proven dead) and a pid that is gone or started at another time. A holder
    on another machine is never judged here: its heartbeat decides."""
    if holder.machine != socket.gethostname() or holder.pid <= 0:
        return ""
    if (holder.machine_id or need_machine_id) and holder.machine_id != machine_id():
        return ""
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return f"process {holder.pid} no longer runs on this machine"
    except PermissionError:
        pass  # it exists, under another user: its start time still tells whether it is the holder
    if _proc_stat(holder.pid)[:1] == ["Z"]:
        return f"process {holder.pid} has exited on this machine (not yet reaped)"
    now = process_start(holder.pid)
    if holder.process_start and now and now != holder.process_start:
        return f"process {holder.pid} on this machine is another program now (started after the lock was taken)"
    return ""


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())
