"""A rank's deploy at the engine's meeting points (specops/deploy/engine_run.py): mixed into the deploy of one host
(specops/deploy/execute.py), which calls these between its steps. Without an engine every method does nothing,
so a single host's deploy runs exactly as before.

The rank's steps are still its plan's steps, run by their own handlers; these only wait (the workers' stop waits
for rank 0's), agree (the planned release, the preflight's verdict) or choose the gates' function (rank 0 proves
the engine; a worker watches its own journal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from specops.deploy.engine_commands import DIST_PORT
from specops.deploy.engine_run import Arrival, EngineRun, EngineStopped, GateFn, ranks_disagree
from specops.deploy.outcome import HostOutcome, Outcome
from specops.engine.gates import restart_and_gate
from specops.errors import ExitCode
from specops.events import Event, Reporter
from specops.probe.dist_port import DistPortReport, RankAnswer, run_rank, split_dist_addr

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.deploy.steps import HostSteps, Step
    from specops.host.base import Host
    from specops.ops.engine_stop import Confirm

NOT_STOPPED = "nothing was stopped on any rank: every rank serves as before"


class RankOptions(Protocol):
    """A deploy's or a restart's options: the engine whose rank this host is (None: a host of its own)."""

    @property
    def engine(self) -> EngineRun | None: ...


class EngineSteps:
    """The meeting points of one rank; the deploy's own state (checks_ok, outcome) is what they read and set."""

    options: RankOptions
    host: Host
    reporter: Reporter
    spec: HostSpec
    steps: HostSteps
    outcome: HostOutcome
    checks_ok: bool

    @property
    def _rank(self) -> int:
        assert self.options.engine is not None
        return self.options.engine.rank(self.spec.name)

    def _engine_planned(self) -> None:
        """Every rank plans the same action and release, or none goes on (nothing was changed on any rank)."""
        run = self.options.engine
        if run is None:
            return
        said = f"{self.steps.action} {self.steps.release}"
        run.arrive("planned", self._rank, Arrival(True, said, said))
        plans = run.wait_for("planned", range(len(run.hosts)))
        failed = [(rank, seen) for rank, seen in sorted(plans.items()) if not seen.ok]
        if failed:
            raise EngineStopped(f"{run.failed_line(failed, 'stopped')}; {NOT_STOPPED}")
        if len({seen.value for seen in plans.values()}) > 1:
            raise EngineStopped(ranks_disagree(run, plans), hint="deploy the engine again: its ranks are read afresh")

    def _engine_before(self, step: Step) -> None:
        """A worker drains only once rank 0 has (rank 0 holds the requests in flight); rank 0 starts only once
        every worker has stopped (an old worker must not join the new rank 0)."""
        run = self.options.engine
        if run is None:
            return
        if step.name == "stop" and self._rank > 0:
            (seen,) = run.wait_for("stop", [0]).values()
            self._rank0_stop = seen
        elif step.name == "gates" and self._rank == 0:
            run.wait_for("stop", range(1, len(run.hosts)))

    def _engine_after(self, step: Step) -> None:
        run = self.options.engine
        if run is None:
            return
        if step.name == "preflight":
            self._agree_on_checks()
        elif step.name == "stop" and self._rank == 0:
            run.arrive("stop", 0, Arrival(self.checks_ok, self.outcome.cause))
        elif step.name == "stop":
            self._worker_stopped()

    def _worker_stopped(self) -> None:
        run = self.options.engine
        assert run is not None
        run.arrive("stop", self._rank, Arrival(self.checks_ok, self.outcome.cause))
        if not getattr(self, "_rank0_stop", Arrival(True)).ok:
            self.checks_ok = False  # rank 0 could not be stopped cleanly: no rank is started
            seen: Arrival = self._rank0_stop
            self.outcome.outcome, self.outcome.exit_code = Outcome.FAILED, ExitCode.CHECKS_FAILED
            self.outcome.cause = f"{run.label(0)} stopped: {seen.note}; this rank was stopped and not started"

    def _agree_on_checks(self) -> None:
        """Only when every rank passed its preflight does anything stop; a rank that passed names the one that
        did not (its host), and changes nothing either."""
        run = self.options.engine
        assert run is not None
        failed = run.meet("checks", self._rank, Arrival(self.checks_ok, self.outcome.cause))
        others = [(rank, seen) for rank, seen in failed if rank != self._rank]
        if not others or not self.checks_ok:
            return
        self.checks_ok = False
        self.outcome.outcome, self.outcome.exit_code = Outcome.PREFLIGHT_FAILED, ExitCode.CHECKS_FAILED
        self.outcome.cause = f"{run.failed_line(others, 'failed its preflight')}; {NOT_STOPPED}"
        self.outcome.hint = f"fix {', '.join(run.hosts[rank] for rank, _ in others)}, then deploy {run.engine} again"

    def _dist_port(self, step: Step) -> None:
        """Every rank runs its side of the dist port test at once (they have just met at the checks), then reads
        every rank's answer: a problem fails every rank, naming the port, the ranks and their hosts, before
        anything stops (`--skip-check engine.dist_port` / `engine.dist_reach` leaves a side out; `--force` goes on
        past it, naming it)."""
        run = self.options.engine
        assert run is not None
        (command,) = step.part(DIST_PORT)
        self.reporter.event(Event(self.spec.name, "preflight", f"testing the dist port {run.dist_init_addr} "
                                  f"({'binding it' if self._rank == 0 else 'connecting to rank 0'})"))  # fmt: skip
        workers = range(1, len(run.hosts))
        answer = run_rank(self.host, self.spec.name, self._rank, command, lambda: run.wait_for("dist-port", workers))
        run.arrive("dist-port", self._rank, Arrival(True, value=(answer, self.spec.unit_name)))
        problems = dist_report(run, run.wait_for("dist-port", range(len(run.hosts)))).problems(
            getattr(self.options, "skip_checks", ())
        )
        if not problems:
            return
        if getattr(self.options, "force", False):
            for line in problems:
                self.reporter.event(Event(self.spec.name, "preflight", f"--force: {line}", level="warn"))
            return
        self.checks_ok = False
        self.outcome.outcome, self.outcome.exit_code = Outcome.PREFLIGHT_FAILED, ExitCode.CHECKS_FAILED
        self.outcome.cause = f"engine {run.engine}: {'; '.join(problems)}; {NOT_STOPPED}"
        self.outcome.hint = (f"`specops doctor {run.engine}` shows the dist port test; free the port on rank 0 or "
                             f"open it to the other ranks, then {self.steps.action} {run.engine} again")  # fmt: skip

    def _rollback_confirm(self, confirm: Confirm) -> Confirm:
        """The lock's check; for a rank, also the wait until every rank stopped before the rollback restarts."""
        run = self.options.engine
        return confirm if run is None else run.rollback_confirm(self.spec.name, confirm)

    def _gate_fn(self, point: str) -> GateFn:
        """restart_and_gate for a host; for a rank, the engine's gate at `point` ("gates", "rollback")."""
        run = self.options.engine
        return restart_and_gate if run is None else run.gate(self.spec.name, point)


def dist_report(run: EngineRun, seen: dict[int, Arrival]) -> DistPortReport:
    """Every rank's answer at the dist-port point as one report (a rank gone before it answered could not test);
    the engine's own unit is rank 0's."""
    answers: list[RankAnswer] = []
    unit = ""
    for rank, arrival in sorted(seen.items()):
        if isinstance(arrival.value, tuple) and isinstance(arrival.value[0], RankAnswer):
            answers.append(arrival.value[0])
            unit = unit or str(arrival.value[1])
        else:
            answers.append(RankAnswer(rank, run.hosts[rank], None, arrival.note or "stopped"))
    address, port = split_dist_addr(run.dist_init_addr)
    return DistPortReport(address, port, unit, answers)
