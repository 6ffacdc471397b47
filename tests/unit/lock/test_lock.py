"""The deploy lock on this machine (LocalHost runs the same host-side script SSH would)."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from specops.errors import ExitCode, LockHeld
from specops.host.local import LocalHost
from specops.ops import lock as lock_module
from specops.ops.lock import HostLock, LockHolder, acquire, status
from specops.ops.lock_admin import release
from tests.unit.lock.conftest import age_lock, holder_json


def _other(command: str = "specops deploy llm-two --profile ddtree") -> LockHolder:
    """A holder on another machine (so the dead-local-process rule never applies)."""
    return replace(LockHolder.current(command), user="alice", machine="ci-runner-7", pid=4242)


def test_acquire_writes_the_holder_and_exit_removes_the_lock(local: LocalHost, root: str) -> None:
    holder = LockHolder.current("specops deploy llm-two")
    with acquire(local, holder, root=root) as lock:
        written = holder_json(root)
        assert written["command"] == "specops deploy llm-two"
        assert written["pid"] == os.getpid() and written["token"] == holder.token
        assert {"user", "machine", "started_at", "heartbeat_at", "version"} <= set(written)
        assert lock.took_over is None
        info = status(local, root=root)
        assert info is not None and info.holder == lock.holder and not info.stale
    assert not Path(root).exists()
    assert status(local, root=root) is None


def test_a_live_holder_makes_acquire_raise_lock_held_naming_it(local: LocalHost, root: str) -> None:
    with acquire(local, _other(), root=root), pytest.raises(LockHeld) as caught:
        acquire(local, LockHolder.current("specops rollback llm-two"), root=root)
    error = caught.value
    assert error.exit_code == ExitCode.LOCK_HELD and int(error.exit_code) == 6
    assert error.message.startswith("llm-two: locked by alice@ci-runner-7 pid 4242 (`specops deploy llm-two")
    assert "last heartbeat 0s ago" in error.message or "last heartbeat 1s ago" in error.message
    assert "--lock-wait SECONDS" in error.hint and "specops lock release llm-two" in error.hint


def test_wait_gets_the_lock_once_the_holder_releases(
    local: LocalHost, root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lock_module, "POLL_S", 0.2)  # a waiting deploy looks every 2 s; the test need not
    first = acquire(local, _other(), root=root)
    threading.Timer(1.0, first.release).start()
    events: list[str] = []
    began = time.monotonic()
    with acquire(local, LockHolder.current("second"), wait_s=20, root=root, on_event=events.append):
        waited = time.monotonic() - began
        assert holder_json(root)["command"] == "second"
    assert 0.9 < waited < 10
    assert events[0].startswith("llm-two: waiting up to 20s for the lock held by alice@ci-runner-7 pid 4242")


def test_wait_runs_out_and_says_how_long_it_waited(local: LocalHost, root: str) -> None:
    with acquire(local, _other(), root=root), pytest.raises(LockHeld, match=r"\(waited 0.5s\)"):
        acquire(local, LockHolder.current("second"), wait_s=0.5, root=root)


def test_a_stale_lock_is_taken_over_and_the_takeover_is_reported(local: LocalHost, root: str) -> None:
    crashed = acquire(local, _other("specops deploy llm-two (killed)"), root=root)
    crashed._stop.set()  # what kill -9 does to the heartbeat
    age_lock(root, 120)
    events: list[str] = []
    with acquire(local, LockHolder.current("rescuer"), stale_after_s=90, root=root, on_event=events.append) as lock:
        assert lock.took_over is not None and lock.took_over.holder is not None
        assert lock.took_over.holder.command == "specops deploy llm-two (killed)"
        assert lock.took_over.heartbeat_age_s is not None and lock.took_over.heartbeat_age_s >= 119
        assert holder_json(root)["command"] == "rescuer"
        assert crashed.release() is False  # the old owner's late release must not remove the new lock
        assert holder_json(root)["command"] == "rescuer"
    assert events == [f"llm-two: took over a stale lock held by {lock.took_over.describe()}"]
    assert sorted(os.listdir(Path(root).parent)) == ["lock.guard"]  # the stale copy was removed


def test_a_recent_heartbeat_keeps_an_old_lock_alive(local: LocalHost, root: str) -> None:
    with acquire(local, _other(), root=root, heartbeat_s=0.2) as lock:
        age_lock(root, 600)  # an old lock...
        deadline = time.monotonic() + 10
        while (info := status(local, root=root)) and (info.heartbeat_age_s or 0) > 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert info is not None and info.heartbeat_age_s is not None and info.heartbeat_age_s <= 5
        assert lock.beats >= 1 and not lock.lost
        with pytest.raises(LockHeld):  # ...that beats is not stale
            acquire(local, LockHolder.current("rescuer"), stale_after_s=90, root=root)
        assert str(holder_json(root)["heartbeat_at"]) >= str(holder_json(root)["started_at"])


def test_keyboard_interrupt_inside_the_with_releases(local: LocalHost, root: str) -> None:
    with pytest.raises(KeyboardInterrupt), acquire(local, LockHolder.current("deploy"), root=root):
        assert Path(root).is_dir()
        raise KeyboardInterrupt
    assert not Path(root).exists()


def test_an_exception_inside_the_with_releases_and_propagates(local: LocalHost, root: str) -> None:
    with pytest.raises(RuntimeError, match="gate failed"), acquire(local, LockHolder.current("deploy"), root=root):
        raise RuntimeError("gate failed")
    assert status(local, root=root) is None


def test_heartbeat_notices_a_lost_lock(local: LocalHost, root: str) -> None:
    events: list[str] = []
    lock = acquire(local, LockHolder.current("deploy"), root=root, heartbeat_s=0.2, on_event=events.append)
    assert release(local, force=True, root=root).released
    deadline = time.monotonic() + 10
    while not lock.lost and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lock.lost
    assert lock.release() is False
    assert "llm-two: lost the lock (removed or taken over by someone else)" in events


def test_concurrent_threads_exactly_one_wins(local: LocalHost, root: str) -> None:
    winners: list[str] = []
    held: list[str] = []
    start = threading.Barrier(6)
    locks: list[HostLock] = []

    def contend(index: int) -> None:
        start.wait()
        try:
            locks.append(acquire(local, LockHolder.current(f"contender {index}"), root=root, heartbeat_s=60))
            winners.append(str(index))
        except LockHeld:
            held.append(str(index))

    threads = [threading.Thread(target=contend, args=(index,)) for index in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (len(winners), len(held)) == (1, 5)
    assert holder_json(root)["command"] == f"contender {winners[0]}"
    locks[0].release()


def test_concurrent_stale_takeovers_exactly_one_wins(local: LocalHost, root: str) -> None:
    crashed = acquire(local, _other(), root=root)
    crashed._stop.set()
    age_lock(root, 300)
    winners: list[HostLock] = []
    refusals: list[BaseException] = []
    start = threading.Barrier(5)

    def contend(index: int) -> None:
        start.wait()
        try:
            winners.append(acquire(local, LockHolder.current(f"rescuer {index}"), root=root, heartbeat_s=60))
        except Exception as error:
            refusals.append(error)

    threads = [threading.Thread(target=contend, args=(index,)) for index in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(winners) == 1 and [type(error) for error in refusals] == [LockHeld] * 4
    assert holder_json(root)["token"] == winners[0].holder.token
    assert winners[0].took_over is not None
    winners[0].release()
    assert status(local, root=root) is None
