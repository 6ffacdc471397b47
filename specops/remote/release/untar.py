"""The stdlib reader of a push's tar stream (extractor "python", or a host without GNU tar); bundled after
stream.py, before receive.py.

Each member is checked BEFORE it is written: its path stays inside the release (never absolute, never through
`..`, never through a symlink an earlier member made), it comes once, and it is a regular file, a folder or a
symlink that stays inside the release. Regular files are hashed as they are written.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from specops.remote.release.hostdata import Refused
from specops.remote.release.script import check_symlink, host_mode

if TYPE_CHECKING:  # only a push without GNU tar unpacks with tarfile: imported there (script.LAZY_IMPORTS)
    import tarfile

CHUNK = 1 << 20


def safe_member_path(root: str, name: str) -> str:
    """Where a tar member may land: inside `root`, never absolute, never through `..`. A name already in plain
    form (what a stage produces) is joined as it is: no split or normpath per file on a 5,800-file link."""
    if is_plain_relpath(name):
        return root + "/" + name
    if name.startswith("/") or ".." in name.split("/") or "\0" in name:
        raise Refused("unsafe", "refusing tar member " + repr(name) + ": absolute or '..' path")
    return os.path.join(root, os.path.normpath(name))


def no_symlink_parent(root: str, path: str) -> None:
    """A member must not be written THROUGH a symlink an earlier member created."""
    folder = os.path.dirname(path)
    while len(folder) > len(root):
        if os.path.islink(folder):
            raise Refused("unsafe", "refusing to write through symlink " + repr(os.path.relpath(folder, root)))
        folder = os.path.dirname(folder)


def write_member(archive: tarfile.TarFile, member: tarfile.TarInfo, path: str) -> str:
    """Write one regular file, hashing it on the way; returns its sha256."""
    import hashlib

    digest = hashlib.sha256()
    source = archive.extractfile(member)
    if source is None:
        raise Refused("unsafe", "tar member " + repr(member.name) + " has no content")
    with open(path, "wb") as handle:
        for block in iter(lambda: source.read(CHUNK), b""):
            digest.update(block)
            handle.write(block)
    os.chmod(path, host_mode(member.mode))
    os.utime(path, ns=(int(member.mtime * 1e9), int(member.mtime * 1e9)))
    return digest.hexdigest()


def extract_python(stream: object, root: str, known: dict[tuple[int, int, int], str]) -> set[str]:
    """Unpack the tar stream into root (regular files, folders, safe symlinks); returns the names received."""
    import tarfile

    received = set()
    with tarfile.open(fileobj=stream, mode="r|") as archive:  # type: ignore[call-overload]
        for member in archive:
            path = safe_member_path(root, member.name)
            name = os.path.relpath(path, root)
            if name == ".":
                continue
            no_symlink_parent(root, path)
            if os.path.lexists(path) and not member.isdir():
                raise Refused("unsafe", "refusing tar member " + repr(member.name) + ": it is in the stream twice")
            if member.isdir():
                os.makedirs(path, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if member.issym():
                check_symlink(root, name, member.linkname)
                os.symlink(member.linkname, path)
            elif member.isreg():
                sha = write_member(archive, member, path)
                info = os.lstat(path)
                known[(info.st_ino, info.st_size, info.st_mtime_ns)] = sha
            else:
                raise Refused("unsafe", "refusing tar member " + repr(member.name) + ": not a file, folder or symlink")
            received.add(name)
    return received


def is_plain_relpath(name: str) -> bool:
    """A relative path already in normal form with no `..`, `.` or empty part (what a stage produces): joining
    it needs no normpath. Anything else takes the full check."""
    return bool(name) and not (
        name[0] in "/." or name[-1] == "/" or "//" in name or ("/." in name and has_dot_part(name)) or "\0" in name
    )


def has_dot_part(name: str) -> bool:
    return any(part in (".", "..") for part in name.split("/"))
