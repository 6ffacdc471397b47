"""The host's compiled scripts, kept between execs: `load_code(text)` is `compile(text)` that remembers.

Why: the host's Python compiles the whole script on every exec before its first line runs: the release script
(~38 kB, ~11 ms) that starts every push, and the probe (~55 kB, ~15 ms) of every doctor and deploy preflight,
each on the path of the command. Kept as marshal data of (text, filename, code), a script the host has run
before costs one small file read (~0.2 ms). The text travels as always and is compared whole with the one kept,
so what runs is always what was sent; an edit of the script, another Python or another specops is a new file.

Where: `$XDG_CACHE_HOME/specops/host-code/` (else `~/.cache/...`) of the user the script runs as. Code that
runs as that user is only as safe as who can write it, so the file is used only when, like OpenSSH's checks of
`~/.ssh`: every folder from `/` down to it is owned by that user or root and not writable by group or others
(a root-owned sticky folder such as /tmp excepted above the cache), the last folder and the file are that
user's alone (0700, 0600), nothing on the way is a symlink once resolved, and the file is a regular file.
Anything else (a folder someone else could change, no home, a read-only or full disk, a torn or foreign file)
falls back to compiling, as before the cache; errors here never fail the script. Stdlib only, Python 3.8+:
bundled into the runner, and ahead of each cached script (specops/remote/bundle.py: cached_script).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import stat
import sys
from types import CodeType

CODE_FOLDERS = ("specops", "host-code")
KEEP_CODE_FILES = 8  # a few specops versions side by side; the oldest go when a new one is written
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def load_code(text: str, filename: str = "<string>") -> CodeType:
    """`compile(text, filename, "exec")`, from the cache when this exact text was compiled here before."""
    folder = code_folder()
    if folder is None:
        return compile(text, filename, "exec")
    try:
        try:
            name = code_file_name(text, filename)
        except ImportError:  # a Python built without zlib: nothing to name the files by, so no cache
            return compile(text, filename, "exec")
        code = kept_code(folder, name, text, filename)
        if code is None:
            code = compile(text, filename, "exec")
            keep_code(folder, name, (text, filename, code))
        return code
    finally:
        os.close(folder)


def code_file_name(text: str, filename: str) -> str:
    """Names part versions (interpreter build, text): the whole text is compared on reading anyway."""
    import zlib

    def crc(value: str) -> int:
        return zlib.crc32(value.encode("utf-8", "surrogateescape"))

    tag = sys.implementation.cache_tag or "python"
    return f"{tag}-{crc(sys.version + chr(0) + filename):08x}-{crc(text):08x}-{len(text)}.code"


def code_folder() -> int | None:
    """A descriptor of the cache folder, created 0700 if missing; None when any folder on the way is unsafe."""
    uid = os.geteuid()
    root = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(root):
        home = os.environ.get("HOME", "")
        if not os.path.isabs(home):
            return None
        root = os.path.join(home, ".cache")
    try:
        folder = _walk(os.path.realpath(root).split("/"), uid)
    except (OSError, ValueError):
        return None  # _step closed every folder it opened
    try:
        info = os.fstat(folder)
        if info.st_uid == uid and not info.st_mode & 0o077:
            return folder
    except OSError:
        pass
    os.close(folder)
    return None


def _walk(names: list[str], uid: int) -> int:
    """The folder at /names.../CODE_FOLDERS, opened one level at a time without following a symlink (the cache
    root and the folders below it made 0700 if missing); PermissionError when one is unsafe."""
    folder = os.open("/", _DIRECTORY_FLAGS)
    if not _safe_folder(os.fstat(folder), uid):
        os.close(folder)
        raise PermissionError("unsafe folder /")
    names = [name for name in names if name]
    for name in names[:-1]:
        folder = _step(folder, name, uid, create=False)
    for name in [*names[-1:], *CODE_FOLDERS]:  # ~/.cache itself may not exist yet on a fresh host
        folder = _step(folder, name, uid, create=True)
    return folder


def _step(parent: int, name: str, uid: int, create: bool) -> int:
    """`name` inside the open folder `parent` (closed here), made 0700 first when `create` and missing."""
    try:
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o700, dir_fd=parent)
        child = os.open(name, _DIRECTORY_FLAGS, dir_fd=parent)
    finally:
        os.close(parent)
    if not _safe_folder(os.fstat(child), uid):
        os.close(child)
        raise PermissionError("unsafe folder " + name)
    return child


def _safe_folder(info: os.stat_result, uid: int) -> bool:
    """Owned by this user or root; nobody else may write in it, except in a root-owned sticky folder (/tmp),
    where others cannot rename or remove what is not theirs."""
    if info.st_uid not in (uid, 0):
        return False
    return not info.st_mode & 0o022 or (info.st_uid == 0 and bool(info.st_mode & stat.S_ISVTX))


def kept_code(folder: int, name: str, text: str, filename: str) -> CodeType | None:
    """The kept code of exactly this text, or None (missing, not this user's alone, torn, another text)."""
    try:
        handle = os.open(name, _FILE_FLAGS, dir_fd=folder)
    except OSError:
        return None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
            return None
        kept = marshal.loads(_read_all(handle, info.st_size))
    except (OSError, ValueError, EOFError, TypeError):
        return None
    finally:
        os.close(handle)
    if isinstance(kept, tuple) and len(kept) == 3 and kept[0] == text and kept[1] == filename:
        return kept[2] if isinstance(kept[2], CodeType) else None
    return None


def _read_all(handle: int, size: int) -> bytes:
    parts: list[bytes] = []
    while True:
        part = os.read(handle, max(size, 65536))
        if not part:
            return b"".join(parts)
        parts.append(part)


def keep_code(folder: int, name: str, record: tuple[str, str, CodeType]) -> None:
    """Write the record 0600 under a temporary name, then rename it in place: a reader sees all of a file or
    none. The oldest files beyond KEEP_CODE_FILES go. Any failure leaves nothing behind and is not an error."""
    temporary = f"{name}.{os.getpid()}.tmp"
    try:
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=folder)
        try:
            data = memoryview(marshal.dumps(record))
            while data:
                data = data[os.write(handle, data) :]
        finally:
            os.close(handle)
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
        _prune(folder)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder)


def _prune(folder: int) -> None:
    found: list[tuple[int, str]] = []
    for name in os.listdir(folder):
        if name.endswith(".code"):
            found.append((os.stat(name, dir_fd=folder, follow_symlinks=False).st_mtime_ns, name))
    for _, name in sorted(found, reverse=True)[KEEP_CODE_FILES:]:
        os.unlink(name, dir_fd=folder)
