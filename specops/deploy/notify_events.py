"""The events a deploy and a manual rollback send to [notify] (specops/ops/notify.py delivers them).

One event per host that changed or failed (an unchanged host, or one a fleet never started, sends none: the
fleet's summary counts it), and one summary when the deploy named several hosts, so that a fleet stopped at its
canary says so where the on-call reads, not only on the terminal that started it. docs/notify.md lists them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from specops.deploy.outcome import OK_OUTCOMES, HostOutcome, Outcome
from specops.ops import notify

if TYPE_CHECKING:  # a deploy imports this module on every run; a trial's machinery loads only for a trial
    from specops.deploy.rollback import RollbackResult
    from specops.deploy.trial import TrialReport

SILENT = (Outcome.UNCHANGED, Outcome.SKIPPED)  # nothing happened on the host: only the fleet's summary counts it


def host_event_name(outcome: Outcome) -> str:
    if outcome in OK_OUTCOMES:
        return "deploy.verified"
    return "deploy.rolled-back" if outcome is Outcome.ROLLED_BACK else "deploy.failed"


def deploy_events(results: Mapping[str, HostOutcome], profiles: Mapping[str, str]) -> list[dict[str, Any]]:
    """The events of a finished deploy: `results` by host, `profiles` the profile each host deployed."""
    events = [_host_event(result, profiles.get(name)) for name, result in results.items()
              if result.outcome not in SILENT]  # fmt: skip
    if len(results) > 1:
        events.append(fleet_event(results, profiles))
    return events


def _host_event(result: HostOutcome, profile: str | None) -> dict[str, Any]:
    """`release`: the release this deploy attempted (the one a rollback left); `serving`: what serves now."""
    cause = result.cause or (result.rollback.summary if result.rollback else "")
    return notify.event(host_event_name(result.outcome), host=result.host, release=result.attempted or result.release,
                        previous=result.previous, profile=profile, outcome=str(result.outcome), cause=cause,
                        serving=result.release, exit_code=int(result.exit_code),
                        lock_taken_over=result.lock_taken_over or None)  # fmt: skip


def fleet_event(results: Mapping[str, HostOutcome], profiles: Mapping[str, str]) -> dict[str, Any]:
    """The fleet's summary: how many hosts ended how, and why the first that failed did (a canary's failure)."""
    counts = Counter(str(result.outcome) for result in results.values())
    failed = [result for result in results.values() if not result.ok and result.outcome is not Outcome.SKIPPED]
    skipped = [result for result in results.values() if result.outcome is Outcome.SKIPPED]
    said = ", ".join(f"{count} {outcome}" for outcome, count in counts.items())
    cause = said
    if failed:
        cause += f"; {failed[0].host}: {failed[0].outcome}" + (f" ({failed[0].cause})" if failed[0].cause else "")
    if skipped and skipped[0].cause:
        cause += f"; not started: {skipped[0].cause}"
    releases = {result.attempted for result in results.values() if result.attempted}
    named = set(profiles.values())
    return notify.event("deploy.fleet", host=None, release=releases.pop() if len(releases) == 1 else None,
                        profile=named.pop() if len(named) == 1 else None,
                        outcome="failed" if failed or skipped else "verified", cause=cause,
                        hosts={name: str(result.outcome) for name, result in results.items()})  # fmt: skip


def send_deploy_events(results: Mapping[str, HostOutcome], profiles: Mapping[str, str]) -> None:
    for document in deploy_events(results, profiles):
        notify.send(document)


def send_rollback_event(host: str, result: RollbackResult, profile: str | None) -> None:
    """A manual rollback (`specops rollback`): the release it left, the one it put back, and how it went."""
    notify.send(notify.event("rollback.manual", host=host, release=result.from_release, previous=result.to_release,
                             profile=profile, outcome="rolled-back" if result.ok else "rollback-failed",
                             cause=result.summary, serving=result.to_release if result.ok else None))  # fmt: skip


def send_trial_event(report: TrialReport) -> None:
    notify.send(trial_event(report))


def trial_event(report: TrialReport) -> dict[str, Any]:
    """A trial's result (`specops trial`): the candidate release, whether it agrees with production, and why not."""
    cause = "; ".join(report.causes) or "passed its smoke and agrees with production"
    compared = report.comparison
    return notify.event("trial.result", host=report.host, release=report.release, profile=report.profile,
                        outcome=report.outcome, cause=cause, production_profile=report.production_profile,
                        agreement=round(compared.agreement, 4) if compared else None,
                        speed_ratio=compared.ratio("tokens_per_s") if compared else None)  # fmt: skip
