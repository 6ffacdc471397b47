"""The shape of a deploy's plan: steps, each with the host commands it runs, and how they are shown.

Why one model: `specops deploy` executes these steps and `specops deploy --dry-run` prints them, so what an
operator reads before a deploy is what the deploy then does. A command is kept as its argv (the words the
Host quotes once, with shlex, when it sends them); it is shown the same way, except that an inline script
(a word with a newline: the release, lock or audit script) is shown by size and hash, and a secret word
(specops.config.secrets.Secret: the lock token) as ***. File contents are never shown, only what they are:
the env file's secrets stay on this machine until they are written, 0600, on the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from specops.commands.config_change import ConfigChange
from specops.commands.planned import SCRIPT_MARK as SCRIPT_MARK  # the command model, re-exported
from specops.commands.planned import HostCommand as HostCommand
from specops.commands.planned import Times as Times
from specops.commands.planned import command_line as command_line
from specops.commands.planned import shown_argv as shown_argv
from specops.commands.planned import shown_word as shown_word


class Condition(StrEnum):
    """When a step runs: the plan is decided before preflight and the gates, so it holds both branches."""

    ALWAYS = "always"
    CHECKS_PASS = "checks-pass"  # preflight passed (or --force)
    GATES_PASS = "gates-pass"
    GATES_FAIL = "gates-fail"


class Passed(Protocol):
    @property
    def passed(self) -> bool: ...


def step_applies(when: Condition, checks_ok: bool, gates: Passed | None) -> bool:
    """Whether a step of this branch runs, once the checks (or a hook, or the stop) and the gates have spoken."""
    passed = gates is not None and gates.passed
    return {
        Condition.ALWAYS: True,
        Condition.CHECKS_PASS: checks_ok,
        Condition.GATES_PASS: checks_ok and passed,
        Condition.GATES_FAIL: checks_ok and gates is not None and not passed,
    }[when]


class Action(StrEnum):
    DEPLOY = "deploy"
    UNCHANGED = "unchanged"
    START = "start"  # the same build, verified, but its engine is not active: start it through the gates
    RESTART = "restart"  # `specops restart`: the current release, drained and started through the gates


class Handler(StrEnum):
    """What runs a step (specops/deploy/execute.py): the step names its handler, so a step is defined once, in
    the plan, with its commands. OUTSIDE: done around the step loop (the lock, the read, the record)."""

    OUTSIDE = "outside"
    PUSH = "push"
    PREFLIGHT = "preflight"
    DIST_PORT = "dist_port"  # a rank of a multi-node engine: the dist port test, every rank at once
    PRE_STOP = "pre_stop"
    ENV = "env"
    UNIT = "unit"
    ARM = "arm"
    DISARM = "disarm"
    SWITCH = "switch"
    STOP = "stop"
    GATES = "gates"
    VERIFIED = "verified"
    FAILED = "failed"
    ROLLBACK = "rollback"
    WATCH = "watch"
    POST_START = "post_start"
    STARTED = "started"
    START_FAILED = "start_failed"


@dataclass(frozen=True)
class Step:
    """One step of a deploy. `phase`: the phase its events and timing carry (None: a step without a phase line,
    as arming the guard or recording the gates); `when`: the branch it belongs to."""

    name: str
    summary: str
    commands: tuple[HostCommand, ...] = ()
    when: Condition = Condition.ALWAYS
    phase: str | None = None
    handler: Handler = Handler.OUTSIDE

    def part(self, role: str) -> tuple[HostCommand, ...]:
        """The step's commands of one role (HostCommand.role), in order: what a handler runs for that part."""
        return tuple(command for command in self.commands if command.role == role)

    def to_json(self) -> dict[str, Any]:
        return {"step": self.name, "summary": self.summary, "when": str(self.when),
                "commands": [command.to_json() for command in self.commands]}  # fmt: skip


@dataclass(frozen=True)
class PushPlan:
    send_files: int
    total_files: int
    base: str | None  # the release the host hard-links unchanged files from (None: everything is sent)


@dataclass(frozen=True)
class HostSteps:
    """One host's plan: what it decided (and why) and the steps in order, both branches included."""

    host: str
    profile: str
    action: Action
    reason: str
    current: str | None
    release: str  # the release that serves if the deploy is verified (the current one when unchanged)
    rollback_to: str | None
    guard: bool
    push: PushPlan | None
    unit_changed: bool
    unit_diff: str
    steps: tuple[Step, ...] = field(default=())
    config: ConfigChange = field(default_factory=ConfigChange)  # against the current release (secret values masked)

    def step(self, name: str) -> Step | None:
        return next((step for step in self.steps if step.name == name), None)

    def to_json(self) -> dict[str, Any]:
        push = (
            None
            if self.push is None
            else {"send_files": self.push.send_files, "total_files": self.push.total_files, "base": self.push.base}
        )
        return {
            "host": self.host, "profile": self.profile, "action": str(self.action), "reason": self.reason,
            "current": self.current, "release": self.release, "rollback_to": self.rollback_to,
            "guard": self.guard, "push": push, "unit_changed": self.unit_changed, "unit_diff": self.unit_diff,
            "config_changed": {"unit": self.config.unit, "env": list(self.config.env)},
            "steps": [step.to_json() for step in self.steps],
        }  # fmt: skip
