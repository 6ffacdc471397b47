"""A push's diff made before the host names its base: while the host still starts its shell.

Why: a one-line patch's push waits for the host's listing (which release is the base?), then loads that base's
files map from the local tree cache (~3.5 ms for 5,800 files) and diffs the stage against it (~3 ms), all on the
push's path. The base is nearly always the tree pushed last from this machine, which the client can diff against
during the ~0.1 s the host takes to start its login shell and interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specops.build.stage import StagedBuild
from specops.build.tree_cache import newest_tree
from specops.commands import release as cmd


@dataclass(frozen=True)
class BaseGuess:
    """The push's diff against the tree pushed last from this machine, made while the host still starts its
    shell, before its listing names the real base; used only when that base has exactly this tree hash (the
    files map is content-addressed, so the diff is the one the push would make)."""

    tree_hash: str
    files: dict[str, Any]
    names: list[str]

    @classmethod
    def of(cls, staged: StagedBuild) -> BaseGuess | None:
        found = newest_tree()
        return cls(found[0], found[1], cmd.files_to_send(staged.files, found[1])) if found is not None else None
