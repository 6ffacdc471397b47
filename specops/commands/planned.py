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
from dataclasses import dataclass, replace
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

    @property
    def slots(self) -> tuple[Slot, ...]:
        """The run-time words this command holds, in the order of their first word."""
        return tuple(slot for slot in SLOTS.values() if any(slot.held_by(word) for word in self.argv))

    def filled(self, **values: str | Sequence[str]) -> HostCommand:
        """This command with its slots filled (a slot's name = its value): the only words a run may add to what
        the plan printed. A value for a slot the command does not hold is a mistake of its executor (ValueError):
        it would run a command the plan never showed. A whole-word slot filled with a sequence becomes its words
        (the processes a reap stops); a Secret mark is filled with a Secret (shown *** like the plan)."""
        known = {slot.name for slot in self.slots}
        if wrong := sorted(set(values) - known):
            raise ValueError(f"{self.shown}: no slot {', '.join(wrong)} to fill (it holds {sorted(known) or 'none'})")
        words: list[str] = []
        for word in self.argv:
            slot = next((SLOTS[name] for name in values if SLOTS[name].held_by(word)), None)
            words += [word] if slot is None else slot.fill(word, values[slot.name])
        return replace(self, argv=tuple(words))

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "command": self.shown, "argv": shown_argv(self.argv), "times": str(self.times),
            "path": self.path or None, "mode": f"{self.mode:04o}" if self.mode is not None else None,
            "stdin": self.stdin or None, "note": self.note or None,
        }  # fmt: skip


@dataclass(frozen=True)
class Slot:
    """A word a plan cannot know (the gates' cause, the journal's cursor, the compile cache's key...): the plan
    shows `mark` in its place and the step's executor fills it (HostCommand.filled). `whole`: the mark is a word
    of its own (else it sits inside a word, as the cause inside the rollback's reason)."""

    name: str
    mark: str
    whole: bool = False

    def held_by(self, word: str) -> bool:
        return str.__str__(word) == self.mark if self.whole else self.mark in str.__str__(word)

    def fill(self, word: str, value: str | Sequence[str]) -> list[str]:
        if isinstance(value, str):
            filled = str.__str__(word).replace(self.mark, str.__str__(value)) if not self.whole else value
            return [type(word)(filled) if type(word) is not str else filled]  # a Secret mark stays a Secret
        if not self.whole:
            raise ValueError(f"slot {self.name} sits inside a word: fill it with one word")
        return [str(item) for item in value]


# The slots of the deploy's commands, by name; each mark is what the dry run prints in the slot's place.
SLOTS = {slot.name: slot for slot in (
    Slot("cause", "<the gates' cause>"),  # the rollback's reason: why the gates failed
    Slot("key", "<torch>-<cuda>-<arch>"),  # the compile cache's key, from the preflight's facts
    Slot("cursor", "<cursor>", whole=True),  # the journal's end read right before a restart
    Slot("since", "--after-cursor", whole=True),  # ... or, on a host whose journal is empty, --since its clock
    Slot("dead", "deadholder", whole=True),  # the token of a lock holder proven dead here (a Secret: ***)
    Slot("processes", "PID:START:INVOCATION_ID", whole=True),  # the orphans a reap stops
)}  # fmt: skip


def by_role(commands: Sequence[HostCommand]) -> dict[str, HostCommand]:
    """A step's commands by their part (HostCommand.role; those without one left out): how an executor picks
    the planned objects it runs out of a step that holds other commands too."""
    return {command.role: command for command in commands if command.role}


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
