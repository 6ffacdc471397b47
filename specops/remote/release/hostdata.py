"""What every reader of specops's files on a host checks first: the file's schema version; and the release-id
pattern every host-side operation re-checks. Bundled FIRST into the host-side script (stdlib only, Python 3.8+)
and imported by the client, so both ends judge a version, and an id, the same way.

Why versions: a host outlives the specops that deployed it. The next specops to read it (newer, or older after
a downgrade) must know what it is reading. Every file specops writes on a host carries `"schema": N`:

  releases/<id>/manifest.json        MANIFEST_SCHEMA  (the push; gates and `verified` merged in later)
  .release-summaries/<id>.json       SUMMARY_SCHEMA   (a cache of the manifest's listing keys)
  .specops-watch.json                WATCH_SCHEMA     (the guard's watch after "verified")
  .verified-hashes.json              HASHES_SCHEMA    (a cache: inode -> size, mtime, sha256 of verified files)
  <lock root>/holder.json            HOLDER_SCHEMA    (who holds the deploy lock)
  audit.jsonl, one per line          AUDIT_SCHEMA     (the audit log)
  .specops-guard.py, first line      GUARD_SCHEMA     (the rollback guard the deploy arms)
  .specops-guard.json                GUARD_STATE_SCHEMA (the guard's planned rollback target, then what it did)

A reader takes a version up to its own (a missing version is 0: written before versions existed, same layout,
or migrated where the layout changed); a NEWER version is refused with one message that says to upgrade
specops, never guessed at: a field this specops does not know could be the one that matters.
"""

from __future__ import annotations

import os
import re
import time

SCHEMA_KEY = "schema"
MANIFEST_SCHEMA = 2  # 2: the tree hash holds each file's mode as on the host (script.file_kind)
# 2: carries a release's `bad` mark (marks.py). Only a summary WITH a mark is written as 2, so an older specops
# refuses exactly the hosts where it would otherwise roll back to a bad release.
SUMMARY_SCHEMA = 2
PLAIN_SUMMARY_SCHEMA = 1
HASHES_SCHEMA = 1
HOLDER_SCHEMA = 1
AUDIT_SCHEMA = 1
GUARD_SCHEMA = 1
GUARD_STATE_SCHEMA = 1
GUARD_STATE_FILE = ".specops-guard.json"  # written when the guard is armed: the plan's rollback target
WATCH_SCHEMA = 1
NOTIFY_FILE = ".specops-notify.json"  # 0600: the webhook the guard and the watch post their rollbacks to
EVENT_SCHEMA = 1  # of a notify event (docs/notify.md): posted by specops and by the host-side guard alike
RELEASE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")  # no "/", no leading "."


class Refused(Exception):
    """An operation that must not go on; `kind` lets specops pick the error class, `details` travel with it."""

    def __init__(self, kind: str, message: str, **details: object) -> None:
        super().__init__(message)
        self.kind = kind
        self.details = details


class SchemaTooNew(Refused):
    """A file on the host was written by a newer specops than this one can read (kind "schema")."""

    def __init__(self, path: str, found: int, newest: int) -> None:
        super().__init__("schema", too_new_message(path, found, newest), path=path, found=found, newest=newest)


def utc_text(epoch: float | None = None) -> str:
    """A moment as every file specops writes on a host states it (audit lines, marks, the lock holder, the
    watch): UTC to the second, ISO 8601 with a Z, whatever the host's time zone. Now when `epoch` is None."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def append_line(path: str, data: bytes, mode: int = 0o644) -> None:
    """Append `data` (one whole audit line) to `path` with O_APPEND, looping on short writes: the one writer of
    audit lines, on the host (the rollback, the guard, and specops/ops/audit.py's APPEND_SCRIPT, built from this
    function's source) and on the operator's machine. O_APPEND puts each write at the end, so concurrent
    writers never overwrite each other; a line is one write unless the kernel cuts it short (a signal, a full
    disk), and then the rest follows instead of being lost."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def too_new_message(path: str, found: int, newest: int) -> str:
    return (
        path + ": this host was deployed by a newer specops (schema " + str(found) + ", this specops reads up to "
        + str(newest) + "): upgrade specops"
    )  # fmt: skip


def checked_schema(record: object, path: str, newest: int) -> int:
    """The `schema` of a JSON object read from `path` if this specops can read it (0 when it has none: written
    before versions existed); SchemaTooNew if a newer specops wrote it; ValueError if it is not a version."""
    version = record.get(SCHEMA_KEY, 0) if isinstance(record, dict) else 0
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ValueError(path + ": " + SCHEMA_KEY + " is not a version number: " + repr(version)[:40])
    if version > newest:
        raise SchemaTooNew(path, version, newest)
    return version


def checked_release_id(value: object, empty_ok: bool = False) -> str:
    """`value` if it is a release id (or "" where allowed); anything else is refused before it names a path."""
    text = value if isinstance(value, str) else ""
    if (empty_ok and text == "") or RELEASE_ID.fullmatch(text):
        return text
    raise Refused("request", "not a release id: " + repr(value))


# Release ids. Today's: `<build12>-<cfg6>` (build/stage.py content_release_id): the build part is the same on
# every host that got the same build and profile, the config part names the host's unit. Older hosts keep
# time-based ids, `YYYYmmddTHHMMSSZ-<tree12>`: both kinds are valid, and neither is ordered by its name.
CONTENT_ID = re.compile(r"([0-9a-f]{12})-[0-9a-f]{6}")
BUILD_ID = re.compile(r"[0-9a-f]{12}")
LEGACY_ID = re.compile(r"(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z-[0-9a-f]{12}")


def build_part(release_id: str) -> str | None:
    """The build a content id names (the same on every host); None for a time-based id, which names none."""
    found = CONTENT_ID.fullmatch(release_id)
    return found.group(1) if found else None


def order_key(created_at: object, release_id: str) -> tuple[str, str]:
    """Oldest first: by the manifest's `created_at` (to the second, or finer), else by the time a time-based id
    starts with; the id breaks ties. Content ids do not sort by time, so nothing may sort releases by name."""
    when = created_at if isinstance(created_at, str) else ""
    legacy = LEGACY_ID.fullmatch(release_id)
    if not when and legacy:
        when = "{}-{}-{}T{}:{}:{}".format(*legacy.groups())
    when = when.rstrip("Z")
    whole, _, fraction = when.partition(".")
    return (whole + "." + fraction.ljust(6, "0") if whole else "", release_id)
