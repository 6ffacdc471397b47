"""Host side of a push: GNU tar extracts the stream while this process sha256s every file as it passes.

Part of the host-side script (see release_remote.py): stdlib only, Python 3.8+. Why: a full push used to let
tar write 110 MB and then read all of it back to check the tree hash (~0.3 s, docs/performance.md "## Push").
Here the receive reads stdin itself and hands every block first to tar's stdin, then to a small tar header
reader (TarHasher) that sha256s each member's content, so the content is hashed while tar writes it.

The check stays real: a streamed sha256 is used only for the file tar left at that member's path with the
member's exact size and mtime (anything else is read back), and the tree hash over every file of the release
is still compared before `unfinished` goes. What it trusts: that GNU tar writes what the stream carries (the
old check trusted the page cache the same way); the reader follows only plain headers and stops at anything
else, so the two cannot read one push stream differently.
"""

from __future__ import annotations

import contextlib
import os
from typing import IO, Any

from specops.remote.release.hostdata import Refused

CHUNK = 1 << 16  # what one read of sshd's pipe gives; measured: 64 KB beats 1 MB (tar starts sooner)
BLOCK = 512
F_SETPIPE_SZ = 1031
PIPE_BYTES = 1 << 20
ZERO_BLOCK = bytes(BLOCK)
CONTENT_TYPES = (b"0", b"\0")  # plain regular files: hashed
SKIPPED_TYPES = (b"1", b"2", b"5", b"K")  # hard link, symlink, folder, GNU long link name: nothing to hash
LONG_NAME = b"L"  # GNU: the next member's name is this member's content


def tar_number(field: bytes) -> int:
    """A numeric header field: octal text, or GNU base-256 (high bit set; negative values are refused)."""
    if field[0] & 0x80:
        if field[0] != 0x80:
            raise ValueError("negative or oversized tar number")
        return int.from_bytes(field[1:], "big")
    return int(field.split(b"\0", 1)[0].strip() or b"0", 8)


def member_relpath(name: str) -> str | None:
    """The path tar writes a member to, relative to the release; None for a name that is not plainly inside."""
    path = os.path.normpath(name)
    if name.startswith("/") or path == "." or path == ".." or path.startswith("../"):
        return None
    return path


class TarHasher:
    """A push-style tar parser for the bytes on their way to GNU tar: sha256 of each plain regular member.

    Why not tarfile: its per-header Python work (~40 us) doubled the cost of hashing 5,800 members. This reads
    only what GNU tar writes for a push (ustar/GNU headers, GNU long names) and, on anything else (a pax header,
    a sparse file, a bad checksum), stops: the files it did not hash are simply read back from disk."""

    def __init__(self) -> None:
        import hashlib  # here, not at the top: only a receive hashes (script.LAZY_IMPORTS)

        self.new_digest = hashlib.sha256
        self.found: dict[str, tuple[int, int, str]] = {}  # relpath -> (size, mtime_ns, sha256) as streamed
        self.active = True
        self.header = bytearray()
        self.remaining = 0  # bytes of the current member still to come, padding included
        self.content_left = 0  # of which content (not padding)
        self.digest: Any = None
        self.long_name: bytearray | None = None
        self.next_name: bytes | None = None
        self.member: tuple[bytes, int, int] | None = None  # (name, size, mtime)

    def feed(self, data: bytes) -> None:
        if not self.active:
            return
        try:
            self._feed(memoryview(data))
        except (ValueError, IndexError):
            self.active = False

    def _feed(self, view: memoryview) -> None:
        while view and self.active:
            if self.remaining:
                take = min(self.remaining, len(view))
                self._content(view[:take])
                view, self.remaining = view[take:], self.remaining - take
                if not self.remaining:
                    self._member_done()
                continue
            take = min(BLOCK - len(self.header), len(view))
            self.header += view[:take]
            view = view[take:]
            if len(self.header) == BLOCK:
                header = bytes(self.header)
                self.header.clear()
                self._start_member(header)

    def _start_member(self, header: bytes) -> None:
        if header == ZERO_BLOCK:
            self.active = False  # end of archive
            return
        if tar_number(header[148:156]) != sum(header[:148]) + 256 + sum(header[156:]):
            raise ValueError("tar header checksum mismatch")
        kind, size = header[156:157], tar_number(header[124:136])
        name = header[:100].split(b"\0", 1)[0]
        if header[257:263] == b"ustar\x00" and header[345] != 0:
            name = header[345:500].split(b"\0", 1)[0] + b"/" + name
        name, self.next_name = (self.next_name or name), None
        if kind not in CONTENT_TYPES + SKIPPED_TYPES + (LONG_NAME,):
            raise ValueError("a tar member this reader does not follow")
        self.digest = self.new_digest() if kind in CONTENT_TYPES else None
        self.long_name = bytearray() if kind == LONG_NAME else None
        self.member = (name, size, tar_number(header[136:148]))
        self.content_left, self.remaining = size, size + (-size % BLOCK)
        if not self.remaining:
            self._member_done()

    def _content(self, view: memoryview) -> None:
        data = view[: self.content_left]
        self.content_left -= len(data)
        if self.digest is not None:
            self.digest.update(data)
        elif self.long_name is not None:
            self.long_name += data

    def _member_done(self) -> None:
        if self.long_name is not None:
            self.next_name = bytes(self.long_name).split(b"\0", 1)[0]
        elif self.digest is not None and self.member is not None:
            name, size, mtime = self.member
            relpath = member_relpath(name.decode("utf-8", "surrogateescape"))
            if relpath is not None:
                self.found[relpath] = (size, mtime * 1_000_000_000, self.digest.hexdigest())
        self.digest = self.long_name = self.member = None


def pump(source: IO[bytes], sink: IO[bytes], hasher: TarHasher) -> None:
    """Every block from `source` to `sink` (tar) first, then to the hasher, so tar works while this hashes. If
    tar goes away (it refused the stream), the rest is still read; tar's exit status reports the refusal."""
    read = getattr(source, "read1", source.read)
    sink_open = True
    while True:
        block = read(CHUNK)
        if not block:
            return
        if sink_open:
            try:
                sink.write(block)
            except (BrokenPipeError, ValueError):
                sink_open = False
        hasher.feed(block)


def widen_pipe(stream: object) -> None:
    """Grow a pipe's kernel buffer to PIPE_BYTES (Linux; anything else is left as it is): with 64 KiB, each block
    waits for tar to take it before it can be hashed, serialising the two; with 1 MiB they overlap."""
    import fcntl

    with contextlib.suppress(OSError, ValueError, AttributeError):
        fcntl.fcntl(stream.fileno(), F_SETPIPE_SZ, PIPE_BYTES)  # type: ignore[attr-defined]


def extract_with_tar(root: str, source: IO[bytes]) -> dict[str, tuple[int, int, str]]:
    """GNU tar unpacks `source` into root while the same bytes are hashed here; returns the streamed hashes.
    tar's own refusals (`..` members, a file twice) fail the receive as unsafe, as before.

    `--no-same-permissions`: as root GNU tar would otherwise give each file the build's mode from the first
    byte (a 0666 file, a 0777 folder, a setuid file); with it, under the script's umask 022, files land 0644 or
    0755 and folders 0755, setuid/setgid/sticky dropped, before the final scan normalises anything."""
    import subprocess  # here, not at the top: `list` and the other ops never need them (each exec imports anew)
    import tempfile

    argv = ["tar", "-x", "-f", "-", "-C", root, "--no-same-owner", "--no-same-permissions", "--keep-old-files",
            "--delay-directory-restore"]  # fmt: skip
    hasher = TarHasher()
    with tempfile.TemporaryFile() as errors:  # a file, not a pipe: tar's complaints can never block it
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=errors)
        assert process.stdin is not None
        widen_pipe(process.stdin)
        widen_pipe(source)
        pump(source, process.stdin, hasher)
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
        code = process.wait()
        errors.seek(0)
        message = errors.read().decode("utf-8", "replace").strip()[-500:]
    if code != 0:
        raise Refused("unsafe", "tar refused the stream: " + message)
    return hasher.found
