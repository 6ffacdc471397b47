"""Deploy to many hosts: canary first, then the rest N at a time, stopping when too many fail.

Results are a dict keyed by host (Fabric's GroupResult): every host that ran has an outcome, the ones
never started because of the canary or the failure budget say "skipped". Exceptions per host become
outcomes with the documented exit codes, so one bad host never hides the others.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from specops.deploy.execute import PARTIAL_OUTCOME, LockLost
from specops.deploy.outcome import HostOutcome, Outcome
from specops.deploy.plan import HostPlan
from specops.errors import ConnectError, ExitCode, LockHeld, SpecopsError

# the exit code of a fleet: the most severe host code, in this order
SEVERITY = [ExitCode.INTERNAL, ExitCode.REMOTE_FAILED, ExitCode.UNREACHABLE, ExitCode.LOCK_HELD,
            ExitCode.CHECKS_FAILED, ExitCode.OK]  # fmt: skip

HostRunner = Callable[[HostPlan], HostOutcome]


@dataclass(frozen=True)
class FleetOptions:
    canary: int = 0
    parallel: int = 1
    max_fail_percent: float = 0.0


def guarded(run: HostRunner, host_plan: HostPlan) -> HostOutcome:
    """One host, with its errors turned into an outcome (KeyboardInterrupt still stops everything)."""
    name = host_plan.name
    try:
        return run(host_plan)
    except ConnectError as error:
        return _stopped(name, Outcome.UNREACHABLE, ExitCode.UNREACHABLE, error)
    except LockHeld as error:
        return _stopped(name, Outcome.LOCKED, ExitCode.LOCK_HELD, error)
    except LockLost as error:
        return _stopped(name, Outcome.LOCK_LOST, error.exit_code, error)
    except SpecopsError as error:
        return _stopped(name, Outcome.ERROR, error.exit_code, error)


def _stopped(name: str, outcome: Outcome, code: ExitCode, error: SpecopsError) -> HostOutcome:
    """The error's outcome, with what the deploy knew when it stopped: the releases it came from and tried
    (a connection lost after the switch must still say which release may be serving), and its phases."""
    stopped = HostOutcome(name, outcome, code, cause=error.message, hint=error.hint)
    partial = getattr(error, PARTIAL_OUTCOME, None)
    if isinstance(partial, HostOutcome):
        stopped.release, stopped.attempted, stopped.previous = partial.release, partial.attempted, partial.previous
        stopped.phases, stopped.push, stopped.stop = dict(partial.phases), partial.push, partial.stop
    return stopped


def run_fleet(
    all_hosts: list[HostPlan],
    run: HostRunner,
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
    deployed = _rollout(hosts, run, options, cancel)
    return {h.name: results.get(h.name) or deployed[h.name] for h in all_hosts}


def _rollout(
    hosts: list[HostPlan], run: HostRunner, options: FleetOptions, cancel: threading.Event | None
) -> dict[str, HostOutcome]:
    results: dict[str, HostOutcome] = {}
    canaries, rest = hosts[: options.canary], hosts[options.canary :]
    for host_plan in canaries:
        results[host_plan.name] = guarded(run, host_plan)
    if any(not r.ok for r in results.values()):
        return _skip(results, rest, "the canary failed")
    for start in range(0, len(rest), max(1, options.parallel)):
        batch = rest[start : start + max(1, options.parallel)]
        for host_plan, outcome in zip(batch, _run_batch(batch, run, cancel), strict=True):
            results[host_plan.name] = outcome
        if _over_budget(results, len(hosts), options.max_fail_percent):
            return _skip(results, rest[start + len(batch) :], "too many hosts failed (--max-fail-percent)")
    return results


def _run_batch(batch: list[HostPlan], run: HostRunner, cancel: threading.Event | None) -> list[HostOutcome]:
    if len(batch) == 1:
        return [guarded(run, batch[0])]
    with ThreadPoolExecutor(max_workers=len(batch)) as pool:
        futures = [pool.submit(guarded, run, host_plan) for host_plan in batch]
        try:
            return [future.result() for future in futures]
        except KeyboardInterrupt:
            if cancel is not None:
                cancel.set()
            raise


def _over_budget(results: dict[str, HostOutcome], total: int, max_fail_percent: float) -> bool:
    failed = sum(1 for r in results.values() if not r.ok)
    return failed > 0 and 100.0 * failed / total > max_fail_percent


def _skip(results: dict[str, HostOutcome], hosts: list[HostPlan], why: str) -> dict[str, HostOutcome]:
    for host_plan in hosts:
        results[host_plan.name] = HostOutcome(host_plan.name, Outcome.SKIPPED, ExitCode.CHECKS_FAILED, cause=why)
    return results


def fleet_exit_code(results: dict[str, HostOutcome]) -> ExitCode:
    codes = {r.exit_code for r in results.values()}
    return next((code for code in SEVERITY if code in codes), ExitCode.OK)
