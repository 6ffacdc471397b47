"""A host command as a deploy's plan holds it: built once, shown by `--dry-run`, run by the deploy.

Why here, below the plan and the executors: the plan (specops/deploy/) builds these objects and the code that
runs a step (specops/ops/, specops/deploy/) executes the very same objects (specops/ops/planned.py), so a
command line is written once. A `put`'s content is never part of the object: `stdin` says what it is in words
(the env file's secrets stay out of every plan), and the executor hands the bytes over when it runs it.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from specops.host.base import put_argv

SCRIPT_MARK = "<script"


class Times(StrEnum):
    """How often a planned command runs: the plan cannot know how long a readiness wait polls."""

    ONCE = "once"
    IF_NEEDED = "if-needed"  # zero or one time; the command's note says when
    REPEATED = "repeated"  # one or more times in a row (a poll)
    BACKGROUND = "background"  # any number of times, beside the other steps (the lock's heartbeat)


@dataclass(frozen=True)
class HostCommand:
    """One command a step runs on the host: a plain command (`run`), a file written atomically (`put`), or the
    one exec (`conversation`) that every later `run` and `put` of the deploy is sent over as a request."""

    argv: tuple[str, ...]
    kind: Literal["run", "put", "conversation"] = "run"
    path: str = ""  # put: the file written
    mode: int | None = None  # put: its mode
    stdin: str = ""  # what the command reads on stdin, in words (never a secret's value)
    times: Times = Times.ONCE
    note: str = ""
    role: str = ""  # which part of its step it is, for the step's handler (never shown: the argv says it)

    @property
    def shown(self) -> str:
        return command_line(self.argv)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "command": self.shown, "argv": shown_argv(self.argv), "times": str(self.times),
            "path": self.path or None, "mode": f"{self.mode:04o}" if self.mode is not None else None,
            "stdin": self.stdin or None, "note": self.note or None,
        }  # fmt: skip


def run(argv: list[str], *, stdin: str = "", times: Times = Times.ONCE, note: str = "", role: str = "") -> HostCommand:
    return HostCommand(tuple(argv), stdin=stdin, times=times, note=note, role=role)


def put(path: str, mode: int, content: str, *, times: Times = Times.ONCE, role: str = "") -> HostCommand:
    """A file written atomically (temp file, chmod, rename), as every Host's `put` does it; `content`: what the
    file holds, in words (or the text itself when it holds no secret)."""
    return HostCommand(
        tuple(put_argv(path, mode)), kind="put", path=path, mode=mode, stdin=content, times=times, role=role
    )


def shown_word(word: str) -> str:
    """A word as people see it: an inline script by size and hash, a Secret as *** (its str)."""
    text = str(word)
    if "\n" in text:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
        return f"{SCRIPT_MARK}: {len(text.encode('utf-8'))} bytes, sha256 {digest}>"
    return text


def shown_argv(argv: Sequence[str]) -> list[str]:
    return [shown_word(word) for word in argv]


def command_line(argv: Sequence[str]) -> str:
    """The command as the Host sends it (shlex-quoted words), with scripts and secrets shown as above."""
    words = shown_argv(argv)
    return " ".join(word if word.startswith(SCRIPT_MARK) else shlex.quote(word) for word in words)
