"""Bad releases on the host: a release that a rollback left, or that an operator marked, is never a rollback
target again (neither the automatic one nor `rollback` without `--to`; `--to` it only with `--force`).

Part of the host-side script (stdlib only, Python 3.8+). Two ops:

  mark-bad SERVICE_DIR ID REASON WHO    record {"reason", "when", "who"} as the manifest's `bad` key
  unmark-bad SERVICE_DIR ID             remove it

Why in the manifest: the mark belongs to the release, goes away with it when it is pruned, and reaches every
reader through the summary that `list` reads. A summary that carries a mark is written with schema 2
(SUMMARY_SCHEMA) and one without as 1, so an older specops, which would not know to skip a bad release,
refuses a host that has one instead of rolling back to it, and reads every other host as before.
"""

from __future__ import annotations

import os
from typing import Any

from specops.remote.release.catalog import summary, write_summary
from specops.remote.release.hostdata import Refused, checked_release_id, utc_text
from specops.remote.release.script import MANIFEST, read_manifest, write_json_atomic

MAX_REASON_CHARS = 500


def bad_mark(reason: str, who: str) -> dict[str, str]:
    """The record kept under `bad`: why, when (UTC, the host's clock) and who."""
    return {"reason": reason[:MAX_REASON_CHARS] or "marked bad", "when": utc_text(), "who": who}


def set_bad(service_dir: str, release_id: str, mark: dict[str, str] | None) -> dict[str, Any]:
    """Write (or, with None, remove) the release's mark in its manifest and summary, atomically; the summary."""
    folder = os.path.join(service_dir, "releases", checked_release_id(release_id))
    if not os.path.isdir(folder) or os.path.islink(folder):
        raise Refused("missing", "release " + release_id + " does not exist on the host")
    manifest = read_manifest(folder)
    if mark is None:
        manifest.pop("bad", None)
    else:
        manifest["bad"] = mark
    write_json_atomic(os.path.join(folder, MANIFEST), manifest)
    write_summary(folder, manifest)
    return summary(service_dir, release_id)


def op_mark_bad(service_dir: str, release_id: str, reason: str, who: str) -> dict[str, Any]:
    return set_bad(service_dir, release_id, bad_mark(reason, who))


def op_unmark_bad(service_dir: str, release_id: str) -> dict[str, Any]:
    return set_bad(service_dir, release_id, None)


def mark_left_release(service_dir: str, left: str | None, back_to: str, reason: str, who: str) -> str | None:
    """After a rollback: mark the release it left bad (not when it went nowhere else). Returns the id marked,
    None when there was none or its manifest cannot be rewritten (the rollback itself still stands)."""
    if not left or left == back_to:
        return None
    try:
        set_bad(service_dir, left, bad_mark("rolled back: " + reason, who))
    except (OSError, ValueError, Refused):  # unreadable, or a newer specops's manifest: left as it is
        return None
    return left
