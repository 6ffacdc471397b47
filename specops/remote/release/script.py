"""The host side of releases: one stdlib-only script (this file and the modules bundled after it: catalog.py for
`list`, `prune` and `update-manifest`, receive.py, session.py, ...), run as `<python> -IS -c <script> OP ARGS...`.

Why a script and not shell commands: listing every release with its manifest, receiving a tar stream while
hard-linking the rest, verifying a tree hash and switching `current` must each be ONE round trip, atomic on the
host, and identical on every distro. The host's own interpreter (the engine's venv, Python 3.8+) runs it, so
nothing is installed on the host. specops imports `tree_hash` from here too, so both ends hash the same way.

Ops (each prints one JSON object on stdout; exit 0 with {"ok": true, ...}, exit 3 with {"ok": false, ...}):
  list SERVICE_DIR                          releases + manifests summary + which one `current` points at
  receive SERVICE_DIR ID BASE_ID TREE_HASH  stdin: tar (manifest.json first); build releases/ID, verify, finish
  switch SERVICE_DIR ID                     point `current` at releases/ID by an atomic rename
  prune SERVICE_DIR KEEP PROTECTED_IDS      remove old releases (comma-separated ids are never removed)
  update-manifest SERVICE_DIR ID            stdin: JSON object merged into manifest.json (atomic rewrite)
  mark-bad / unmark-bad SERVICE_DIR ID ...  a release that must never be rolled back to (marks.py)
  session SERVICE_DIR                       the listing first, then files/receive requests (release_session.py)
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from typing import Any

from specops.remote.release.hostdata import (  # re-exported: the client's ids, built and ordered by the host's rule
    BUILD_ID as BUILD_ID,
)
from specops.remote.release.hostdata import MANIFEST_SCHEMA as MANIFEST_SCHEMA  # re-exported: the client's stage
from specops.remote.release.hostdata import RELEASE_ID as RELEASE_ID  # re-exported: the client's id check
from specops.remote.release.hostdata import Refused as Refused  # re-exported: the stage checks links by the host's rule
from specops.remote.release.hostdata import (
    build_part as build_part,
)
from specops.remote.release.hostdata import (
    checked_release_id,
    checked_schema,
)
from specops.remote.release.hostdata import (
    order_key as order_key,
)

MANIFEST = "manifest.json"
UNFINISHED = "unfinished"
RELEASE_ENV = ".specops-env"  # the release's env file, 0600 (relconfig.py): secrets, so outside the tree hash
WATCH_FILE = ".specops-watch.json"  # the guard's watch after "verified" (watch.py); `list` reports it
WATCH_STOP_FILE = ".specops-watch-stop"  # written by a deploy's disarm before it stops the watch (watch.py)
NOT_HASHED = (MANIFEST, UNFINISHED, RELEASE_ENV)
CHUNK = 1 << 20
# What a receive needs and `list` does not, imported where used: a deploy waits for the push session's listing
# right after it takes the host's lock, and each of these would cost the session's start 2-5 ms (more on a busy
# host) before it could answer; the session imports them once the listing is out (session.warm_up).
LAZY_IMPORTS = ("hashlib", "subprocess", "tempfile")
MODES_IN_HASH = 2  # the manifest schema from which a file's line carries its full mode, not only the exec bit


def tree_line(relpath: str, kind: str, value: str) -> str:
    """One line of the tree hash: a file's kind (file_kind) with the content sha256, or 'l' with the symlink
    target."""
    return relpath + "\0" + kind + "\0" + value + "\n"


def host_mode(mode: int) -> int:
    """The mode every release file has on the host, whatever it had in the build: 0755 if any exec bit was set,
    else 0644. Why: the engine (often root) imports these files; a group/world-writable file lets any local user
    add code to it, a setuid one runs as its owner. Folders are 0755."""
    return 0o755 if mode & 0o111 else 0o644


def file_kind(mode: int, schema: int) -> str:
    """A regular file's kind in the tree hash under the rule of manifest `schema`: from MODES_IN_HASH its whole
    mode in octal ("0644"), so a file left with any other mode on the host fails the check; before that 'x' or
    '-' (the exec bit only), the rule older releases' recorded hashes were taken with."""
    if schema >= MODES_IN_HASH:
        return format(stat.S_IMODE(mode), "04o")
    return "x" if mode & 0o111 else "-"


def tree_hash(lines: list[str]) -> str:
    """sha256 over the sorted lines: independent of walk order, mtimes, owners and the filesystem."""
    import hashlib  # here, not at the top: `list` (a deploy's first answer) never hashes; see LAZY_IMPORTS

    return hashlib.sha256("".join(sorted(lines)).encode("utf-8", "surrogateescape")).hexdigest()  # one update


def file_sha256(path: str) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def scan_release_dir(
    root: str,
    known: Callable[[str, os.stat_result], str | None] | None = None,
    stats: dict[str, os.stat_result] | None = None,
    schema: int = MANIFEST_SCHEMA,
    fix: Callable[[str, str, os.stat_result], os.stat_result] | None = None,
    vouched: dict[str, tuple[str, str]] | None = None,
) -> dict[str, tuple[str, str]]:
    """relpath -> (kind, sha256 or link target) of a release folder as it is on disk now. `known(relpath,
    lstat)` returns a sha256 already established for exactly that file (hashed while it streamed in, or vouched
    for by the verified-hashes record): it is not read again. `stats` collects each regular file's lstat, so the
    caller needs no second pass. `schema` picks the tree-hash rule (file_kind). `fix(relpath, path, lstat)` is
    called for a file or folder whose mode is not its host mode and returns its lstat after the fix (the receive
    normalises modes here, in the one pass that stats every file anyway). `vouched` holds the entries of files
    already lstat-ed and vouched for as they were hard-linked (baselink.py): still a regular file here, such a
    file takes that entry without a second lstat. A symlink must stay inside the release; anything but files,
    folders and symlinks is refused."""
    entries = {}
    pending = [""]
    while pending:
        prefix = pending.pop()
        with os.scandir(os.path.join(root, prefix) if prefix else root) as listing:
            for item in listing:
                relpath = prefix + "/" + item.name if prefix else item.name
                if vouched and relpath in vouched and item.is_file(follow_symlinks=False):
                    entries[relpath] = vouched[relpath]
                    continue
                if relpath in NOT_HASHED:
                    continue
                if item.is_symlink():
                    target = os.readlink(item.path)
                    check_symlink(root, relpath, target)
                    entries[relpath] = ("l", target)
                elif item.is_dir(follow_symlinks=False):
                    pending.append(relpath)
                    if fix is not None and stat.S_IMODE(item.stat(follow_symlinks=False).st_mode) != 0o755:
                        fix(relpath, item.path, item.stat(follow_symlinks=False))
                elif item.is_file(follow_symlinks=False):
                    info = item.stat(follow_symlinks=False)
                    if fix is not None and stat.S_IMODE(info.st_mode) != host_mode(info.st_mode):
                        info = fix(relpath, item.path, info)
                    sha = (known(relpath, info) if known is not None else None) or file_sha256(item.path)
                    entries[relpath] = (file_kind(info.st_mode, schema), sha)
                    if stats is not None:
                        stats[relpath] = info
                else:
                    raise Refused("unsafe", "refusing " + repr(relpath) + ": not a file, folder or symlink")
    return entries


def check_symlink(root: str, name: str, target: str) -> None:
    """A symlink must stay inside the release, lexically AND once resolved: `x -> .` then `y -> x/x/../..` passes
    a lexical check yet leaves. Links not created yet resolve lexically here; the final scan, when every link
    exists, decides."""
    where = os.path.join(root, os.path.dirname(name), target)
    real_root = os.path.realpath(root)
    if (
        target.startswith("/")
        or not _link_inside(os.path.normpath(where), root)
        or not _link_inside(os.path.realpath(where), real_root)
    ):
        raise Refused("unsafe", "refusing symlink " + repr(name) + " -> " + repr(target) + ": points outside")


def _link_inside(path: str, root: str) -> bool:
    return (path + "/").startswith(root.rstrip("/") + "/")


def entries_hash(entries: dict[str, tuple[str, str]]) -> str:
    return tree_hash([tree_line(relpath, kind, value) for relpath, (kind, value) in entries.items()])


def manifest_entry(entry: dict[str, Any], schema: int = MANIFEST_SCHEMA) -> tuple[str, str]:
    """A manifest `files` entry as (kind, value), comparable with scan_release_dir's."""
    if "link" in entry:
        return ("l", str(entry["link"]))
    return (file_kind(int(entry.get("mode", 0)), schema), str(entry.get("sha256")))


def differences(
    entries: dict[str, tuple[str, str]], files: dict[str, Any], limit: int = 5, schema: int = MANIFEST_SCHEMA
) -> list[str]:
    """Up to `limit` paths that differ between the disk and the manifest, each with what is wrong."""
    found = []
    for name in sorted(set(entries) | set(files)):
        if name not in files:
            found.append(name + " (not in the manifest)")
        elif name not in entries:
            found.append(name + " (missing)")
        elif entries[name] != manifest_entry(files[name], schema):
            found.append(name + " (content or mode differs)")
    return found[:limit]


def read_manifest(release_dir: str) -> dict[str, Any]:
    """The release's manifest; refused (SchemaTooNew) when a newer specops wrote it: never half-understood."""
    path = os.path.join(release_dir, MANIFEST)
    with open(path, encoding="utf-8") as handle:
        loaded = json.load(handle)
    if not isinstance(loaded, dict):
        raise ValueError("manifest.json is not a JSON object")
    checked_schema(loaded, path, MANIFEST_SCHEMA)
    return loaded


def write_json_atomic(path: str, value: object) -> None:
    """Compact on purpose: json.dumps without indent is the C encoder (a 5,777-file manifest: ~5 ms instead of
    ~50 ms with indent, which falls back to pure Python; json.dump to a file never uses the C encoder)."""
    temporary = path + ".tmp-" + str(os.getpid())
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(value, sort_keys=True, separators=(",", ":")))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def current_id(service_dir: str) -> str | None:
    link = os.path.join(service_dir, "current")
    if not os.path.islink(link):
        return None
    return os.path.basename(os.path.normpath(os.readlink(link)))


def release_ids(service_dir: str) -> list[str]:
    try:
        names = os.listdir(os.path.join(service_dir, "releases"))
    except FileNotFoundError:
        return []
    return sorted(name for name in names if RELEASE_ID.fullmatch(name))  # not .trash-*, nor a stray folder


def op_switch(service_dir: str, release_id: str) -> dict[str, Any]:
    release_id = checked_release_id(release_id)
    target = os.path.join(service_dir, "releases", release_id)
    if not os.path.isdir(target) or os.path.islink(target):
        raise Refused("missing", "release " + release_id + " does not exist on the host")
    if os.path.lexists(os.path.join(target, UNFINISHED)):
        raise Refused("unfinished", "release " + release_id + " is unfinished (its push did not verify)")
    previous = current_id(service_dir)
    link = os.path.join(service_dir, "current")
    if os.path.lexists(link) and not os.path.islink(link):
        raise Refused("current", link + " exists and is not a symlink; move it away first")
    temporary = link + ".tmp-" + str(os.getpid())
    os.symlink(target, temporary)
    os.replace(temporary, link)
    return {"previous": previous, "current": release_id}
