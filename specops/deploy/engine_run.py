"""One multi-node engine deployed (or rolled back) as one: the ranks' deploys run side by side, one thread each,
and meet here at the points where the engine must act together.

- lock: rank R takes its host's lock only once ranks 0..R-1 hold theirs, so two deploys of one engine never
  deadlock (the second waits on rank 0's lock, or exits 6 as for a locked host, holding nothing);
- planned: every rank plans the same action and release id, or none goes on (nothing changed yet);
- checks: every rank's preflight passed, or none stops its engine (a failure leaves every rank untouched);
- dist-port: once every rank passed, each runs its side of the dist port test at once (rank 0 binds it, the
  others connect); a problem on any rank stops every rank, nothing stopped;
- stop: rank 0 drains first (it holds the requests in flight), the workers stop after it;
- gates: rank 0 proves the engine (readiness, smoke); each worker waits on its own journal meanwhile
  (specops/engine/rank_gates.py), so a worker that dies is named with its own cause.

A rank that stops early (an error, a lost connection) is "gone": every point it has not reached counts it as
failed, so the other ranks never wait for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from specops.commands.manifest import Figures
from specops.commands.planned import HostCommand
from specops.config.inventory import HostSpec
from specops.config.profile import Profile
from specops.deploy.rollback import SWITCHING
from specops.engine.gates import GateResult, restart_and_gate
from specops.engine.rank_gates import worker_gate

if TYPE_CHECKING:
    from specops.config.loader import Target
from specops.engine.readiness import journal_position
from specops.engine.readiness_commands import ReadinessCommands
from specops.errors import ExitCode, LockHeld, SpecopsError
from specops.events import Event, Reporter
from specops.host.base import Host
from specops.ops.engine_stop import Confirm
from specops.ops.unit import restart

WAIT_STEP_S = 0.5  # how often a waiting rank looks at the cancel flag


@dataclass(frozen=True)
class Arrival:
    """What a rank brought to a point: whether it may go on, and what it says when not."""

    ok: bool
    note: str = ""
    value: object = None


class Gate:
    """restart_and_gate's signature, for one rank of an engine (rank 0: the real gates; a worker: rank_gates)."""

    def __init__(self, run: EngineRun, rank: int, point: str) -> None:
        self.run, self.rank, self.point = run, rank, point

    def __call__(self, host: Host, spec: HostSpec, profile: Profile, previous_figures: Figures | None,
                 reporter: Reporter, *, do_restart: bool = True, cursor: str | None = None,
                 cancel: threading.Event | None = None, speedup_baseline: Figures | None = None,
                 planned: Sequence[HostCommand] = ()) -> GateResult:  # fmt: skip
        if self.rank == 0:
            try:
                result = restart_and_gate(host, spec, profile, previous_figures, reporter, do_restart=do_restart,
                                          cursor=cursor, cancel=cancel, speedup_baseline=speedup_baseline,
                                          planned=planned)  # fmt: skip
            except BaseException as error:
                self.run.arrive(self.point, 0, Arrival(False, f"rank 0 stopped: {error}"))
                raise
            self.run.arrive(self.point, 0, Arrival(result.passed, result.cause, result))
            return result
        if do_restart:
            cursor = journal_position(host, commands=ReadinessCommands.planned(planned) if planned else None)
            reporter.event(Event(spec.name, "restart", f"restarting {spec.unit_name} (a worker rank: no HTTP)"))
            restart(host, spec, planned)
        return worker_gate(host, spec, profile, reporter, lambda: self.run.rank_zero(self.point), cursor=cursor,
                           cancel=cancel, planned=planned)  # fmt: skip


GateFn = Callable[..., GateResult]


@dataclass
class EngineRun:
    """The meeting points of one engine's ranks during one command; `hosts`: the ranks' hosts, rank 0 first."""

    engine: str
    hosts: list[str]
    cancel: threading.Event | None = None
    dist_init_addr: str = ""  # rank 0's ADDR:PORT, as the other ranks reach it (the dist port test's)
    _arrived: dict[tuple[str, int], Arrival] = field(default_factory=dict)
    _gone: dict[int, str] = field(default_factory=dict)
    _cond: threading.Condition = field(default_factory=threading.Condition)

    @classmethod
    def of(cls, engine: str, ranks: Sequence[Target], cancel: threading.Event | None = None) -> EngineRun:
        """The run of an engine's resolved ranks (rank 0 first), rank 0's ADDR:PORT as its units render it: the
        one the dist port test binds and the other ranks connect to, whichever command (deploy, a group's member,
        restart) runs the engine."""
        first = ranks[0].rank if ranks else None
        return cls(engine, [target.host.name for target in ranks], cancel, first.dist_init_addr if first else "")

    def rank(self, host: str) -> int:
        return self.hosts.index(host)

    @contextmanager
    def present(self, host: str, why: str) -> Iterator[None]:
        """The block is this host's rank at work; however it ends (an error, a connection that never opened),
        the other ranks stop waiting for it."""
        try:
            yield
        finally:
            self.leave(self.rank(host), why)

    def label(self, rank: int) -> str:
        return f"rank {rank} ({self.hosts[rank]})"

    def arrive(self, point: str, rank: int, arrival: Arrival) -> None:
        with self._cond:
            self._arrived.setdefault((point, rank), arrival)
            self._cond.notify_all()

    def leave(self, rank: int, why: str) -> None:
        """This rank stops here: the others no longer wait for it."""
        with self._cond:
            self._gone.setdefault(rank, why)
            self._cond.notify_all()

    def _seen(self, point: str, rank: int) -> Arrival | None:
        if (point, rank) in self._arrived:
            return self._arrived[(point, rank)]
        if rank in self._gone:
            return Arrival(False, self._gone[rank])
        return None

    def wait_for(self, point: str, ranks: Sequence[int]) -> dict[int, Arrival]:
        """Each rank's arrival at `point` (a rank gone counts as failed); Ctrl-C in another thread ends the wait."""
        with self._cond:
            while any(self._seen(point, rank) is None for rank in ranks):
                if self.cancel is not None and self.cancel.is_set():
                    raise KeyboardInterrupt
                self._cond.wait(WAIT_STEP_S)
            return {rank: arrival for rank in ranks if (arrival := self._seen(point, rank)) is not None}

    def meet(self, point: str, rank: int, arrival: Arrival) -> list[tuple[int, Arrival]]:
        """Arrive, wait for every rank; the ranks that failed here (this one included), in rank order."""
        self.arrive(point, rank, arrival)
        every = self.wait_for(point, range(len(self.hosts)))
        return [(other, seen) for other, seen in sorted(every.items()) if not seen.ok]

    def failed_line(self, failed: list[tuple[int, Arrival]], what: str) -> str:
        """`rank 1 (ds-b) failed its preflight: ffmpeg: ...; ...`"""
        return "; ".join(f"{self.label(rank)} {what}: {arrival.note}" for rank, arrival in failed)

    def take_turn(self, rank: int) -> None:
        """Block until every lower rank holds its lock; a lower rank that could not lock ends this one's turn
        (raised as the lock being held: this rank took nothing, exit 6 as for a locked host)."""
        lower = self.wait_for("lock", range(rank))
        failed = [(other, seen) for other, seen in sorted(lower.items()) if not seen.ok]
        if failed:
            line = self.failed_line(failed, "was not locked")
            raise LockHeld(f"engine {self.engine}: not locked here: {line}",
                           hint=f"the ranks are locked in rank order; `specops lock status {self.engine}`")  # fmt: skip

    def rank_zero(self, point: str) -> GateResult | str | None:
        """Rank 0's gates at `point`: its result, a failure text when it stopped without one, None: not yet."""
        with self._cond:
            seen = self._seen(point, 0)
        if seen is None:
            return None
        return seen.value if isinstance(seen.value, GateResult) else (seen.note or "rank 0 stopped")

    def gate(self, host: str, point: str) -> GateFn:
        return Gate(self, self.rank(host), point)

    def rollback_confirm(self, host: str, confirm: Confirm) -> Confirm:
        """The lock's check, and, before the switch that restarts the engine, a wait until every rank has stopped
        its engine: an old rank never joins a new one at the rendezvous (a rank that cannot roll back leaves)."""
        rank = self.rank(host)

        def checked(what: str) -> None:
            confirm(what)
            if what == SWITCHING:
                self.meet("rollback-stopped", rank, Arrival(True))

        return checked


def ranks_disagree(run: EngineRun, plans: dict[int, Arrival]) -> str:
    """The ranks plan different releases or actions: say which (nothing changed yet)."""
    shown = ", ".join(f"{run.label(rank)}: {arrival.note}" for rank, arrival in sorted(plans.items()))
    return f"engine {run.engine}: its ranks must run the same release, but they planned {shown}"


class EngineStopped(SpecopsError):
    """Another rank of the engine failed before anything was stopped: this rank changes nothing either."""

    exit_code = ExitCode.CHECKS_FAILED
