"""Where specops keeps its files on the operator's machine: caches (built bundles, file hashes, doctor plans)
and state (the local audit log), by the XDG base-directory rule that other command-line tools follow.

Some of these files steer what runs on the hosts: a built host script is sent to every host and run as root, a
remembered connection plan names the hosts and interpreters to start early. Those are kept as *private* files
(`read_private`, `write_private`), trusted only when they are ours: the folder and the file must belong to
the user running specops and be writable by nobody else (the rule OpenSSH applies to ~/.ssh/config), neither
may be a symlink, and the file must carry a tag (an HMAC) made with a key kept in specops's state folder, so a
cache folder copied in from elsewhere (a CI cache restored from another job, a dotfiles sync) is not trusted
either. Anything else is ignored with a one-line warning, and specops does the work the file would have saved.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import hashlib
import hmac
import os
import stat
import sys
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path

TAG_PREFIX = b"specops-tag "  # the first line of a private file: this prefix, the HMAC-SHA256 in hex, "\n"
KEY_NAME = "cache-key"  # in the state folder: the HMAC key (32 random bytes), made on first use
_READ = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_warned: set[str] = set()


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """$XDG_CACHE_HOME/specops, else ~/.cache/specops."""
    return _xdg_root("XDG_CACHE_HOME", (".cache",), os.environ if environ is None else environ)


def state_root(environ: Mapping[str, str] | None = None) -> Path:
    """$XDG_STATE_HOME/specops, else ~/.local/state/specops."""
    return _xdg_root("XDG_STATE_HOME", (".local", "state"), os.environ if environ is None else environ)


def _xdg_root(variable: str, default: tuple[str, ...], environ: Mapping[str, str]) -> Path:
    """The XDG spec says a relative path is invalid and must be ignored: a relative one would put the files
    wherever the command happens to run."""
    base = environ.get(variable, "")
    if os.path.isabs(base):
        return Path(base) / "specops"
    home = Path(environ["HOME"]) if environ.get("HOME") else Path.home()
    return home.joinpath(*default) / "specops"


class Untrusted(OSError):
    """A private folder or file that someone else could have written: its content is not used."""


def warn(message: str) -> None:
    """One line on stderr, once per process for each message (a cache read many times warns once)."""
    if message not in _warned:
        _warned.add(message)
        print(f"warning: {message}", file=sys.stderr)


def _check_ours(status: os.stat_result, path: Path, what: str) -> None:
    """Owned by this user and writable by nobody else (group or others), or Untrusted saying so and what to do."""
    if status.st_uid != os.getuid():
        raise Untrusted(f"{what} {path} belongs to uid {status.st_uid}, not to you (uid {os.getuid()})")
    if status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        mode = oct(stat.S_IMODE(status.st_mode))[2:]
        raise Untrusted(f"{what} {path} is writable by other users (mode {mode}); run `chmod go-w {path}`")


@contextlib.contextmanager
def _private_folder(folder: Path, create: bool, what: str = "cache folder") -> Iterator[int]:
    """The folder, opened without following a symlink and checked (Untrusted), as a descriptor for *at() calls;
    created 0700 (with its parents) when `create` and missing."""
    if create:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        descriptor = os.open(folder, _READ | os.O_DIRECTORY)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):  # a symlink (or a file) in its place
            raise Untrusted(f"{what} {folder} is a symlink or not a folder") from None
        raise
    try:
        _check_ours(os.fstat(descriptor), folder, what)
        yield descriptor
    finally:
        os.close(descriptor)


def read_private(folder: Path, name: str) -> bytes | None:
    """FOLDER/NAME as `write_private` wrote it, or None: missing, unreadable, untrusted (warned about), or its
    tag does not match (another user's or machine's file, or an edited one: warned about)."""
    try:
        with _private_folder(folder, create=False) as directory:
            descriptor = os.open(name, _READ, dir_fd=directory)
            with open(descriptor, "rb") as file:
                _check_ours(os.fstat(file.fileno()), folder / name, "cached file")
                content = file.read()
        tag, _, data = content.partition(b"\n")
        key = _key()
        if key is None:
            return None
        if not hmac.compare_digest(tag, TAG_PREFIX + _tag(key, name, data)):
            raise Untrusted(f"cached file {folder / name} was not written by specops for you (its tag does not match)")
        return data
    except Untrusted as error:
        warn(f"ignored {error}")
    except (OSError, ValueError):
        pass  # missing or unreadable: the work it saves is done again
    return None


def write_private(folder: Path, name: str, data: bytes, siblings: str = "", keep: int = 0) -> None:
    """Keep `data` as FOLDER/NAME: 0600 in a 0700 folder, whole or not at all (an unpredictable temporary name,
    created exclusively, renamed over the old file); then only the `keep` newest files matching `siblings` stay.
    An untrusted folder is warned about and left alone; any other failure only costs the next run its saving."""
    try:
        key = _key()
        if key is None:
            return
        with _private_folder(folder, create=True) as directory:
            temporary = f".{name}.{os.urandom(8).hex()}"  # unpredictable: os.urandom, as `secrets` uses
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _READ, 0o600, dir_fd=directory)
            try:
                with open(descriptor, "wb") as file:
                    file.write(TAG_PREFIX + _tag(key, name, data) + b"\n" + data)
                os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
            except OSError:  # a full disk: no half-written temporary is left behind
                with contextlib.suppress(OSError):
                    os.unlink(temporary, dir_fd=directory)
                raise
            if siblings:
                _prune(directory, siblings, keep)
    except Untrusted as error:
        warn(f"ignored {error}")
    except OSError:
        pass


def _prune(directory: int, pattern: str, keep: int) -> None:
    """Remove all but the `keep` (> 0) newest files named like `pattern`."""
    found = []
    for entry in os.scandir(directory):
        if fnmatch.fnmatch(entry.name, pattern) and entry.is_file(follow_symlinks=False):
            found.append((entry.stat(follow_symlinks=False).st_mtime, entry.name))
    for _, old in sorted(found)[:-keep]:
        with contextlib.suppress(OSError):
            os.unlink(old, dir_fd=directory)


def _tag(key: bytes, name: str, data: bytes) -> bytes:
    """The file's name is part of what is signed: one cached text cannot stand in for another."""
    return hmac.new(key, name.encode() + b"\0" + data, hashlib.sha256).hexdigest().encode()


def _key() -> bytes | None:
    return _key_in(state_root())


@lru_cache(maxsize=4)
def _key_in(folder: Path) -> bytes | None:
    """This user's tag key (FOLDER/cache-key, 0600 in 0700, made on first use), or None when it cannot be
    trusted or kept (then nothing private is read or written)."""
    try:
        with _private_folder(folder, create=True, what="key folder") as directory:
            with contextlib.suppress(FileExistsError):
                made = os.open(KEY_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _READ, 0o600, dir_fd=directory)
                with open(made, "wb") as file:
                    file.write(os.urandom(32))  # what secrets.token_bytes returns
            with open(os.open(KEY_NAME, _READ, dir_fd=directory), "rb") as file:
                _check_ours(os.fstat(file.fileno()), folder / KEY_NAME, "key file")
                key = file.read()
        return key if len(key) == 32 else None
    except Untrusted as error:
        warn(f"ignored {error}")
    except OSError:
        pass
    return None
