"""The SGLang-compatible TEST ENGINE that tests deploy as a "build", and its two patches.

`BUILD_PYTHON` is laid out like an sglang checkout's `python/` folder (`sglang/...` inside). The
patches are unified diffs against that folder, applied from inside it with `patch -p1` (or
`git apply`, whose default is -p1):

* `DDTREE_PATCH`: the one-line fix making `SpeculativeAlgorithm.is_dflash()` true for DDTREE, so a
  DDTREE launch captures the target's aux hidden states (without it: feature-dim mismatch, `!!!!`).
* `RENUMBER_PATCH`: inserts DSPARK after DDTREE, shifting the `auto()` values of the later members
  (for the doctor's enum-stability check). The two patches touch separate hunks and apply in any order.
* `SAMPLING_LOOP_PATCH`: breaks the build the way a sampling bug does: answers at temperature > 0 decode a
  repetition loop, greedy ones stay fine (sglang/srt/sampling.py). Applies with either of the others.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

ENGINE_DIR = Path(__file__).resolve().parent
BUILD_PYTHON = ENGINE_DIR / "build" / "python"
DDTREE_PATCH = ENGINE_DIR / "ddtree.patch"
RENUMBER_PATCH = ENGINE_DIR / "renumber.patch"
SAMPLING_LOOP_PATCH = ENGINE_DIR / "sampling_loop.patch"


def copy_build(dest: Path, patches: Iterable[Path] = ()) -> Path:
    """Copy the build's `python/` folder to dest (no caches) and apply patches with `patch -p1`."""
    shutil.copytree(BUILD_PYTHON, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for patch_file in patches:
        subprocess.run(
            ["patch", "-p1", "--forward", "--batch", "--silent", "-i", str(patch_file)],
            cwd=dest,
            check=True,
            capture_output=True,
            text=True,
        )
    return dest
