"""The check registry and the runner that turns crashes into ERROR results."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable

from specops.doctor.model import CheckContext, CheckFn, CheckResult, CheckSpec, Status

_REGISTRY: dict[str, CheckSpec] = {}


def check(check_id: str, description: str) -> Callable[[CheckFn], CheckFn]:
    """Register a check under a stable id (`torchcodec.ffmpeg`); ids are what `--only` and JSON use."""

    def register(fn: CheckFn) -> CheckFn:
        if check_id in _REGISTRY:
            raise ValueError(f"check {check_id!r} registered twice")
        _REGISTRY[check_id] = CheckSpec(check_id, description, fn)
        return fn

    return register


def all_checks() -> list[CheckSpec]:
    """Every check, in registration order (the order of the output)."""
    _load_check_modules()
    return list(_REGISTRY.values())


def _load_check_modules() -> None:
    """Importing the modules registers their checks; done lazily so `--help` stays fast."""
    from specops.doctor import checks  # noqa: F401


def select(only: Iterable[str] | None) -> list[CheckSpec]:
    """The checks named by `--only` (ids or id prefixes like `torchcodec`), or all of them."""
    specs = all_checks()
    if only is None:
        return specs
    wanted = [name.strip() for name in only if name.strip()]
    if not wanted:
        from specops.errors import UsageError

        raise UsageError("--only names no check", hint="`specops doctor --list` lists the checks")
    chosen = [s for s in specs if any(s.id == w or s.id.startswith(w + ".") for w in wanted)]
    unknown = [w for w in wanted if not any(s.id == w or s.id.startswith(w + ".") for s in specs)]
    if unknown:
        from specops.errors import UsageError

        raise UsageError(f"unknown check(s): {', '.join(unknown)}", hint="`specops doctor --list` lists the checks")
    return chosen


def run_checks(context: CheckContext, specs: Iterable[CheckSpec]) -> list[CheckResult]:
    """Run each check; one that raises becomes an ERROR result with the exception, the rest still run."""
    results = []
    for spec in specs:
        try:
            result = spec.fn(context)
        except Exception as error:  # a crashing check must not hide the others
            frame = traceback.extract_tb(error.__traceback__)[-1]
            result = CheckResult(
                spec.id,
                Status.ERROR,
                f"the check itself crashed: {type(error).__name__}: {error}",
                [f"at {frame.filename}:{frame.lineno}"],
                "this is a bug in specops; the other checks still ran. Re-run with --debug and report it",
            )
        results.append(result)
    return results
