"""Who holds a host's deploy lock: the record written to `<lock root>/holder.json`, and how it reads back.

holder.json is host data like a manifest: it carries `"schema": HOLDER_SCHEMA`, and a holder written by a newer
specops is refused (HostDataTooNew, exit 5) instead of being half-read; one without a version (written before
versions existed) has the same fields and is read as it is. Its JSON shape is also what the host-side lock
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

from specops import __version__
from specops.ops.hostdata import HOLDER_SCHEMA, SCHEMA_KEY, check_schema


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

    @classmethod
    def current(cls, command: str | None = None) -> LockHolder:
        """This process: user@machine, pid, the command line (default: sys.argv), a fresh random token."""
        now = utc_now()
        line = command if command is not None else shlex.join(["specops", *sys.argv[1:]])
        return cls(
            user=_user(), machine=socket.gethostname(), pid=os.getpid(), command=line, started_at=now,
            heartbeat_at=now, version=__version__, token=secrets.token_hex(16),
        )  # fmt: skip

    @property
    def who(self) -> str:
        return f"{self.user}@{self.machine}"

    def to_json(self) -> bytes:
        return (json.dumps({SCHEMA_KEY: HOLDER_SCHEMA, **asdict(self)}, sort_keys=True) + "\n").encode()

    @classmethod
    def from_json(cls, text: str, host: str = "", path: str = "holder.json") -> LockHolder | None:
        """A holder from holder.json, or None when it is missing or unreadable (the lock still counts).
        HostDataTooNew when a newer specops wrote it (`host` and `path` name it in the error)."""
        try:
            data = json.loads(text)
            check_schema(host, data, path, HOLDER_SCHEMA)
            return cls(**{name: data[name] for name in cls.__dataclass_fields__})
        except (ValueError, TypeError, KeyError):
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
                "stale_after_s": self.stale_after_s, "stale": self.stale}  # fmt: skip


def local_who() -> str:
    """`user@machine` of this process: how locks and audit entries name the operator."""
    return f"{_user()}@{socket.gethostname()}"


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())
