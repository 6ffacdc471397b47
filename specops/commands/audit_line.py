"""The typed reader of one audit-log line (the host's `<service_dir>/audit.jsonl`, and the local copy that adds
`host`). Pure: specops/ops/audit.py reads the lines, `specops audit` shows them, completion replays the local log.

Versions (AUDIT_SCHEMA): 0 (lines written before versions) and 1 have the same fields. A line from a newer
specops is HostDataTooNew: its fields may not mean what this one would show. A line that is not a JSON object is
kept as `unreadable` (the log is shown whole, a torn or hand-edited line included), never dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from specops.commands.hostdata import AUDIT_SCHEMA, check_schema, part, text

UNREADABLE_CHARS = 500


@dataclass(frozen=True)
class AuditLine:
    """One entry. `record` is the line as written (every key, for --json and for keys only some actions write);
    `unreadable` holds the start of a line that is not a JSON object of a known schema."""

    schema: int = 0
    when: str | None = None
    who: str | None = None
    action: str | None = None
    from_release: str | None = None
    to_release: str | None = None
    outcome: str | None = None
    message: str = ""
    forced: bool = False
    host: str | None = None  # only in the local copy: which host the line is about
    rollback_to: str | None = None  # a deploy rolled back: where it went (`rollback.to`)
    record: Mapping[str, object] = field(default_factory=dict)
    unreadable: str | None = None

    def to_json(self) -> dict[str, object]:
        """The line as written; {"unreadable": ...} for one that is not."""
        return {"unreadable": self.unreadable} if self.unreadable is not None else dict(self.record)


def parse_audit_line(line: str, path: str, host: str) -> AuditLine:
    """One line of the log; HostDataTooNew (naming `host` and `path`) when a newer specops wrote it."""
    try:
        value = json.loads(line)
        if not isinstance(value, dict):
            raise ValueError("not a JSON object")
        schema = check_schema(host, value, path, AUDIT_SCHEMA)
    except ValueError:
        return AuditLine(unreadable=line[:UNREADABLE_CHARS])
    return AuditLine(
        schema=schema,
        when=text(value, "when"),
        who=text(value, "who"),
        action=text(value, "action"),
        from_release=text(value, "from") or None,
        to_release=text(value, "to") or None,
        outcome=text(value, "outcome"),
        message=text(value, "message") or "",
        forced=value.get("forced") is True,
        host=text(value, "host"),
        rollback_to=text(part(value, "rollback"), "to") or None,
        record=value,
    )
