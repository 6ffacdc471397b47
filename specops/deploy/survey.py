"""Read-only questions to many hosts at once (status, releases, smoke, audit, lock status).

Every host is asked in parallel, each in its own worker that opens its own connection; the answers come
back as a dict keyed by host in inventory order. A host that cannot be reached, or whose question fails,
is a reading that says so (with the documented exit code), never an exception that hides the other
hosts. The fleet's exit code is the most severe of the hosts', in the same order as a deploy's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Generic, TypeVar

from specops.config.inventory import HostSpec
from specops.deploy.fleet import SEVERITY
from specops.errors import ConnectError, ExitCode, SpecopsError
from specops.host.base import Host

T = TypeVar("T")
Opener = Callable[[HostSpec], Callable[[], AbstractContextManager[Host]]]
MAX_PARALLEL = 32


@dataclass(frozen=True)
class Reading(Generic[T]):
    """One host's answer (`value`), or why there is none (`error`, with `unreachable` for SSH failures)."""

    host: str
    value: T | None
    exit_code: ExitCode = ExitCode.OK
    error: str = ""
    hint: str = ""

    @property
    def unreachable(self) -> bool:
        return self.exit_code == ExitCode.UNREACHABLE and self.value is None


Question = Callable[[Host, HostSpec], tuple[T, ExitCode]]


def ask(spec: HostSpec, opener: Opener, question: Question[T]) -> Reading[T]:
    """Connect and ask one host; an SSH failure or a host-side error becomes the reading."""
    try:
        with opener(spec)() as host:
            value, code = question(host, spec)
    except ConnectError as error:
        return Reading(spec.name, None, ExitCode.UNREACHABLE, error.message, error.hint)
    except SpecopsError as error:
        return Reading(spec.name, None, error.exit_code, error.message, error.hint)
    return Reading(spec.name, value, code)


def survey(specs: list[HostSpec], opener: Opener, question: Question[T]) -> dict[str, Reading[T]]:
    """Ask every host in parallel; results in the order of `specs`."""
    if len(specs) == 1:
        return {specs[0].name: ask(specs[0], opener, question)}
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(specs)) or 1) as pool:
        futures = [pool.submit(ask, spec, opener, question) for spec in specs]
        return {spec.name: future.result() for spec, future in zip(specs, futures, strict=True)}


def most_severe(codes: Iterable[ExitCode]) -> ExitCode:
    """Internal > remote failure > unreachable > lock held > checks failed > ok, as for a deploy."""

    def rank(code: ExitCode) -> float:  # a code a deploy never gives (config, usage) ranks just below internal
        return SEVERITY.index(code) if code in SEVERITY else 0.5

    return min(codes, key=rank, default=ExitCode.OK)


def survey_exit_code(readings: dict[str, Reading[T]]) -> ExitCode:
    return most_severe(reading.exit_code for reading in readings.values())
