"""The one read of a specops file from a host: `cat` it, parse it with its typed reader (the pure modules of
specops/commands: manifest.py, ...). Why one: every caller then treats a missing, unreadable or malformed file
the same way (None: as if absent) and a newer one the same way (HostDataTooNew, never a guess).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

from specops.host.base import Host

T = TypeVar("T")


def read_document(host: Host, path: str, parse: Callable[[object, str, str], T], timeout: float) -> T | None:
    """`parse(value, path, host name)` of the JSON file at `path`; None when the file is missing, not JSON, or
    the reader calls it malformed (ValueError). HostDataTooNew from the reader goes through."""
    result = host.run(["cat", "--", path], timeout=timeout, check=False)
    if not result.ok:
        return None
    try:
        return parse(json.loads(result.stdout), path, host.name)
    except ValueError:
        return None
