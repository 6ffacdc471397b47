"""The host side of a push (`receive`), and the script's entry point; bundled after release_remote.py.

Why GNU tar when the host has it: Python's tarfile costs ~2x GNU tar per member on a 5,800-file tree, and the
stream goes straight from sshd to tar (never through Python). Safety does not depend on it: tar refuses
`..` members and defers dangerous symlinks; afterwards every symlink is checked to stay inside the release
and every other entry must be a regular file or a folder, before the tree hash decides. Without tar (or with
extractor "python") the stdlib reader below is used, which checks each member BEFORE writing it.

Hard-linked files are re-read for the tree hash unless `<service_dir>/.verified-hashes.json` vouches for them:
it maps an inode to (size, mtime_ns, sha256) as verified at the end of the last push; a file edited in place
since then has a new mtime (the same quick check as rsync's) and is hashed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable
from typing import Any

from specops.commands.release_remote import (
    UNFINISHED,
    Refused,
    check_symlink,
    differences,
    entries_hash,
    op_list,
    op_prune,
    op_switch,
    op_update_manifest,
    read_manifest,
    scan_release_dir,
    write_json_atomic,
)
from specops.commands.release_rollback import op_guard, op_rollback

CHUNK = 1 << 20
HASHES_FILE = ".verified-hashes.json"


def safe_member_path(root: str, name: str) -> str:
    """Where a tar member may land: inside `root`, never absolute, never through `..`."""
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
    digest = hashlib.sha256()
    source = archive.extractfile(member)
    if source is None:
        raise Refused("unsafe", "tar member " + repr(member.name) + " has no content")
    with open(path, "wb") as handle:
        for block in iter(lambda: source.read(CHUNK), b""):
            digest.update(block)
            handle.write(block)
    os.chmod(path, member.mode & 0o7777)
    os.utime(path, ns=(int(member.mtime * 1e9), int(member.mtime * 1e9)))
    return digest.hexdigest()


def extract_python(stream: object, root: str, known: dict[tuple[int, int, int], str]) -> set[str]:
    """Unpack the tar stream into root (regular files, folders, safe symlinks); returns the names received."""
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


def extract_with_tar(root: str) -> None:
    argv = ["tar", "-x", "-f", "-", "-C", root, "--no-same-owner", "--keep-old-files", "--delay-directory-restore"]
    done = subprocess.run(argv, stdin=None, capture_output=True, check=False)
    if done.returncode != 0:
        raise Refused("unsafe", "tar refused the stream: " + done.stderr.decode("utf-8", "replace").strip()[-500:])


def present_files(root: str) -> set[str]:
    found: set[str] = set()
    for folder, _dirs, files in os.walk(root):
        prefix = folder[len(root) + 1 :]
        found.update(os.path.join(prefix, name) if prefix else name for name in files)
    return found


def load_verified(service_dir: str) -> dict[str, Any]:
    try:
        with open(os.path.join(service_dir, HASHES_FILE), encoding="utf-8") as handle:
            loaded = json.load(handle)
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def link_unchanged(
    root: str,
    base_dir: str | None,
    manifest: dict[str, Any],
    received: set[str],
    verified: dict[str, Any],
    known: dict[tuple[int, int, int], str],
) -> dict[str, int]:
    """Hard-link every manifest file that was not sent from the base (copy across filesystems); a base file
    whose inode, size and mtime match its verified record needs no re-reading."""
    counts = {"linked": 0, "copied": 0}
    made = set()
    for name, entry in sorted((manifest.get("files") or {}).items()):
        if name in received:
            continue
        if base_dir is None or "link" in entry:
            raise Refused("incomplete", "file " + repr(name) + " was neither sent nor available in a base release")
        source, destination = os.path.join(base_dir, name), safe_member_path(root, name)
        try:
            info = os.lstat(source)
        except OSError:
            raise Refused("incomplete", "file " + repr(name) + " is missing from base release " + base_dir) from None
        record = verified.get(str(info.st_dev) + ":" + str(info.st_ino))
        if record == [info.st_size, info.st_mtime_ns, entry.get("sha256")]:
            known[(info.st_ino, info.st_size, info.st_mtime_ns)] = str(entry.get("sha256"))
        parent = os.path.dirname(destination)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        try:
            os.link(source, destination)
            counts["linked"] += 1
        except OSError:
            shutil.copy2(source, destination)
            counts["copied"] += 1
    return counts


def save_verified(service_dir: str, root: str, entries: dict[str, tuple[str, str]]) -> None:
    records = {}
    for name, (kind, value) in entries.items():
        if kind != "l":
            info = os.lstat(os.path.join(root, name))
            records[str(info.st_dev) + ":" + str(info.st_ino)] = [info.st_size, info.st_mtime_ns, value]
    write_json_atomic(os.path.join(service_dir, HASHES_FILE), records)


def op_receive(
    service_dir: str, release_id: str, base_id: str, expected: str, extractor: str = "auto"
) -> dict[str, Any]:
    releases = os.path.join(service_dir, "releases")
    root = os.path.join(releases, release_id)
    safe_member_path(releases, release_id)
    base_dir = os.path.join(releases, base_id) if base_id else None
    if base_dir is not None and not os.path.isdir(base_dir):
        raise Refused("base", "base release " + base_id + " does not exist on the host")
    os.makedirs(releases, exist_ok=True)
    try:
        os.mkdir(root)
    except FileExistsError:
        raise Refused("exists", "release " + release_id + " already exists on the host") from None
    open(os.path.join(root, UNFINISHED), "w").close()
    known: dict[tuple[int, int, int], str] = {}
    if extractor == "tar" or (extractor == "auto" and shutil.which("tar")):
        extract_with_tar(root)
        received = present_files(root) - {UNFINISHED}
    else:
        received = extract_python(sys.stdin.buffer, root, known)
    manifest = read_manifest(root)
    counts = link_unchanged(root, base_dir, manifest, received, load_verified(service_dir), known)
    entries = scan_release_dir(root, known)
    actual = entries_hash(entries)
    if actual != expected or manifest.get("tree_hash") != expected:
        differing = differences(entries, manifest.get("files") or {})
        raise Refused("mismatch", "tree hash mismatch in " + root, expected=expected, actual=actual, files=differing)
    save_verified(service_dir, root, entries)
    os.unlink(os.path.join(root, UNFINISHED))
    return {"id": release_id, "tree_hash": actual, "received": len(received), **counts}


OPS: dict[str, Callable[..., dict[str, Any]]] = {"list": op_list, "receive": op_receive, "switch": op_switch}
OPS.update({"prune": op_prune, "update-manifest": op_update_manifest})
OPS.update({"rollback": op_rollback, "guard": op_guard})


def main(argv: list[str]) -> int:
    os.umask(0o022)
    try:
        result = OPS[argv[0]](*argv[1:])
    except Refused as error:
        print(json.dumps({"ok": False, "kind": error.kind, "error": str(error), **error.details}))
        return 3
    except (OSError, ValueError, tarfile.TarError) as error:
        print(json.dumps({"ok": False, "kind": type(error).__name__, "error": str(error)}))
        return 3
    print(json.dumps({"ok": True, **result}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
