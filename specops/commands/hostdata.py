"""The client's half of versioned host data: a file read from a host (a manifest, holder.json, an audit line)
is checked against the version this specops reads before any of its fields is used; a newer one becomes the
HostDataTooNew error (exit 5) that tells the operator to upgrade. The versions, the check and the release-id
rule are shared with the host-side script (specops/remote/release/hostdata.py), so both ends judge a file, and
an id, the same way. Pure: the typed readers (manifest.py, audit_line.py, guard_record.py, and holder.json's
LockHolder.from_json in specops/ops/lock_holder.py) start here; the one read of a file from a host is
specops/ops/hostfiles.py.
"""

from __future__ import annotations

from collections.abc import Mapping

from specops.errors import UPGRADE_HINT, HostDataTooNew
from specops.remote.release.hostdata import (
    AUDIT_SCHEMA,
    EVENT_SCHEMA,
    GUARD_SCHEMA,
    GUARD_STATE_SCHEMA,
    HOLDER_SCHEMA,
    MANIFEST_SCHEMA,
    NOTIFY_FILE,
    SCHEMA_KEY,
    Refused,
    SchemaTooNew,
    checked_release_id,
    checked_schema,
)

# The rest of the client reads the versions here: one door from the client into the host script's module.
__all__ = [
    "AUDIT_SCHEMA",
    "EVENT_SCHEMA",
    "GUARD_SCHEMA",
    "GUARD_STATE_SCHEMA",
    "HOLDER_SCHEMA",
    "MANIFEST_SCHEMA",
    "NOTIFY_FILE",
    "SCHEMA_KEY",
    "check_release_id",
    "check_schema",
    "json_object",
    "text",
    "too_new",
]


def check_schema(host: str, record: object, path: str, newest: int) -> int:
    """The record's version (0: written before versions) if this specops reads it; else HostDataTooNew naming
    the host and the file. A `schema` that is not a number is a ValueError: the caller treats the file as
    unreadable, as it would a file that is not JSON."""
    try:
        return checked_schema(record, path, newest)
    except SchemaTooNew as error:
        raise too_new(host, str(error)) from None


def too_new(host: str, message: str) -> HostDataTooNew:
    return HostDataTooNew(f"{host}: {message}", hint=UPGRADE_HINT)


def check_release_id(release_id: str) -> str:
    """`release_id` if it is one (the host script's own rule: it becomes a path there); else ValueError
    "not a release id: '...'", the words the host side refuses it with."""
    try:
        return checked_release_id(release_id)
    except Refused as error:
        raise ValueError(str(error)) from None


def json_object(value: object, path: str) -> Mapping[str, object]:
    """`value` when it is a JSON object; else ValueError naming `path` (a document that is not one is malformed,
    whatever its version)."""
    if not isinstance(value, dict):
        raise ValueError(f"{path}: not a JSON object")
    return value


def text(record: Mapping[str, object], key: str) -> str | None:
    """A string field, None when absent or of another type (a field written wrong is treated as absent)."""
    value = record.get(key)
    return value if isinstance(value, str) else None


def part(record: Mapping[str, object], key: str) -> Mapping[str, object]:
    """A nested object field, empty when absent or not an object."""
    value = record.get(key)
    return value if isinstance(value, dict) else {}


def number(record: Mapping[str, object], key: str) -> float | None:
    """A numeric field (never a bool), None otherwise."""
    value = record.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
