"""The host side of a push (`receive`); bundled after baselink.py, before session.py.

Why GNU tar when the host has it: Python's tarfile costs ~2x GNU tar per member on a 5,800-file tree, and the
stream goes straight from sshd to tar (never through Python). Safety does not depend on it: tar refuses
`..` members and defers dangerous symlinks; afterwards every symlink is checked to stay inside the release
and every other entry must be a regular file or a folder, before the tree hash decides. Without tar (or with
extractor "python") the stdlib reader of untar.py is used, which checks each member BEFORE writing it.

Hard-linked files are re-read for the tree hash unless `<service_dir>/.verified-hashes.json` vouches for them:
it maps an inode to (size, mtime_ns, sha256) as verified at the end of the last push; a file edited in place
since then has a new mtime (the same quick check as rsync's) and is hashed again. Files that arrive in the
stream are hashed as they pass (stream.py). Every file is stat'ed once: a linked file right after its link
(baselink.py), any other by the final scan; those results also feed the new record.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from collections.abc import Callable
from typing import Any

from specops.remote.release.baselink import Linked, inode_key, link_unchanged, vouches
from specops.remote.release.catalog import write_summary
from specops.remote.release.claim import claim_release_dir, is_disk_full
from specops.remote.release.hostdata import HASHES_SCHEMA, SCHEMA_KEY, Refused, checked_release_id, checked_schema
from specops.remote.release.script import (
    MANIFEST,
    UNFINISHED,
    differences,
    entries_hash,
    host_mode,
    read_manifest,
    scan_release_dir,
    write_json_atomic,
)
from specops.remote.release.stream import extract_with_tar
from specops.remote.release.untar import extract_python

HASHES_FILE = ".verified-hashes.json"


def present_files(root: str) -> set[str]:
    """Every file and symlink under root. os.walk lists a symlink to a folder among the folders (and does not
    follow it): it is an entry of the tree like any file, so it is counted here."""
    found: set[str] = set()
    for folder, dirs, files in os.walk(root):
        prefix = folder[len(root) + 1 :]
        linked = [name for name in dirs if os.path.islink(os.path.join(folder, name))]
        found.update(os.path.join(prefix, name) if prefix else name for name in [*files, *linked])
    return found


def load_verified(service_dir: str) -> dict[str, Any]:
    """The record's inode map. Without a version it IS the map (written before versions existed); a record
    from a newer specops is refused (SchemaTooNew) rather than trusted to vouch for a file."""
    path = os.path.join(service_dir, HASHES_FILE)
    try:
        with open(path, encoding="utf-8") as handle:
            loaded = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(loaded, dict):
        return {}
    try:
        version = checked_schema(loaded, path, HASHES_SCHEMA)
    except ValueError:
        return {}
    inodes = loaded.get("inodes") if version >= 1 else loaded
    return inodes if isinstance(inodes, dict) else {}


def mode_fixer(received: set[str], counts: dict[str, int]) -> Callable[[str, str, os.stat_result], os.stat_result]:
    """For the final scan: give a folder 0755 and a file its host_mode (0644 or 0755: no setuid/setgid/sticky,
    no group or world write), whatever the build had. A file linked from the base shares its inode with that
    older release: it is never chmod-ed (that would change the older release too); if its mode is not the host
    mode (a release pushed before modes were normalised), it is replaced by a private copy with the right mode
    (counted in counts["mode_copies"])."""

    def fix(relpath: str, path: str, info: os.stat_result) -> os.stat_result:
        if stat.S_ISDIR(info.st_mode):
            os.chmod(path, 0o755)
        elif relpath in received or info.st_nlink == 1:
            os.chmod(path, host_mode(info.st_mode))
        else:
            private_copy(path, host_mode(info.st_mode))
            counts["mode_copies"] += 1
        return os.lstat(path)

    return fix


def private_copy(path: str, mode: int) -> None:
    """Replace a hard link by a copy of its content (same mtime) with `mode`; the other links keep theirs."""
    temporary = path + ".mode-" + str(os.getpid())
    shutil.copy2(path, temporary)
    os.chmod(temporary, mode)
    os.replace(temporary, path)


def known_sha(
    streamed: dict[str, tuple[int, int, str]],
    written: dict[tuple[int, int, int], str],
    verified: dict[str, Any],
    files: dict[str, Any],
    received: set[str],
) -> Callable[[str, os.stat_result], str | None]:
    """What the scan may take as a file's sha256 without reading it: the hash taken while the file streamed in
    (only for a file tar wrote that still has the member's size and mtime), or the one the Python reader wrote
    (same inode, size and mtime), or, for a hard-linked file only, the verified record of its inode if size,
    mtime and the manifest's sha256 all match it. Anything else returns None, and the file is read."""

    def lookup(relpath: str, info: os.stat_result) -> str | None:
        if relpath in received:  # written by tar or the Python reader: never vouched for by the record
            sha = written.get((info.st_ino, info.st_size, info.st_mtime_ns))
            if sha is not None:
                return sha
            passed = streamed.get(relpath)
            if passed is not None and passed[0] == info.st_size and passed[1] == info.st_mtime_ns:
                return passed[2]
            return None
        entry = files.get(relpath)
        sha = entry.get("sha256") if isinstance(entry, dict) else None
        return str(sha) if vouches(verified.get(inode_key(info)), info, sha) else None

    return lookup


def save_verified(
    service_dir: str,
    entries: dict[str, tuple[str, str]],
    stats: dict[str, os.stat_result],
    linked: Linked | None = None,
) -> None:
    """The new record: every regular file of the verified release by inode, from the scan's own lstat results;
    a file vouched for while it was linked keeps the record that vouched for it (the same inode, size, mtime and
    sha256: nothing to recompute)."""
    records = dict(linked.records) if linked is not None else {}
    done = linked.entries if linked is not None else {}
    for name, (kind, value) in entries.items():
        info = stats.get(name)
        if kind != "l" and info is not None and name not in done:
            records[inode_key(info)] = [info.st_size, info.st_mtime_ns, value]
    write_json_atomic(os.path.join(service_dir, HASHES_FILE), {SCHEMA_KEY: HASHES_SCHEMA, "inodes": records})


def op_receive(
    service_dir: str, release_id: str, base_id: str, expected: str, extractor: str = "auto"
) -> dict[str, Any]:
    release_id, base_id = checked_release_id(release_id), checked_release_id(base_id, empty_ok=True)
    releases = os.path.join(service_dir, "releases")
    root = os.path.join(releases, release_id)
    base_dir = os.path.join(releases, base_id) if base_id else None
    if base_dir is not None and not os.path.isdir(base_dir):
        raise Refused("base", "base release " + base_id + " does not exist on the host")
    os.makedirs(releases, exist_ok=True)
    replaced = claim_release_dir(releases, release_id)
    try:
        filled = fill_release(service_dir, root, base_dir, expected, extractor)
        return {"id": release_id, "replaced_unfinished": replaced, **filled}
    except (Refused, OSError) as error:
        if not is_disk_full(error):
            raise  # left `unfinished`: a later deploy's prune removes it
        shutil.rmtree(root, ignore_errors=True)  # a partial release on a full disk would block every later push
        raise Refused(
            "disk-full",
            "no space left on the disk of "
            + releases
            + " while receiving release "
            + release_id
            + "; the partial release was removed ("
            + str(error)[-300:]
            + ")",
        ) from None


def fill_release(service_dir: str, root: str, base_dir: str | None, expected: str, extractor: str) -> dict[str, Any]:
    """Unpack the stream into the new release, hard-link the rest from the base, verify the tree hash."""
    written: dict[tuple[int, int, int], str] = {}
    streamed: dict[str, tuple[int, int, str]] = {}
    if extractor == "tar" or (extractor == "auto" and shutil.which("tar")):
        streamed = extract_with_tar(root, sys.stdin.buffer)
        received = present_files(root) - {UNFINISHED}
    else:
        received = extract_python(sys.stdin.buffer, root, written)
    manifest = read_manifest(root)
    write_summary(root, manifest)
    files = manifest.get("files") or {}
    schema = int(manifest.get(SCHEMA_KEY) or 0)
    verified = load_verified(service_dir)
    linked = link_unchanged(root, base_dir, manifest, received, verified, schema)
    counts = {**linked.counts, "mode_copies": 0}
    stats: dict[str, os.stat_result] = dict(linked.stats)
    lookup = known_sha(streamed, written, verified, files, received)
    os.chmod(os.path.join(root, MANIFEST), 0o644)
    entries = scan_release_dir(root, lookup, stats, schema, mode_fixer(received, counts), linked.entries)
    actual = entries_hash(entries)
    if actual != expected or manifest.get("tree_hash") != expected:
        differing = differences(entries, files, schema=schema)
        raise Refused("mismatch", "tree hash mismatch in " + root, expected=expected, actual=actual, files=differing)
    save_verified(service_dir, entries, stats, linked)
    os.chmod(root, 0o755)  # verified, every mode normalised: now the engine's run_as user may read it
    os.unlink(os.path.join(root, UNFINISHED))
    return {"tree_hash": actual, "received": len(received), **counts}
