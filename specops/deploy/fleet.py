"""Deploy to many hosts: canary first, then the rest N at a time, stopping when too many fail.

Results are a dict keyed by host (Fabric's GroupResult): every host that ran has an outcome, the ones
never started because of the canary or the failure budget say "skipped". Exceptions per host become
outcomes with the documented exit codes, so one bad host never hides the others.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol, TypeVar

from specops.deploy.execute import PARTIAL_OUTCOME, LockLost
from specops.deploy.outcome import HostOutcome, Outcome
from specops.deploy.plan import HostPlan
from specops.errors import ConnectError, ExitCode, LockHeld, SpecopsError
from specops.ops import interrupts

# the exit code of a fleet: the most severe host code, in this order
SEVERITY = [ExitCode.INTERNAL, ExitCode.ROLLBACK_FAILED, ExitCode.REMOTE_FAILED, ExitCode.UNREACHABLE,
            ExitCode.LOCK_HELD, ExitCode.CHECKS_FAILED, ExitCode.OK]  # fmt: skip


class Named(Protocol):
    """A member of a fleet: a host's plan, or a multi-node engine deployed as one (deploy/members.py)."""

    @property
    def name(self) -> str: ...


M = TypeVar("M", bound=Named)
HostRunner = Callable[[HostPlan], HostOutcome]
FLEET_OUTCOMES = "fleet_outcomes"  # on the KeyboardInterrupt that ended a fleet deploy: each host's outcome so far


@dataclass(frozen=True)
class FleetOptions:
    canary: int = 0
    parallel: int = 1
    max_fail_percent: float = 0.0


def guarded(run: Callable[[M], HostOutcome], host_plan: M,
            settled: dict[str, HostOutcome] | None = None) -> HostOutcome:  # fmt: skip
    """One host, with its errors turned into an outcome. KeyboardInterrupt still stops everything; the host's
    outcome so far is put in `settled` first (`interrupted`), so the fleet's summary can still show it."""
    name = host_plan.name
    try:
        return run(host_plan)
    except KeyboardInterrupt as interruption:
        if settled is not None:
            settled[name] = _interrupted(name, interruption)
        raise
    except ConnectError as error:
        return _stopped(name, Outcome.UNREACHABLE, ExitCode.UNREACHABLE, error)
    except LockHeld as error:
        return _stopped(name, Outcome.LOCKED, ExitCode.LOCK_HELD, error)
    except LockLost as error:
        return _stopped(name, Outcome.LOCK_LOST, error.exit_code, error)
    except SpecopsError as error:
        return _stopped(name, Outcome.ERROR, error.exit_code, error)


def _stopped(name: str, outcome: Outcome, code: ExitCode, error: BaseException, cause: str = "",
             hint: str = "") -> HostOutcome:  # fmt: skip
    """The error's outcome, with what the deploy knew when it stopped: the releases it came from and tried, its
    phases, and what serves (a connection lost after the switch says the release is unverified and what the
    host-side guard will do, never that it serves)."""
    if isinstance(error, SpecopsError):
        cause, hint = error.message, error.hint
    stopped = HostOutcome(name, outcome, code, cause=cause, hint=hint)
    partial = getattr(error, PARTIAL_OUTCOME, None)
    if isinstance(partial, HostOutcome):
        stopped.release, stopped.attempted, stopped.previous = partial.release, partial.attempted, partial.previous
        stopped.phases, stopped.push, stopped.stop = dict(partial.phases), partial.push, partial.stop
        stopped.after, stopped.guard_to, stopped.gates = partial.after, partial.guard_to, partial.gates
        if partial.after:  # what serves was not read at the end: the final line says what is known instead
            stopped.release = None
    return stopped


def _interrupted(name: str, interruption: KeyboardInterrupt) -> HostOutcome:
    code, signal = ExitCode(interrupts.exit_code(interruption)), interrupts.signal_name(interruption)
    return _stopped(name, Outcome.INTERRUPTED, code, interruption, f"interrupted ({signal})")


def run_fleet(
    all_hosts: Sequence[M],
    run: Callable[[M], HostOutcome],
    options: FleetOptions,
    cancel: threading.Event | None = None,
    not_connected: Collection[str] = (),
) -> dict[str, HostOutcome]:
    """Canary hosts one by one; if all pass, the rest in batches of `parallel` within the failure budget.

    A batch of one runs in this thread, so Ctrl-C interrupts the deploy itself; a parallel batch runs in
    worker threads, and Ctrl-C sets `cancel`, which each worker checks between phases and while waiting.
    Hosts in `not_connected` (no connection could be opened up front, see specops/deploy/connections.py) get
    their outcome at once and count neither as canaries nor against the failure budget: they say nothing
    about the release. Results come in the order of `all_hosts`.
    """
    results = {h.name: guarded(run, h) for h in all_hosts if h.name in not_connected}
    hosts = [h for h in all_hosts if h.name not in not_connected]
    deployed: dict[str, HostOutcome] = {}
    try:
        _rollout(hosts, run, options, cancel, deployed)
    except KeyboardInterrupt as interruption:  # the summary so far rides on it (FLEET_OUTCOMES), in host order
        never = "interrupted before it started"
        so_far = {h.name: results.get(h.name) or deployed.get(h.name) or never_started(h.name, never)
                  for h in all_hosts}  # fmt: skip
        setattr(interruption, FLEET_OUTCOMES, so_far)
        raise
    return {h.name: results.get(h.name) or deployed[h.name] for h in all_hosts}


def _rollout(hosts: list[M], run: Callable[[M], HostOutcome], options: FleetOptions, cancel: threading.Event | None,
             results: dict[str, HostOutcome]) -> None:  # fmt: skip
    """Fills `results` as hosts finish: an interruption leaves in it every outcome so far."""
    rest = _canaries(hosts, run, options.canary, results)
    failed = [r for r in results.values() if not r.ok and r.outcome is not Outcome.LOCKED]
    if failed:
        _skip(results, rest, canary_failed(failed[0]))
        return
    for start in range(0, len(rest), max(1, options.parallel)):
        batch = rest[start : start + max(1, options.parallel)]
        for host_plan, outcome in zip(batch, run_batch(batch, run, cancel, results), strict=True):
            results[host_plan.name] = outcome
        if _over_budget(results, len(hosts), options.max_fail_percent):
            _skip(results, rest[start + len(batch) :], "too many hosts failed (--max-fail-percent)")
            return


def _canaries(hosts: list[M], run: Callable[[M], HostOutcome], count: int,
              results: dict[str, HostOutcome]) -> list[M]:  # fmt: skip
    """Deploy `count` canaries one by one; a host locked by another deploy (after --lock-wait, if given) is
    `locked`, not a failed canary: the next host is the canary in its place, and the summary says so. Stops at the
    first failed canary. The hosts left for the rollout."""
    queue, done = list(hosts), 0
    while done < count and queue:
        host_plan = queue.pop(0)
        outcome = results[host_plan.name] = guarded(run, host_plan, results)
        if outcome.outcome is Outcome.LOCKED:
            stand_in = f"{queue[0].name} is the canary in its place" if queue else "no host is left to be the canary"
            outcome.cause = f"{outcome.cause} (not a failed canary: {stand_in})"
            continue
        done += 1
        if not outcome.ok:
            break
    return queue


def canary_failed(canary: HostOutcome) -> str:
    """Why the other hosts were not started. A canary that failed on its host's environment (deploy/blame.py)
    still stops the fleet: the others often share that environment (the same image, the same FFmpeg), and each
    would go through the same stop, failed start and rollback. But it says nothing about the release, and the
    skipped hosts say so."""
    if canary.culprit == "host":
        return f"the canary {canary.host} failed on its host, not on the release: the release was not judged"
    return f"the canary {canary.host} failed"


def run_batch(batch: Sequence[M], run: Callable[[M], HostOutcome], cancel: threading.Event | None,
               settled: dict[str, HostOutcome]) -> list[HostOutcome]:  # fmt: skip
    if len(batch) == 1:
        return [guarded(run, batch[0], settled)]
    with ThreadPoolExecutor(max_workers=len(batch)) as pool:
        futures = [pool.submit(guarded, run, host_plan, settled) for host_plan in batch]
        try:
            return [future.result() for future in futures]
        except KeyboardInterrupt:
            if cancel is not None:
                cancel.set()
            pool.shutdown(wait=True)  # each worker stops at its next step (noting its outcome) or finishes
            for host_plan, future in zip(batch, futures, strict=True):
                if not future.cancelled() and future.exception() is None:
                    settled[host_plan.name] = future.result()
            raise


def _over_budget(results: dict[str, HostOutcome], total: int, max_fail_percent: float) -> bool:
    """A host locked by another deploy says nothing about the release: it counts against no budget."""
    failed = sum(1 for r in results.values() if not r.ok and r.outcome is not Outcome.LOCKED)
    return failed > 0 and 100.0 * failed / total > max_fail_percent


def _skip(results: dict[str, HostOutcome], hosts: Sequence[Named], why: str) -> None:
    for host_plan in hosts:
        results[host_plan.name] = never_started(host_plan.name, why)


def never_started(name: str, why: str) -> HostOutcome:
    return HostOutcome(name, Outcome.SKIPPED, ExitCode.CHECKS_FAILED, cause=why)


def fleet_exit_code(results: dict[str, HostOutcome]) -> ExitCode:
    codes = {r.exit_code for r in results.values()}
    return next((code for code in SEVERITY if code in codes), ExitCode.OK)
