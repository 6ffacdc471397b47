"""Compare a plan's commands (its --json form) with the calls a deploy made on a host, in order.

A planned command matches a recorded one when its kind and words are equal, where a planned word may hold a
placeholder for what is only known while the deploy runs: the lock token (shown ***), the journal cursor,
the gates' cause, the compile cache's key. `times` says how often a command may occur: once, if-needed (0-1), repeated (1+), or in
the background (the lock's heartbeat: anywhere, any number of times).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from specops.commands.cache import KEY_PLACEHOLDER
from specops.commands.journal import CURSOR_PLACEHOLDER
from specops.config.secrets import MASK
from specops.deploy.step_commands import CAUSE_PLACEHOLDER
from specops.deploy.steps import shown_argv
from specops.host.recording import Call

PLACEHOLDERS = (MASK, CURSOR_PLACEHOLDER, CAUSE_PLACEHOLDER, KEY_PLACEHOLDER)
Command = dict[str, Any]


def planned(host_plan: dict[str, Any], branches: Sequence[str] = ("always", "checks-pass", "gates-pass"),
            upto: str | None = None, then: Sequence[str] = ()) -> list[Command]:  # fmt: skip
    """The commands of the steps in `branches`, in order; with `upto`, only until that step (included), and
    then the steps named in `then` (a deploy stopped early still releases its lock)."""
    steps = [step for step in host_plan["steps"] if step["when"] in branches]
    if upto is not None:
        names = [step["step"] for step in steps]
        steps = steps[: names.index(upto) + 1] + [step for step in steps if step["step"] in then]
    return [command for step in steps for command in step["commands"]]


def recorded(calls: Sequence[Call]) -> list[Command]:
    """What a host saw: its command conversation, commands and file writes (tunnels and reads through get() are not host commands)."""
    found = []
    for call in calls:
        if call.kind in ("run", "conversation"):
            found.append({"kind": call.kind, "argv": shown_argv(call.argv)})
        elif call.kind == "put":
            found.append({"kind": "put", "path": call.path, "mode": f"{call.mode or 0:04o}"})
    return found


def word_matches(planned_word: str, actual: str) -> bool:
    if planned_word == actual:
        return True
    if not any(mark in planned_word for mark in PLACEHOLDERS):
        return False
    pattern = re.escape(planned_word)
    for mark in PLACEHOLDERS:
        pattern = pattern.replace(re.escape(mark), ".+")
    return re.fullmatch(pattern, actual, flags=re.DOTALL) is not None


def same(plan: Command, call: Command) -> bool:
    if plan["kind"] != call["kind"]:
        return False
    if plan["kind"] == "put":
        return bool(plan["path"] == call["path"] and plan["mode"] == call["mode"])
    words = plan["argv"]
    return len(words) == len(call["argv"]) and all(map(word_matches, words, call["argv"]))


def follows(plan: list[Command], calls: list[Command]) -> bool:
    background = [command for command in plan if command["times"] == "background"]
    calls = [call for call in calls if not any(same(command, call) for command in background)]
    steps = [command for command in plan if command["times"] != "background"]
    return _match(steps, calls, 0, 0)


def _match(plan: list[Command], calls: list[Command], i: int, j: int) -> bool:
    if i == len(plan):
        return j == len(calls)
    command, times = plan[i], plan[i]["times"]
    if times == "if-needed" and _match(plan, calls, i + 1, j):
        return True
    if times == "repeated":
        end = j
        while end < len(calls) and same(command, calls[end]):
            end += 1
        return any(_match(plan, calls, i + 1, k) for k in range(end, j, -1))
    return j < len(calls) and same(command, calls[j]) and _match(plan, calls, i + 1, j + 1)


def explain(plan: list[Command], calls: list[Command]) -> str:
    """Both lists, for an assertion message."""
    shown = ["planned:"] + [f"  [{c['times']}] {c.get('path') or ' '.join(c['argv'])[:150]}" for c in plan]
    shown += ["recorded:"] + [f"  {c.get('path') or ' '.join(c['argv'])[:150]}" for c in calls]
    return "\n".join(shown)
