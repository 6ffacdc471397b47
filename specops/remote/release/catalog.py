"""The host's catalogue of releases: the summaries `list` reads, the listing itself, pruning, and manifest
updates. Bundled after script.py into the same host-side script (stdlib only, Python 3.8+).

Why summaries: a manifest holds every file of a build (a few MB for an SGLang tree), while `list` needs a
handful of keys per release on every deploy, status and rollback; each summary is a few hundred bytes, kept
beside the release and trusted only while the manifest's size, mtime and inode are those it was taken from.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from typing import Any

from specops.remote.release.boot import cut_short
from specops.remote.release.claim import is_unfinished_leftover
from specops.remote.release.hostdata import (
    LEGACY_ID,
    PLAIN_SUMMARY_SCHEMA,
    SCHEMA_KEY,
    SUMMARY_SCHEMA,
    WATCH_SCHEMA,
    Refused,
    checked_release_id,
    checked_schema,
    order_key,
    utc_text,
)
from specops.remote.release.script import (
    MANIFEST,
    UNFINISHED,
    WATCH_FILE,
    current_id,
    read_manifest,
    release_ids,
    write_json_atomic,
)

SUMMARIES = ".release-summaries"  # <service_dir>/.release-summaries/<id>.json: what `list` reads
SUMMARY_KEYS = ("created_at", "profile", "tree_hash", "verified_at", "gates", "deployed_by", "verified", "bad")
PROTECTED_MANIFEST_KEYS = ("schema", "id", "tree_hash", "files", "created_at")


def manifest_stamp(folder: str) -> list[int]:
    info = os.stat(os.path.join(folder, MANIFEST))
    return [info.st_size, info.st_mtime_ns, info.st_ino]


def summary_path(folder: str) -> str:
    """Outside the release folder on purpose: the release holds exactly the build and its manifest."""
    releases, release_id = os.path.split(folder)
    return os.path.join(os.path.dirname(releases), SUMMARIES, release_id + ".json")


def write_summary(folder: str, manifest: dict[str, Any]) -> None:
    """Keep a summary of manifest.json (docs/performance.md "## Push"): the listing's keys plus the manifest's
    (size, mtime, inode) when it was taken, so `list` reads a few hundred bytes per release instead of the
    whole files map, and a manifest changed any other way (by hand, a crash between the two writes) is noticed
    and read in full."""
    record = {key: manifest.get(key) for key in SUMMARY_KEYS}
    record["manifest"] = manifest_stamp(folder)
    record[SCHEMA_KEY] = SUMMARY_SCHEMA if manifest.get("bad") else PLAIN_SUMMARY_SCHEMA  # hostdata.py: why
    path = summary_path(folder)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_json_atomic(path, record)


def read_summary(folder: str) -> dict[str, Any] | None:
    """The summary if it still describes manifest.json as it is now, else None (read the manifest). A summary
    without a version has the same keys (read as it is); a newer one is refused (SchemaTooNew)."""
    path = summary_path(folder)
    try:
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
        if isinstance(record, dict) and record.get("manifest") == manifest_stamp(folder):
            checked_schema(record, path, SUMMARY_SCHEMA)
            return record
    except (OSError, ValueError):
        pass
    return None


def summary(service_dir: str, release_id: str) -> dict[str, Any]:
    folder = os.path.join(service_dir, "releases", release_id)
    # complete: the receive finished (no marker) -- and it began: a receive stopped between its mkdir and the
    # marker leaves a folder with neither the marker nor a manifest, which is not a release either
    finished = not os.path.lexists(os.path.join(folder, UNFINISHED))
    info = {"id": release_id, "complete": finished and os.path.lexists(os.path.join(folder, MANIFEST)), "error": None}
    manifest = read_summary(folder)
    if manifest is None:
        try:
            manifest = read_manifest(folder)
        except (OSError, ValueError) as error:
            info["error"] = str(error)
            manifest = {}
    for key in SUMMARY_KEYS:
        info[key] = manifest.get(key)
    info["verified"] = manifest.get("verified") is True
    return info


def watch_record(service_dir: str) -> dict[str, Any] | None:
    """The guard's last watch (watch.py) with `left_s` by the host's clock; None when none or unreadable."""
    import time

    path = os.path.join(service_dir, WATCH_FILE)
    try:
        with open(path, encoding="utf-8") as handle:
            record: dict[str, Any] = json.load(handle)  # not an object: the assignment below raises TypeError
        checked_schema(record, path, WATCH_SCHEMA)  # a newer one: refused (SchemaTooNew), never half-read
        record["left_s"] = max(0, record["deadline_epoch"] - int(time.time()))
        why = cut_short(record)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if why is not None:  # a reboot (or a kill) ended it: never shown as "watching"
        record.update(state="cut-short", reason=why, left_s=0)
    return record


def op_list(service_dir: str) -> dict[str, Any]:
    """The host's releases, oldest first by when each was created (hostdata.order_key: not by name)."""
    releases = [summary(service_dir, release_id) for release_id in release_ids(service_dir)]
    releases.sort(key=lambda r: order_key(r.get("created_at") or started_at(service_dir, r["id"]), r["id"]))
    return {"current": current_id(service_dir), "releases": releases, "watch": watch_record(service_dir)}


def started_at(service_dir: str, release_id: str) -> str | None:
    """When a release without a readable `created_at` (a push that stopped before its manifest) was begun: its
    folder's mtime; None for a time-based id, whose name says when."""
    if LEGACY_ID.fullmatch(release_id):
        return None
    try:
        return utc_text(os.lstat(os.path.join(service_dir, "releases", release_id)).st_mtime)
    except OSError:
        return None


def prune_plan(
    releases: list[dict[str, Any]],
    current: str | None,
    keep: int,
    protected: set[str],
    stale: frozenset[str] = frozenset(),
) -> list[str]:
    """Ids to delete (`releases` oldest first, as op_list orders them): complete releases beyond the newest
    `keep`, unfinished leftovers older than the newest complete one, and the `stale` ones (unfinished, untouched
    for longer than the lock's life: their push is dead, whatever came after); never current, the newest
    verified or a protected id."""
    complete = [r["id"] for r in releases if r["complete"]]
    verified = [r["id"] for r in releases if r["complete"] and r["verified"] and not r["error"]]
    spared = set(protected) | {current} | set(verified[-1:]) | set(complete[-keep:] if keep > 0 else [])
    ids = [r["id"] for r in releases]
    newest_complete = ids.index(complete[-1]) if complete else -1
    doomed = [r for r in complete if r not in spared]
    doomed += [r["id"] for r in releases[:newest_complete] if not r["complete"]]
    doomed += [r["id"] for r in releases if not r["complete"] and r["id"] in stale]
    return sorted(set(r for r in doomed if r not in spared))


def stale_leftovers(service_dir: str, stale_after_s: float) -> frozenset[str]:
    """Unfinished releases with no sign of life (the folder's and its marker's mtime, host clock) for longer
    than `stale_after_s`: a push that old lost its lock long ago. Run under the lock, so no push is running; a
    clock stepped back makes them look younger (kept a while longer), never older."""
    if stale_after_s <= 0:
        return frozenset()
    import time

    now, found = time.time(), set()
    for release_id in release_ids(service_dir):
        folder = os.path.join(service_dir, "releases", release_id)
        if not is_unfinished_leftover(folder):
            continue
        times = [
            os.lstat(path).st_mtime for path in (folder, os.path.join(folder, UNFINISHED)) if os.path.lexists(path)
        ]
        if times and now - max(times) > stale_after_s:
            found.add(release_id)
    return frozenset(found)


def remove_releases(service_dir: str, doomed: list[str]) -> None:
    releases = os.path.join(service_dir, "releases")
    for release_id in doomed:
        with contextlib.suppress(FileNotFoundError):  # first: a summary never outlives its release
            os.unlink(summary_path(os.path.join(releases, release_id)))
        trash = os.path.join(releases, ".trash-" + release_id)
        os.rename(os.path.join(releases, release_id), trash)  # gone from listings at once, even if rmtree fails
        shutil.rmtree(trash)


def op_prune(service_dir: str, keep: str, protected: str, stale_after_s: str = "0") -> dict[str, Any]:
    spared = {checked_release_id(release_id) for release_id in protected.split(",") if release_id}
    stale = stale_leftovers(service_dir, float(stale_after_s))
    plan = prune_plan(op_list(service_dir)["releases"], current_id(service_dir), int(keep), spared, stale)
    remove_releases(service_dir, plan)
    return {"removed": plan}


def room_reply(service_dir: str, stale_after_s: float) -> dict[str, Any]:
    """Before a receive: remove the stale unfinished leftovers (only those: nothing a keep rule or a rollback
    needs), then say how much space the releases' filesystem has left, so the client can refuse a push that
    cannot fit before it sends a byte."""
    current = current_id(service_dir)
    removed = sorted(r for r in stale_leftovers(service_dir, stale_after_s) if r != current)
    remove_releases(service_dir, removed)
    folder = os.path.join(service_dir, "releases")
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)  # a first push: the folder the receive will create is on its parent's
    info = os.statvfs(folder)
    return {"ok": True, "removed": removed, "free": info.f_bavail * info.f_frsize, "path": service_dir}


def op_update_manifest(service_dir: str, release_id: str) -> dict[str, Any]:
    release_id = checked_release_id(release_id)
    changes = json.loads(sys.stdin.read())
    if not isinstance(changes, dict) or set(changes) & set(PROTECTED_MANIFEST_KEYS):
        raise Refused("manifest", "manifest changes must be an object without " + ", ".join(PROTECTED_MANIFEST_KEYS))
    folder = os.path.join(service_dir, "releases", release_id)
    manifest = read_manifest(folder)
    manifest.update(changes)
    write_json_atomic(os.path.join(folder, MANIFEST), manifest)
    write_summary(folder, manifest)
    return summary(service_dir, release_id)
