"""Hard-linking a patch's unchanged files from the base release, and vouching for each as it is linked; bundled
after untar.py, before receive.py.

Why one pass: a one-line patch leaves ~5,800 files to link, and the receive used to link them all, then walk
the whole tree again and lstat each (docs/performance.md "## Push"). Here each link is lstat-ed right after it
is made: that lstat is of the very inode now in the release (a link shares it with the base), and when its
size and mtime match the verified record of that inode, and the record's sha256 is the manifest's, its
content is the base's verified content: it is not read. The final scan still walks every folder and refuses
anything that is not a file, folder or safe symlink; for a file vouched for here it takes this entry instead
of stat-ing it again. A file that is not vouched for (no record, edited since: a new mtime, a mode that needs
a private copy) is left to the scan, which stats and reads it as before.
"""

from __future__ import annotations

import os
import shutil
import stat
from typing import Any

from specops.remote.release.hostdata import Refused
from specops.remote.release.script import file_kind, host_mode
from specops.remote.release.untar import safe_member_path


class Linked:
    """What linking found: counts, and for each file vouched for, its tree-hash entry, lstat and record."""

    def __init__(self) -> None:
        self.counts = {"linked": 0, "copied": 0}
        self.entries: dict[str, tuple[str, str]] = {}  # relpath -> (kind, sha256), as scan_release_dir gives
        self.stats: dict[str, os.stat_result] = {}
        self.records: dict[str, list[Any]] = {}  # "dev:ino" -> [size, mtime_ns, sha256] for the new record


def link_unchanged(
    root: str,
    base_dir: str | None,
    manifest: dict[str, Any],
    received: set[str],
    verified: dict[str, Any] | None = None,
    schema: int = 0,
) -> Linked:
    """Hard-link every manifest file that was not sent from the base (copy across filesystems), and vouch for
    each by the verified record (`verified`: "dev:ino" -> [size, mtime_ns, sha256]). Each folder is checked
    once not to be a symlink (a link must never be written through one, out of root)."""
    linked = Linked()
    folders = {root}
    kinds: dict[int, str] = {}
    for name, entry in sorted((manifest.get("files") or {}).items()):
        if name in received:
            continue
        if base_dir is None or "link" in entry:
            raise Refused("incomplete", "file " + repr(name) + " was neither sent nor available in a base release")
        destination = safe_member_path(root, name)
        folder = destination[: destination.rindex("/")]
        if folder not in folders:
            real_folder(root, folder, folders)
        if link_one(base_dir, name, destination, linked.counts) and verified:
            vouch(name, destination, entry, verified, linked, kinds, schema)
    return linked


def link_one(base_dir: str, name: str, destination: str, counts: dict[str, int]) -> bool:
    """Link (or, across filesystems, copy) one base file; True when it is a hard link (shares the inode)."""
    source = base_dir + "/" + name
    try:
        os.link(source, destination)
    except FileNotFoundError:
        raise Refused("incomplete", "file " + repr(name) + " is missing from base release " + base_dir) from None
    except OSError:
        shutil.copy2(source, destination)
        counts["copied"] += 1
        return False
    counts["linked"] += 1
    return True


def vouch(
    name: str,
    path: str,
    entry: Any,
    verified: dict[str, Any],
    linked: Linked,
    kinds: dict[int, str],
    schema: int,
) -> None:
    """Take `name`'s entry from the record when the inode just linked is a regular file with its host mode and
    the record of that inode matches its size, its mtime and the manifest's sha256; else leave it to the scan."""
    info = os.lstat(path)
    mode = info.st_mode
    sha = entry.get("sha256") if isinstance(entry, dict) else None
    if not stat.S_ISREG(mode) or stat.S_IMODE(mode) != host_mode(mode):
        return
    key = inode_key(info)
    record = verified.get(key)
    if not vouches(record, info, sha):
        return
    kind = kinds.get(mode)
    if kind is None:
        kind = kinds[mode] = file_kind(mode, schema)
    linked.entries[name] = (kind, str(sha))
    linked.stats[name] = info
    linked.records[key] = [info.st_size, info.st_mtime_ns, sha]  # the record that vouched (equal to it)


def inode_key(info: os.stat_result) -> str:
    """A file's key in the verified-hashes record: "dev:ino"."""
    return str(info.st_dev) + ":" + str(info.st_ino)


def vouches(record: Any, info: os.stat_result, sha: Any) -> bool:
    """The verified record of an inode vouches for this file's content: same size, same mtime (not edited in
    place since it was verified) and the sha256 the manifest expects."""
    return bool(sha) and record == [info.st_size, info.st_mtime_ns, sha]


def real_folder(root: str, folder: str, known: set[str]) -> None:
    """Make `folder` (inside root) if needed; refuse if it or a folder above it is a symlink. `known` holds the
    folders already checked, parents first. A new folder costs one mkdir (most of a patch's ~600 folders: tar
    wrote only the changed files' ones); only one that exists (tar made it) is lstat-ed: mkdir never follows a
    symlink in its last part, and every part above was checked before."""
    if folder in known:
        return
    real_folder(root, folder[: folder.rindex("/")], known)
    try:
        os.mkdir(folder)
    except FileExistsError:
        mode = os.lstat(folder).st_mode
        if stat.S_ISLNK(mode):
            where = repr(os.path.relpath(folder, root))
            raise Refused("unsafe", "refusing to write through symlink " + where) from None
        if not stat.S_ISDIR(mode):
            raise
    known.add(folder)
