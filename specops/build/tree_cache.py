"""The files map of every tree pushed from this machine, kept locally by tree hash (the newest KEEP_TREES).

Why: a delta push diffs the stage against its base release's files map; reading it from the host costs a 900 KB
round trip for a 5,800-file tree. The cache is content-addressed (a tree hash names exactly one files map) and
the host verifies every push anyway, so a stale or lost entry can only cost that round trip, never a wrong
release.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from specops.build.hashes import default_cache_file
from specops.build.stage import StagedBuild

KEEP_TREES = 20


def _tree_file(tree_hash: str) -> Path:
    return default_cache_file().parent / "trees" / f"{tree_hash}.json"


def remember_tree(staged: StagedBuild) -> None:
    """Keep the files map of a pushed tree locally (by tree hash), so the next push needs no round trip to
    learn its base; the newest KEEP_TREES are kept. A lost cache only costs that round trip."""
    path = _tree_file(staged.tree_hash)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():  # content-addressed: the same tree hash is the same files map
            path.touch()  # newest again, for the eviction below
        else:
            path.write_text(json.dumps(staged.files), encoding="utf-8")
        folder = path.parent
        for old in sorted(folder.glob("*.json"), key=lambda path: path.stat().st_mtime)[:-KEEP_TREES]:
            old.unlink()


def cached_tree(tree_hash: str | None) -> dict[str, Any] | None:
    if not tree_hash:
        return None
    with contextlib.suppress(OSError, ValueError):
        cached = json.loads(_tree_file(tree_hash).read_text(encoding="utf-8"))
        if isinstance(cached, dict):
            return cached
    return None


def newest_tree() -> tuple[str, dict[str, Any]] | None:
    """(tree hash, files map) of the tree pushed last from this machine: the likeliest base of the next push to
    a host, diffed against before the host has named its base (ops/release.py: BaseGuess). None: none kept."""
    with contextlib.suppress(OSError, ValueError):
        trees = (default_cache_file().parent / "trees").glob("*.json")
        newest = max(trees, key=lambda path: path.stat().st_mtime_ns, default=None)
        if newest is not None:
            files = json.loads(newest.read_text(encoding="utf-8"))
            if isinstance(files, dict):
                return newest.stem, files
    return None
