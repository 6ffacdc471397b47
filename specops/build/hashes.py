"""The local file-hash cache: re-staging an unchanged 126 MB tree must not re-read it.

Keyed by (path, size, mtime_ns, ctime_ns, device, inode), like git's index. ctime is what catches an in-place
rewrite that keeps the inode, the size and the mtime (`cp -p` or `rsync --inplace -t` over a build file): without
it the cache would hand back the old content's sha, and the host would link the old file under a tree hash that
verifies. A file modified less than RACY_WINDOW_S ago is hashed but not cached: a write in the same timestamp tick
could otherwise go unseen.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from specops.localdirs import cache_root
from specops.remote.release.script import file_sha256

MAX_ENTRIES = 50_000
RACY_WINDOW_S = 2.0


def default_cache_file() -> Path:
    """The file-hash cache, in specops's cache folder."""
    return cache_root() / "hashes.json"


class HashCache:
    """sha256 of files by stat key; `hits`/`misses` say how much reading was saved."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.hits = 0
        self.misses = 0
        self._old = _load(path)
        self._used: dict[str, str] = {}

    def sha256(self, path: str, info: os.stat_result) -> str:
        key = f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ctime_ns}\0{info.st_dev}\0{info.st_ino}"
        cached = self._used.get(key) or self._old.get(key)
        if cached is not None:
            self.hits += 1
            self._used[key] = cached
            return cached
        self.misses += 1
        digest = file_sha256(path)  # the host's own hasher: both ends hash a file the same way
        if time.time() - info.st_mtime_ns / 1e9 > RACY_WINDOW_S:
            self._used[key] = digest
        return digest

    def save(self) -> None:
        """Write this run's entries plus the newest old ones (bounded), atomically; a cache that cannot be
        written only costs speed, so errors are ignored."""
        merged = dict(self._old)
        for key in self._used:
            merged.pop(key, None)
        entries = list(merged.items())[-max(0, MAX_ENTRIES - len(self._used)) :] if merged else []
        entries += list(self._used.items())
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_name(f"{self.path.name}.tmp-{os.getpid()}")
            temporary.write_text(json.dumps(dict(entries)), encoding="utf-8")
            os.replace(temporary, self.path)


def _load(path: Path) -> dict[str, str]:
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}
