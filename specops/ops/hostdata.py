"""The client's half of versioned host data: a file read from a host (a manifest, holder.json, an audit line)
is checked against the version this specops reads before any of its fields is used; a newer one becomes the
HostDataTooNew error (exit 5) that tells the operator to upgrade. The versions and the check itself are shared
with the host-side script (specops/remote/release/hostdata.py), so both ends judge a file the same way.
"""

from __future__ import annotations

import json
from typing import Any

from specops.errors import UPGRADE_HINT, HostDataTooNew
from specops.host.base import Host
from specops.remote.release.hostdata import (
    AUDIT_SCHEMA,
    GUARD_SCHEMA,
    GUARD_STATE_SCHEMA,
    HOLDER_SCHEMA,
    MANIFEST_SCHEMA,
    SCHEMA_KEY,
    SchemaTooNew,
    checked_schema,
)

# The rest of the client reads the versions here: one door from the client into the host script's module.
__all__ = [
    "AUDIT_SCHEMA",
    "GUARD_SCHEMA",
    "GUARD_STATE_SCHEMA",
    "HOLDER_SCHEMA",
    "MANIFEST_SCHEMA",
    "SCHEMA_KEY",
    "check_schema",
    "read_record",
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


def read_record(host: Host, path: str, newest: int, timeout: float) -> dict[str, Any] | None:
    """A JSON object kept on the host (a manifest, the guard's state), checked against the version this specops
    reads; None when the file is missing, unreadable, not a JSON object, or its `schema` is not a number. A newer
    version is HostDataTooNew, never a guess."""
    result = host.run(["cat", "--", path], timeout=timeout, check=False)
    if not result.ok:
        return None
    try:
        record = json.loads(result.stdout)
        if not isinstance(record, dict):
            return None
        check_schema(host.name, record, path, newest)
    except ValueError:
        return None
    return record
