"""Is a multi-node engine's dist port usable: free on rank 0 (or held by the engine itself) and reachable from
every other rank by a real TCP connect from that rank?

Why here, callable with open connections: the doctor asks it (one round trip per rank, beside the probe) and a
deploy's preflight asks it before anything stops, because a worker that cannot reach rank 0's store only shows
after the model load, as rank 0's "Timed out ... waiting for clients. 1/2 clients joined.".

    report = check_ranks([rank0_host, rank1_host], resolve_engine(config, "ds", None, address_of))
    report.problems()   # [] when the port is usable; else one line per problem, naming the port and the ranks

(`check_dist_port(hosts, names, "10.1.0.11:5000", unit=..., python=...)` takes the values themselves.)

The test runs on each rank in the host's own Python (specops/remote/distport.py): rank 0 binds the port for a
few seconds, the others connect to `dist_init_addr` meanwhile; a port already held by the engine's own unit is
tested through the engine's listener instead.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from specops.commands.dist_port import LISTEN_S, dist_port_argv
from specops.commands.dist_port import split_dist_addr as split_dist_addr  # re-exported for the doctor
from specops.commands.planned import HostCommand, run
from specops.errors import SpecopsError
from specops.host.base import Host, Result

if TYPE_CHECKING:
    from specops.config.loader import Target

PORT_CHECK, REACH_CHECK = "engine.dist_port", "engine.dist_reach"  # the doctor's ids (docs/checks.md)
STOP_LISTENING = b"stop\n"  # rank 0's listener ends its wait at this line (specops/remote/distport.py)
Waiter = Callable[[], object]  # returns once every other rank has answered


@dataclass(frozen=True)
class RankAnswer:
    """What one rank said: rank 0 whether it could bind (and who holds the port), a worker whether it connected."""

    rank: int
    host: str
    ok: bool | None  # bound (rank 0) or connected (others); None: the test could not run
    error: str | None = None
    holder: str | None = None  # rank 0: "pid N comm" of the process holding the port
    holder_unit: str | None = None  # rank 0: that process's systemd unit
    rdma: list[str] = field(default_factory=list)  # /sys/class/infiniband entries
    peermem: bool | None = None  # nvidia_peermem loaded


@dataclass(frozen=True)
class DistPortReport:
    """Every rank's answer for `address:port`; `unit` is the engine's unit (its own listener is fine)."""

    address: str
    port: int
    unit: str
    ranks: list[RankAnswer]

    @property
    def held_by_engine(self) -> bool:
        first = self.ranks[0]
        return first.ok is False and first.holder_unit == self.unit

    def port_problem(self) -> str | None:
        """Rank 0's side: the port free, or held by the engine's own unit; else who holds it."""
        first = self.ranks[0]
        if first.ok is None:
            return f"rank 0 ({first.host}): the dist port test could not run: {first.error}"
        if first.ok or self.held_by_engine:
            return None
        holder = first.holder or "an unknown process"
        unit = f" ({first.holder_unit})" if first.holder_unit else ""
        return f"dist port {self.port} on rank 0 ({first.host}) is held by {holder}{unit}, not by {self.unit}"

    def unreachable(self) -> list[RankAnswer]:
        """The workers that could not connect to rank 0's dist port."""
        return [answer for answer in self.ranks[1:] if not answer.ok]

    def reach_problems(self) -> list[str]:
        """One line per worker that could not connect, naming it, rank 0 and the port."""
        first = self.ranks[0].host
        return [f"rank {answer.rank} ({answer.host}) cannot connect to rank 0 ({first}) at {self.address}:"
                f"{self.port}: {answer.error or 'no answer'}" for answer in self.unreachable()]  # fmt: skip

    def problems(self, skipped: Collection[str] = ()) -> list[str]:
        """One line per problem, each naming the port and the ranks; [] when every rank can rendezvous.
        `skipped`: check ids left out (`engine.dist_port`: rank 0's side, `engine.dist_reach`: the workers')."""
        port = self.port_problem() if PORT_CHECK not in skipped else None
        return ([port] if port else []) + (self.reach_problems() if REACH_CHECK not in skipped else [])


def planless_command(python: str, rank: int, nnodes: int, dist_init_addr: str) -> HostCommand:
    """`specops doctor ENGINE`'s command for one rank (it has no plan); a deploy runs its planned one."""
    return run(dist_port_argv(python, rank, nnodes, dist_init_addr))


def ask_rank(
    host: Host, name: str, python: str, rank: int, nnodes: int, dist_init_addr: str, until: Waiter | None = None
) -> RankAnswer:
    """Run one rank's side of the test; a failure to run it is an answer (ok=None), never an exception."""
    return run_rank(host, name, rank, planless_command(python, rank, nnodes, dist_init_addr), until)


def run_rank(host: Host, name: str, rank: int, command: HostCommand, until: Waiter | None = None) -> RankAnswer:
    """Run one rank's side with `command` (a deploy's planned one, or the doctor's); never raises. Rank 0 given
    `until` (returns once every other rank has answered) stops listening then, not at the end of its wait."""
    try:
        if rank == 0 and until is not None:
            result = _listen_until(host, command, until)
        else:
            result = host.run(list(command.argv), timeout=LISTEN_S + 20, check=False)
    except SpecopsError as error:
        return RankAnswer(rank, name, None, error.message)
    return parse_answer(rank, name, result.stdout, result.stderr)


def _listen_until(host: Host, command: HostCommand, until: Waiter) -> Result:
    """Rank 0's listener, told to stop once `until` returns: a worker that cannot connect has answered by then,
    so the listener need not hold the port for the rest of its wait (seconds, when nothing connects)."""
    with host.stream(list(command.argv), timeout=LISTEN_S + 20) as listener:
        until()
        listener.write(STOP_LISTENING)  # False when it already ended (every rank connected): nothing to stop
        return listener.wait(check=False)


def parse_answer(rank: int, name: str, stdout: bytes, stderr: bytes) -> RankAnswer:
    """The script's one JSON line as a RankAnswer (its last stderr line when it printed none)."""
    lines = stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        found = json.loads(lines[-1]) if lines else None
    except ValueError:
        found = None
    if not isinstance(found, dict):
        tail = stderr.decode("utf-8", "replace").strip().splitlines()
        return RankAnswer(rank, name, None, tail[-1] if tail else "the test printed nothing")
    ok = found.get("bound") if rank == 0 else found.get("connected")
    rdma = found.get("rdma")
    return RankAnswer(
        rank, name, ok if isinstance(ok, bool) else None, _text(found.get("error")),
        _text(found.get("holder")), _text(found.get("unit")),
        [str(item) for item in rdma] if isinstance(rdma, list) else [],
        found.get("peermem") if isinstance(found.get("peermem"), bool) else None,
    )  # fmt: skip


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def ask_every_rank(asks: Sequence[Callable[[Waiter], RankAnswer]]) -> list[RankAnswer]:
    """Every rank's side at once (rank 0's first), each given the waiter that returns once every other rank has
    answered: rank 0 stops listening then. In rank order."""
    workers_done = threading.Event()
    with ThreadPoolExecutor(max_workers=max(1, len(asks))) as pool:
        futures = [pool.submit(ask, workers_done.wait) for ask in asks]
        try:
            wait(futures[1:])
        finally:
            workers_done.set()  # also on Ctrl-C: rank 0's thread must not wait for ever
        return [future.result() for future in futures]


def check_dist_port(
    hosts: Sequence[Host], names: Sequence[str], dist_init_addr: str, *, unit: str, python: str | Sequence[str]
) -> DistPortReport:
    """Every rank's side at once (rank 0 first in `hosts`), each on its open connection; `python` is one
    interpreter for all or one per rank."""
    pythons = [python] * len(hosts) if isinstance(python, str) else list(python)
    address, port = split_dist_addr(dist_init_addr)
    answers = ask_every_rank([
        partial(ask_rank, host, name, interpreter, rank, len(hosts), dist_init_addr)
        for rank, (host, name, interpreter) in enumerate(zip(hosts, names, pythons, strict=True))
    ])  # fmt: skip
    return DistPortReport(address, port, unit, answers)


def check_ranks(hosts: Sequence[Host], ranks: Sequence[Target]) -> DistPortReport:
    """`check_dist_port` for an engine's resolved ranks (specops.config.engine_targets.resolve_engine), each
    with its open connection in the same order: rank 0's dist_init_addr, every rank's own interpreter, and
    rank 0's unit as the engine's own listener."""
    first = ranks[0].rank
    if first is None:
        raise ValueError("check_ranks: not the ranks of a multi-node engine")
    return check_dist_port(
        hosts, [rank.host.name for rank in ranks], first.dist_init_addr, unit=ranks[0].host.unit_name,
        python=[rank.host.python for rank in ranks],
    )  # fmt: skip
