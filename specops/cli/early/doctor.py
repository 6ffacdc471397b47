"""A doctor's connections, started by the console script before typer is even imported.

Why: for `specops doctor HOST`, everything the process does before its probe reaches the host is time the
operator waits for on top of the host's own work; the command line parser (typer, and the pydantic adapters it
builds for every option) is ~60 ms of it. When the command line is a plain `doctor NAME...` (the options below,
nothing that could change what is connected to or how), the config is loaded and the hosts are connected here;
the parsed command then claims that `Examination` instead of starting its own (`claim`).

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
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specops.doctor.runner import DoctorTarget, Examination

ROOT_FLAGS = frozenset({"--json", "--no-color", "--debug", "--verbose", "-v"})
DOCTOR_FLAGS = frozenset({"--json", "--strict"})


@dataclass(frozen=True)
class EarlyDoctor:
    """A plain `specops [ROOT FLAGS] [--config PATH] doctor NAME... [--json] [--strict]`."""

    config_path: Path | None
    names: list[str]


@dataclass
class _Started:
    targets: list[DoctorTarget]
    examination: Examination
    plan: list[dict[str, Any]] | None = None  # started from a remembered plan (its key), not a validated config
    key: str | None = None


_started: list[_Started] = []


def plain_doctor(args: list[str]) -> EarlyDoctor | None:
    """The doctor run `args` asks for, when they are nothing but names and the flags above (else None)."""
    split = split_root(args, "doctor")
    if split is None:
        return None
    config_path, words = split
    names = [word for word in words if word not in DOCTOR_FLAGS]
    if not names or any(name.startswith("-") for name in names):
        return None
    return EarlyDoctor(config_path, names)


def split_root(args: list[str], command: str) -> tuple[Path | None, list[str]] | None:
    """`--config PATH` and the words after `command`, when nothing but ROOT_FLAGS comes before it (else None)."""
    config_path: Path | None = None
    words = list(args)
    while words and words[0] != command:
        word = words.pop(0)
        if word == "--config" and words:
            config_path = Path(words.pop(0))
        elif word.startswith("--config=") and len(word) > len("--config="):
            config_path = Path(word.partition("=")[2])
        elif word not in ROOT_FLAGS:
            return None
    return (config_path, words[1:]) if words else None


def start(args: list[str]) -> bool:
    """Connect to the hosts of a plain doctor run now; whether anything was started (then the caller may
    wait for `wait_connected()` before loading the rest, so that it does not slow the connections down)."""
    plan = plain_doctor(args)
    if plan is None:
        return False
    from specops.cli.early import plan as early_plan

    key = early_plan.plan_key(plan.config_path, plan.names)
    remembered = early_plan.recall(key) if key is not None else None
    if key is not None and remembered is not None:
        return _start_from_plan(key, remembered)
    return _start_from_config(plan)


def _start_from_plan(key: str, plan: list[dict[str, Any]]) -> bool:
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
    _started.append(_Started(targets, Examination(targets, deep=False), plan, key))
    return True


def _start_from_config(plan: EarlyDoctor) -> bool:
    from specops.cli.state import AppState
    from specops.doctor.runner import Examination, inventory_targets

    app_state = AppState(config_path=plan.config_path)
    try:
        config = app_state.load_config()
        targets = inventory_targets(config, plan.names, False, None, app_state.opener)
    except Exception:  # reported by the parsed command, which meets it again
        return False
    _started.append(_Started(targets, Examination(targets, deep=False)))
    # after the connections are under way: the next run starts from this plan, filed under the key of the
    # bytes just validated (not of an earlier read: the file may have been saved in between)
    from specops.cli.early.plan import plan_key, records, remember
    from specops.errors import SpecopsError

    key = plan_key(config.path, plan.names, config_digest=config.digest)
    if key is not None:
        with contextlib.suppress(SpecopsError, ValueError, TypeError):  # no plan: the next run validates first
            remember(key, records(targets))
    return True


def wait_connected() -> None:
    for started in _started:
        started.examination.wait_connected()


def claim(targets: list[DoctorTarget], deep: bool) -> Examination | None:
    """The examination started early for exactly these targets, or None (then nothing early is left running)."""
    if not _started:
        return None
    started = _started.pop()
    if not deep and _matches(started, targets):
        if started.plan is not None:
            started.examination.adopt(targets)  # the checks see the validated hosts and profiles
        return started.examination
    if started.key is not None:  # a plan that no longer matches its inputs: the next run validates first
        from specops.cli.early.plan import forget

        forget(started.key)
    with started.examination:  # not what the command asks for: wait for it and drop it
        return None


def _matches(started: _Started, targets: list[DoctorTarget]) -> bool:
    if started.plan is None:
        return _same(started.targets, targets)
    import json

    from specops.cli.early.plan import records
    from specops.errors import SpecopsError

    try:
        fresh = json.loads(json.dumps(records(targets)))
    except (SpecopsError, TypeError, ValueError):  # not inventory hosts, or no probe for them: not this plan
        return False
    return bool(fresh == started.plan)


def discard() -> None:
    """Wait for an examination nobody claimed (the parsed command stopped before it got that far)."""
    while _started:
        with _started.pop().examination:
            pass


def _same(early: list[DoctorTarget], parsed: list[DoctorTarget]) -> bool:
    def key(target: DoctorTarget) -> tuple[object, ...]:
        return (target.name, target.spec, target.profile, target.python)

    return [key(target) for target in early] == [key(target) for target in parsed]
