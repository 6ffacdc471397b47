"""What a deploy did on one host, as a typed record: the summary table, --json and the audit log read it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from specops.commands.planned import HostCommand
from specops.config.inventory import HostSpec
from specops.deploy.rollback import RollbackResult
from specops.deploy.rollback_restore import Restoration
from specops.deploy.serving import Serving, interrupted_line, lost_line, read_serving
from specops.doctor.model import CheckResult
from specops.engine.gates import GateResult
from specops.errors import ExitCode
from specops.host.base import Host
from specops.ops.engine_stop import StopResult
from specops.ops.hooks import HookRun


class Outcome(StrEnum):
    """A host's outcome; str-valued, so --json and the audit log carry the same words as before."""

    DEPLOYED = "deployed"
    UNCHANGED = "unchanged"
    STARTED = "started"  # the same build was current and verified but its engine was not active: started, verified
    RESTARTED = "restarted"  # `specops restart`: the current release restarted and verified
    ROLLED_BACK = "rolled-back"
    ROLLBACK_FAILED = "rollback-failed"  # the gates failed, and so did the rollback's: no verified release serves
    FAILED = "failed"  # the gates failed and nothing was rolled back (--no-rollback, or no verified release)
    PREFLIGHT_FAILED = "preflight-failed"
    UNREACHABLE = "unreachable"
    LOCKED = "locked"
    LOCK_LOST = "lock-lost"
    INTERRUPTED = "interrupted"  # SIGINT, SIGTERM or SIGHUP: it put back what served, or the guard does
    ERROR = "error"
    SKIPPED = "skipped"  # a fleet never started it (the canary or the failure budget)


OK_OUTCOMES = (Outcome.DEPLOYED, Outcome.UNCHANGED, Outcome.STARTED, Outcome.RESTARTED)


@dataclass(frozen=True)
class PushFigures:
    sent_files: int
    sent_bytes: int
    linked_files: int
    base: str | None
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"sent_files": self.sent_files, "sent_bytes": self.sent_bytes, "linked_files": self.linked_files,
                "base": self.base, "seconds": round(self.seconds, 3)}  # fmt: skip


@dataclass
class HostOutcome:
    """What happened on one host, for the summary table, --json and the audit log."""

    host: str
    outcome: Outcome
    exit_code: ExitCode = ExitCode.OK
    release: str | None = None  # serving now (as far as we know)
    attempted: str | None = None
    previous: str | None = None
    cause: str = ""
    blame: str = ""  # failed gates blamed on the host, not rolled back: why, with the evidence (deploy/blame.py)
    culprit: str = ""  # whom deploy/blame.py blamed for failed gates: build, configuration or host ("" when none)
    hint: str = ""
    phases: dict[str, float] = field(default_factory=dict)
    gates: GateResult | None = None
    rollback: RollbackResult | None = None
    preflight: list[CheckResult] = field(default_factory=list)
    overridden: list[CheckResult] = field(default_factory=list)  # failing checks --force let through
    push: PushFigures | None = None
    lock_taken_over: str = ""  # whose lock this deploy took over, and why ("" when the lock was free)
    watch_s: int = 0  # the guard's watch after "verified", running on the host when the deploy returned
    stop: StopResult | None = None  # the drain of the old engine and the GPUs' check (None: never stopped)
    hooks: list[HookRun] = field(default_factory=list)
    serving: Serving | None = None  # read from the host at the end (None: not read, see `after`)
    guard_to: str | None = None  # while the host-side guard is armed: the release it would roll back to
    after: str = ""  # what serves, when it was not read: a lost connection, a failed rollback, an interruption

    def final_line(self) -> str:
        """The summary's last line for this host: what serves, as read at the end (or why it was not read)."""
        if self.after:
            return self.after
        return f"{self.host}: {self.serving.line()}" if self.serving is not None else ""

    def read_serving(self, host: Host, spec: HostSpec, planned: Sequence[HostCommand] = ()) -> None:
        """What serves at the end, read once on the deploy's connection (a failed rollback already said that
        nothing verified serves, whatever runs); `planned`: the plan's serving step's commands."""
        if self.outcome is Outcome.ROLLBACK_FAILED:
            return
        serving = read_serving(host, spec, planned)
        if serving is not None and self.release is None and serving.release is not None:
            serving = replace(serving, failed_gates=True)  # the gates said it does not serve, whatever runs
        self.serving = serving

    def rolled_back(self, result: RollbackResult) -> None:
        """The automatic rollback's result: `rolled-back`, or `rollback-failed` (its own exit code) saying that
        no verified release serves."""
        self.rollback, self.hint = result, ""
        if result.ok:
            self.outcome = Outcome.ROLLED_BACK
            self.release = result.to_release or self.release
            return
        self.outcome, self.exit_code, self.release = Outcome.ROLLBACK_FAILED, ExitCode.ROLLBACK_FAILED, None
        self.after = result.failed_line(self.host)  # what was started again, if anything, is the failed release
        self.hint = f"`specops status {self.host}` shows the host; fix the cause there, then deploy again"

    @property
    def switched(self) -> bool:
        """`current` was switched to the release this deploy attempted."""
        return self.release is not None and self.release == self.attempted

    def lost(self, phase: str) -> str:
        """The host stopped answering during `phase`: what that means for what serves (it is not read again)."""
        said = lost_line(self.host, phase, self.attempted, self.guard_to, self.switched, self.previous)
        return f"{self.host}: {said}"

    def after_interruption(self, restoration: Restoration, spec: HostSpec) -> str:
        """What serves after an interruption; the unverified new release under an armed guard: to what it rolls
        back, and by when (the lock is released right after this, and the guard acts at its next tick). The host's
        `current` counts: a signal during the switch may land after the host switched, before the reply came."""
        switched = self.switched or (self.attempted is not None and restoration.unverified == self.attempted)
        if self.guard_to and switched and restoration.restored is None and restoration.dark is None:
            return f"{self.host}: {interrupted_line(self.attempted, self.guard_to)}"
        return restoration.said(spec)

    @property
    def ok(self) -> bool:
        return self.outcome in OK_OUTCOMES

    @property
    def waived(self) -> list[CheckResult]:
        """Failing checks this host's waivers (or --skip-check) let through."""
        return [result for result in self.preflight if result.failing and result.waived]

    def passed_checks(self) -> list[str]:
        """One line per failing check the deploy went past: the operator sees each one, not a bare 'forced'."""
        waived = [f"waived {r.id}: {r.summary} ({r.waived})" for r in self.waived]
        return waived + [f"--force overrode {r.id}: {r.summary}" for r in self.overridden]

    def check_lines(self) -> dict[str, list[dict[str, str]]]:
        """The checks a deploy went past, for --json and the audit log: waived ones with their reason,
        the ones --force overrode with their summary."""
        return {
            "waived": [{"id": r.id, "summary": r.summary, "reason": r.waived} for r in self.waived],
            "overridden": [{"id": r.id, "summary": r.summary} for r in self.overridden],
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host, "outcome": str(self.outcome), "exit_code": int(self.exit_code),
            "release": self.release, "attempted": self.attempted, "previous": self.previous, "cause": self.cause,
            "blame": self.blame or None, "culprit": self.culprit or None, "hint": self.hint,
            "phases": {k: round(v, 3) for k, v in self.phases.items()},
            "push": self.push.to_json() if self.push else {}, "lock_taken_over": self.lock_taken_over or None,
            "gates": self.gates.to_json() if self.gates else None,
            "rollback": self.rollback.to_json() if self.rollback else None,
            "preflight": [r.to_json() for r in self.preflight if r.failing],
            **self.check_lines(),
            "watch_s": self.watch_s or None,
            "drain": self.stop.drain.to_json() if self.stop else None,
            "gpus": self.stop.gpus.to_json() if self.stop else None,
            "hooks": [hook.to_json() for hook in self.hooks],
            "serving": self.serving.to_json() if self.serving else None, "now": self.final_line() or None,
        }  # fmt: skip
