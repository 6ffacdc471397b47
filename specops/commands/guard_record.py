"""The typed reader of the rollback guard's two records on a host: its state while armed (`.specops-guard.json`,
GUARD_STATE_SCHEMA) and its watch after "verified" (`.specops-watch.json`, which the host's release listing
hands on with `left_s` by the host's clock, after checking WATCH_SCHEMA itself). Pure.

Both say the same kind of thing (which release, where it would roll back to, what it did and why), so one
record type serves both; `record` keeps every key as written, for `status --json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from specops.commands.hostdata import GUARD_STATE_SCHEMA, check_schema, json_object, text


@dataclass(frozen=True)
class GuardRecord:
    """`state`: armed, rolled-back, no-rollback (the guard); watching, passed, rolled-back, rollback-failed,
    no-rollback, cut-short (the watch)."""

    state: str | None = None
    release: str | None = None
    rollback_to: str | None = None
    rolled_back_to: str | None = None
    reason: str | None = None
    left_s: int | None = None  # the watch only: seconds left by the host's clock
    record: Mapping[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return dict(self.record)


def _record(value: Mapping[str, object]) -> GuardRecord:
    left = value.get("left_s")
    return GuardRecord(
        state=text(value, "state"),
        release=text(value, "release"),
        rollback_to=text(value, "rollback_to"),
        rolled_back_to=text(value, "rolled_back_to"),
        reason=text(value, "reason"),
        left_s=left if isinstance(left, int) and not isinstance(left, bool) else None,
        record=value,
    )


def parse_guard_state(value: object, path: str, host: str) -> GuardRecord:
    """`.specops-guard.json`: ValueError when malformed, HostDataTooNew when a newer specops wrote it."""
    record = json_object(value, path)
    check_schema(host, record, path, GUARD_STATE_SCHEMA)
    return _record(record)


def parse_watch(value: object) -> GuardRecord | None:
    """The listing's `watch` (the host script has checked its version); None when there is none."""
    return _record(value) if isinstance(value, dict) else None
