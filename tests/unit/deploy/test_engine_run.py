"""The meeting points of a multi-node engine's ranks (specops/deploy/engine_run.py): the order they act in and
what a rank that fails or stops early does to the others. Each rank runs in its own thread, as in a deploy."""

from __future__ import annotations

import threading
import time

import pytest

from specops.deploy.engine_run import Arrival, EngineRun
from specops.errors import LockHeld

HOSTS = ["ds-a", "ds-b", "ds-c"]


def _in_thread(target: object) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)  # type: ignore[arg-type]
    thread.start()
    return thread


def test_a_rank_locks_only_after_every_lower_rank_holds_its_lock() -> None:
    run = EngineRun("ds", HOSTS)
    order: list[int] = []

    def rank(index: int) -> None:
        run.take_turn(index)
        order.append(index)
        run.arrive("lock", index, Arrival(True))

    threads = [_in_thread(lambda index=index: rank(index)) for index in (2, 1)]
    time.sleep(0.2)
    assert order == []  # ranks 1 and 2 wait for rank 0
    rank(0)
    for thread in threads:
        thread.join(timeout=5)
    assert order == [0, 1, 2]


def test_a_lower_rank_that_cannot_lock_ends_the_higher_ranks_turn_as_a_held_lock() -> None:
    """Two deploys of one engine never deadlock: the second, stopped at rank 0's lock, takes no other rank's."""
    run = EngineRun("ds", HOSTS)
    run.leave(0, "stopped: ds-a is locked by alice (pid 42)")
    with pytest.raises(LockHeld) as held:
        run.take_turn(1)
    assert held.value.message == (
        "engine ds: not locked here: rank 0 (ds-a) was not locked: stopped: ds-a is locked by alice (pid 42)"
    )
    assert held.value.exit_code == 6


def test_every_rank_learns_which_rank_failed_its_preflight() -> None:
    run = EngineRun("ds", HOSTS[:2])
    seen: dict[int, list[tuple[int, Arrival]]] = {}
    worker = _in_thread(lambda: seen.__setitem__(1, run.meet("checks", 1, Arrival(False, "torchcodec.ffmpeg: gone"))))
    seen[0] = run.meet("checks", 0, Arrival(True))
    worker.join(timeout=5)
    assert seen[0] == seen[1] == [(1, Arrival(False, "torchcodec.ffmpeg: gone"))]
    assert (
        run.failed_line(seen[0], "failed its preflight")
        == "rank 1 (ds-b) failed its preflight: torchcodec.ffmpeg: gone"
    )


def test_a_rank_that_stopped_counts_as_failed_at_every_point_it_never_reached() -> None:
    run = EngineRun("ds", HOSTS[:2])
    run.leave(1, "stopped: ds-b stopped answering")
    assert run.meet("checks", 0, Arrival(True)) == [(1, Arrival(False, "stopped: ds-b stopped answering"))]
    run.leave(0, "stopped: lost")
    assert run.rank_zero("gates") == "stopped: lost"  # a worker waiting on rank 0's gates stops waiting


def test_a_waiting_rank_stops_on_ctrl_c_in_another_thread() -> None:
    cancel = threading.Event()
    run = EngineRun("ds", HOSTS[:2], cancel)
    cancel.set()
    with pytest.raises(KeyboardInterrupt):
        run.wait_for("stop", [0])


def test_no_rank_restarts_in_a_rollback_before_every_rank_has_stopped() -> None:
    run = EngineRun("ds", HOSTS[:2])
    asked: list[str] = []
    switched: list[int] = []

    def rank(index: int) -> None:
        confirm = run.rollback_confirm(HOSTS[index], asked.append)
        confirm("stopping sglang.service")
        confirm("switching current")
        switched.append(index)

    worker = _in_thread(lambda: rank(1))
    time.sleep(0.2)
    assert switched == []  # rank 1 stopped; rank 0 has not
    rank(0)
    worker.join(timeout=5)
    assert sorted(switched) == [0, 1] and asked.count("switching current") == 2


def test_a_rank_whose_work_raised_no_longer_keeps_the_others_waiting() -> None:
    run = EngineRun("ds", HOSTS[:2])
    with pytest.raises(ConnectionError), run.present("ds-b", "its deploy ended"):
        raise ConnectionError("ds-b: connection refused")
    assert run.meet("checks", 0, Arrival(True)) == [(1, Arrival(False, "its deploy ended"))]
