"""A doctor's connections, started by the console script before typer is even imported.

Why: for `specops doctor HOST`, everything the process does before its probe reaches the host is time the
operator waits for on top of the host's own work; the command line parser (typer, and the pydantic adapters it
builds for every option) is ~60 ms of it. When the command line is a plain `doctor NAME...` (names and options
that change nothing about what is connected to or how: command_line.py), the config is loaded and the hosts are
connected here; the parsed command then claims that `Examination` instead of starting its own
(`EarlyExamination.claim`, reached through specops/cli/early/start.py: `HeadStart`).

Nothing changes for the operator: the config is validated first (no connection on an invalid config), and any
problem here (an invalid config, an unknown host) only means nothing is started: the parsed command meets the
same problem again and reports it as it always does. A command line this module is unsure of is left alone.

The same command line the next time does not wait for the config's models: the plan of the last run that
validated exactly these inputs (specops/cli/early/plan.py) connects at once, and the parsed command claims those
connections only when the config it validates gives that same plan.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from specops.cli.early.command_line import PlainRun, plain_run

if TYPE_CHECKING:
    from specops.doctor.runner import DoctorTarget, Examination

COMMAND = "doctor"


@dataclass
class EarlyExamination:
    """The examination started for a plain doctor, until the parsed command claims it or it is discarded."""

    targets: list[DoctorTarget]
    examination: Examination
    plan: list[dict[str, Any]] | None = None  # started from a remembered plan (its key), not a validated config
    key: str | None = None

    def wait_connected(self) -> None:
        self.examination.wait_connected()

    def claim(self, targets: list[DoctorTarget], deep: bool) -> Examination | None:
        """This examination when it was started for exactly these targets, else None (then it was waited for
        and dropped, and a plan that no longer matches its inputs is forgotten)."""
        if not deep and self._matches(targets):
            if self.plan is not None:
                self.examination.adopt(targets)  # the checks see the validated hosts and profiles
            return self.examination
        if self.key is not None:  # a plan that no longer matches its inputs: the next run validates first
            from specops.cli.early.plan import forget

            forget(self.key)
        self.discard()
        return None

    def discard(self) -> None:
        """Wait for the examination nobody claimed (the parsed command stopped before it got that far)."""
        with self.examination:
            pass

    def _matches(self, targets: list[DoctorTarget]) -> bool:
        if self.plan is None:
            return _same(self.targets, targets)
        import json

        from specops.cli.early.plan import records
        from specops.errors import SpecopsError

        try:
            fresh = json.loads(json.dumps(records(targets)))
        except (SpecopsError, TypeError, ValueError):  # not inventory hosts, or no probe for them: not this plan
            return False
        return bool(fresh == self.plan)


def plain_doctor(args: list[str]) -> PlainRun | None:
    """The doctor run `args` asks for, when they are nothing but names and options a plain run may carry."""
    return plain_run(args, COMMAND)


def start(args: list[str]) -> EarlyExamination | None:
    """Connect to the hosts of a plain doctor run now; what was started (the caller may wait for its
    `wait_connected()` before loading the rest, so that it does not slow the connections down), or None."""
    plan = plain_doctor(args)
    if plan is None:
        return None
    from specops.cli.early import plan as early_plan

    key = early_plan.plan_key(plan.config_path, plan.names)
    remembered = early_plan.recall(key) if key is not None else None
    if key is not None and remembered is not None:
        return _start_from_plan(key, remembered)
    return _start_from_config(plan)


def _start_from_plan(key: str, plan: list[dict[str, Any]]) -> EarlyExamination:
    from specops.doctor.runner import DoctorTarget, Examination
    from specops.host import plain_opener
    from specops.probe.run import probe_from_request

    targets = [
        DoctorTarget(
            name=record["name"], spec=None, profile=None, python=record["python"],
            open_host=plain_opener(record["name"], record["ssh"], record["jump"], record["sudo_as"]),
            probe=probe_from_request(record["python"], record["request"]),
        )
        for record in plan
    ]  # fmt: skip
    return EarlyExamination(targets, Examination(targets, deep=False), plan, key)


def _start_from_config(plan: PlainRun) -> EarlyExamination | None:
    from specops.cli.state import AppState
    from specops.doctor.runner import Examination, inventory_targets

    app_state = AppState(config_path=plan.config_path)
    try:
        config = app_state.load_config()
        targets = inventory_targets(config, plan.names, False, None, app_state.opener)
    except Exception:  # reported by the parsed command, which meets it again
        return None
    started = EarlyExamination(targets, Examination(targets, deep=False))
    # after the connections are under way: the next run starts from this plan, filed under the key of the
    # bytes just validated (not of an earlier read: the file may have been saved in between)
    from specops.cli.early.plan import plan_key, records, remember
    from specops.errors import SpecopsError

    key = plan_key(config.path, plan.names, config_digest=config.digest)
    if key is not None:
        with contextlib.suppress(SpecopsError, ValueError, TypeError):  # no plan: the next run validates first
            remember(key, records(targets))
    return started


def _same(early: list[DoctorTarget], parsed: list[DoctorTarget]) -> bool:
    def key(target: DoctorTarget) -> tuple[object, ...]:
        return (target.name, target.spec, target.profile, target.python)

    return [key(target) for target in early] == [key(target) for target in parsed]
