"""What a check is and what it returns.

A check is a small pure function: (facts, profile, host) in, CheckResult out. It never raises on purpose;
if it crashes anyway the runner reports ERROR for it and the other checks still run (flutter's lesson:
one broken validator must not hide the rest).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: a doctor imports this before it connects, the facts' models after
    from specops.config.inventory import HostSpec
    from specops.config.profile import Profile
    from specops.probe.facts import DeepFacts, HostFacts


class Status(StrEnum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"


@dataclass(frozen=True)
class CheckResult:
    """One verdict: a one-line summary, the evidence behind it, and what the operator can do."""

    id: str
    status: Status
    summary: str
    evidence: list[str] = field(default_factory=list)
    hint: str = ""
    waived: str = ""  # the operator's reason this host may fail the check ("": not waived)

    @property
    def failing(self) -> bool:
        return self.status in (Status.FAIL, Status.ERROR)

    @property
    def blocks(self) -> bool:
        """A failure nobody waived: it stops a deploy's preflight and fails the doctor."""
        return self.failing and not self.waived

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "status": self.status.value,
            "summary": self.summary,
            "evidence": self.evidence,
            "hint": self.hint,
            "waived": self.waived or None,
        }


@dataclass(frozen=True)
class CheckContext:
    """What every check may read. `profile` is None when no profile applies (doctor without one)."""

    host: HostSpec | None
    facts: HostFacts
    profile: Profile | None = None
    deep: DeepFacts | None = None
    gpu_host: bool = True  # the host is declared to serve on GPUs (False for `doctor --local` on a CPU box)


CheckFn = Callable[[CheckContext], CheckResult]


@dataclass(frozen=True)
class CheckSpec:
    """A registered check: its id, a one-line description for `--list`, and the function."""

    id: str
    description: str
    fn: CheckFn


def waive(results: Iterable[CheckResult], reasons: Mapping[str, str]) -> list[CheckResult]:
    """The results with each waived check's reason attached; the check still ran and keeps its status."""
    return [replace(result, waived=reasons[result.id]) if result.id in reasons else result for result in results]


def passed(check_id: str, summary: str, evidence: list[str] | None = None) -> CheckResult:
    return CheckResult(check_id, Status.PASS, summary, evidence or [])


def warned(check_id: str, summary: str, hint: str, evidence: list[str] | None = None) -> CheckResult:
    return CheckResult(check_id, Status.WARN, summary, evidence or [], hint)


def failed(check_id: str, summary: str, hint: str, evidence: list[str] | None = None) -> CheckResult:
    return CheckResult(check_id, Status.FAIL, summary, evidence or [], hint)


def skipped(check_id: str, summary: str) -> CheckResult:
    return CheckResult(check_id, Status.SKIP, summary)
