"""Commands started early (specops/host/ssh/prestart.py) are handed over only as they were asked for."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, cast

from specops.host.ssh.prestart import PrestartedCommands

WORDS = ("/opt/venv/bin/python", "-IS", "-c", "<runner>")


@dataclass
class Command:
    deadline: float
    closed: bool = False

    def close(self) -> None:
        self.closed = True


def started(deadline_in_s: float = 60.0) -> Any:
    return Command(time.monotonic() + deadline_in_s)


def test_the_same_command_is_handed_over_once() -> None:
    waiting = PrestartedCommands()
    command = started()
    waiting.add(WORDS, 120.0, cast(Any, command))
    assert waiting.take(WORDS, 120.0) is command
    assert waiting.take(WORDS, 120.0) is None  # the next caller starts its own


def test_a_longer_host_deadline_is_taken_a_shorter_one_never() -> None:
    waiting = PrestartedCommands()
    command = started()
    waiting.add(WORDS, 130.0, cast(Any, command))
    assert waiting.take(WORDS, 140.0) is None  # a bigger push than the plan allowed for: started anew
    assert waiting.take(WORDS, 125.0) is command


def test_other_words_are_not_this_command() -> None:
    waiting = PrestartedCommands()
    waiting.add(WORDS, 120.0, cast(Any, started()))
    assert waiting.take((*WORDS, "session"), 120.0) is None
    assert waiting.take(WORDS[:-1], 120.0) is None


def test_a_command_past_its_deadline_is_not_handed_over() -> None:
    waiting = PrestartedCommands()
    late = started(deadline_in_s=-1.0)
    waiting.add(WORDS, 120.0, cast(Any, late))
    assert waiting.take(WORDS, 120.0) is None
    assert late.closed


def test_what_nobody_took_is_closed_with_the_connection() -> None:
    waiting = PrestartedCommands()
    taken, left = started(), started()
    waiting.add(WORDS, 120.0, cast(Any, taken))
    waiting.add((*WORDS, "session"), 120.0, cast(Any, left))
    assert waiting.take(WORDS, 120.0) is taken
    waiting.close_all()
    assert (taken.closed, left.closed) == (False, True)
    assert waiting.take((*WORDS, "session"), 120.0) is None
