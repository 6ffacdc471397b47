"""A doctor's connections, started by the console script before typer is even imported.

Why: for `specops doctor HOST`, everything the process does before its probe reaches the host is time the
operator waits for on top of the host's own work; the command line parser (typer, and the pydantic adapters it
builds for every option) is ~60 ms of it. When the command line is a plain `doctor NAME...` (the options below,
nothing that could change what is connected to or how), the config is loaded and the hosts are connected here;
the parsed command then claims that `Examination` instead of starting its own (`claim`).

Nothing changes for the operator: the config is validated first (no connection on an invalid config), and any
problem here (an invalid config, an unknown host) only means nothing is started: the parsed command meets the
same problem again and reports it as it always does. A command line this module is unsure of is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

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


_started: list[_Started] = []


def plain_doctor(args: list[str]) -> EarlyDoctor | None:
    """The doctor run `args` asks for, when they are nothing but names and the flags above (else None)."""
    config_path: Path | None = None
    words = list(args)
    while words and words[0] != "doctor":
        word = words.pop(0)
        if word == "--config" and words:
            config_path = Path(words.pop(0))
        elif word.startswith("--config=") and len(word) > len("--config="):
            config_path = Path(word.partition("=")[2])
        elif word not in ROOT_FLAGS:
            return None
    names = [word for word in words[1:] if word not in DOCTOR_FLAGS]
    if not words or not names or any(name.startswith("-") for name in names):
        return None
    return EarlyDoctor(config_path, names)


def start(args: list[str]) -> bool:
    """Connect to the hosts of a plain doctor run now; whether anything was started (then the caller may
    wait for `wait_connected()` before loading the rest, so that it does not slow the connections down)."""
    plan = plain_doctor(args)
    if plan is None:
        return False
    from specops.cli.state import AppState
    from specops.doctor.runner import Examination, inventory_targets

    app_state = AppState(config_path=plan.config_path)
    try:
        targets = inventory_targets(app_state.load_config(), plan.names, False, None, app_state.opener)
    except Exception:  # reported by the parsed command, which meets it again
        return False
    _started.append(_Started(targets, Examination(targets, deep=False)))
    return True


def wait_connected() -> None:
    for started in _started:
        started.examination.wait_connected()


def claim(targets: list[DoctorTarget], deep: bool) -> Examination | None:
    """The examination started early for exactly these targets, or None (then nothing early is left running)."""
    if not _started:
        return None
    started = _started.pop()
    if not deep and _same(started.targets, targets):
        return started.examination
    with started.examination:  # not what the command asks for: wait for it and drop it
        return None


def discard() -> None:
    """Wait for an examination nobody claimed (the parsed command stopped before it got that far)."""
    while _started:
        with _started.pop().examination:
            pass


def _same(early: list[DoctorTarget], parsed: list[DoctorTarget]) -> bool:
    def key(target: DoctorTarget) -> tuple[object, ...]:
        return (target.name, target.spec, target.profile, target.python)

    return [key(target) for target in early] == [key(target) for target in parsed]
