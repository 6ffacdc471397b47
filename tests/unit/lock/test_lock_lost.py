"""A process that finds it has lost its lock changes nothing more on the host: the lock is asked about right
before each command that stops, kills or switches, not only at step boundaries (a deploy suspended for minutes
runs on after SIGCONT before its heartbeat thread notices)."""

from __future__ import annotations

import re

import pytest

from specops.commands.engine_stop import kill_argv, stop_argv
from specops.errors import ExitCode
from specops.events import Recorder
from specops.host.local import LocalHost
from specops.ops import lock as lock_module
from specops.ops.engine_stop import drain_and_stop, stop_engine
from specops.ops.lock import LockHolder, LockLost, acquire
from specops.ops.lock_admin import release
from tests.unit.engine.fakes import CannedServer
from tests.unit.ops.test_engine_stop import ACTIVE, SPEC, UNIT, FakeClock, host, metrics, profile


def _suspended_lock(local: LocalHost, root: str, monkeypatch: pytest.MonkeyPatch) -> lock_module.HostLock:
    """A held lock whose heartbeat thread has not run since (as after SIGSTOP), removed by someone else meanwhile."""
    held = acquire(local, LockHolder.current("specops deploy llm-two"), root=root, heartbeat_s=3600)
    assert release(local, force=True, root=root).released  # the guard, or `specops lock release --force`
    monkeypatch.setattr(lock_module, "CONFIRM_AFTER_S", 0.0)  # the suspension outlasted the confirm interval
    return held


def test_a_lock_lost_while_suspended_is_found_before_the_next_change(
    local: LocalHost, root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _suspended_lock(local, root, monkeypatch)
    assert not held.lost  # the heartbeat thread has not noticed
    with pytest.raises(LockLost) as raised:
        held.confirm("stopping sglang.service")
    assert raised.value.exit_code == ExitCode.LOCK_HELD
    assert raised.value.message == (
        "llm-two: lost the lock (removed or taken over by someone else); stopped before stopping sglang.service, "
        "changing nothing more on the host"
    )
    assert held.lost
    held.release()


def test_a_lock_still_held_is_confirmed_with_one_heartbeat(
    local: LocalHost, root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lock_module, "CONFIRM_AFTER_S", 0.0)
    with acquire(local, LockHolder.current("specops deploy llm-two"), root=root, heartbeat_s=3600) as held:
        held.confirm("stopping sglang.service")
        assert (held.lost, held.beats) == (False, 1)


def test_a_lock_lost_before_the_stop_stops_nothing(
    local: LocalHost, root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _suspended_lock(local, root, monkeypatch)
    engine = host(CannedServer().add("GET", "/metrics", metrics(1)), ACTIVE)
    with pytest.raises(LockLost, match=re.escape("stopped before stopping sglang.service")):
        stop_engine(engine, SPEC, profile(60), Recorder(), confirm=held.confirm)
    assert tuple(stop_argv(UNIT)) not in engine.commands
    held.release()


def test_a_lock_lost_during_the_drain_kills_nothing() -> None:
    """Resumed past the drain budget (the guard has started the old release meanwhile): no SIGKILL is sent to
    the engine that now runs."""

    def confirm(before: str) -> None:
        if before.startswith("killing"):
            raise LockLost(f"gpu1: lost the lock; stopped before {before}")

    engine = host(CannedServer().add("GET", "/metrics", metrics(1), metrics(1)), ACTIVE, ACTIVE, ACTIVE)
    clock = FakeClock()
    with pytest.raises(LockLost, match=re.escape(f"stopped before killing {UNIT}")):
        drain_and_stop(engine, SPEC, profile(0), Recorder(), clock, confirm)
    assert tuple(stop_argv(UNIT)) in engine.commands  # the stop was asked while the lock was ours
    assert tuple(kill_argv(UNIT)) not in engine.commands
