"""The rollback guard's op (the timer's tick), run in-process: it rolls back only when the deploy is gone and
`current` is not verified, and it does so under the host's deploy lock, so the next deploy (the real lock
script, through LocalHost) waits for the rollback instead of racing it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from specops.errors import LockHeld
from specops.host.local import LocalHost
from specops.ops.guard import guard_state
from specops.ops.lock import LockHolder, acquire
from specops.remote.release import guard
from specops.remote.release.catalog import op_list
from tests.unit.release.hostfixture import add_release, audit_lines, current, point_current, record_systemctl

OLD, NEW = "20261101T000000Z-aaaa", "20261102T000000Z-bbbb"
STALE_S = "90"


@pytest.fixture
def service(tmp_path: Path) -> Path:
    """NEW is current and unverified: what a deploy killed between its switch and "verified" leaves."""
    service_dir = tmp_path / "sglang"
    add_release(service_dir, OLD)
    add_release(service_dir, NEW, verified=False)
    point_current(service_dir, NEW)
    arm(service_dir, NEW, OLD)
    return service_dir


def arm(service_dir: Path, release: str, rollback_to: str) -> None:
    """The guard's state as the deploy's `arm` writes it: the plan's rollback target."""
    (service_dir / ".specops-guard.json").write_text(json.dumps(guard_state(release, rollback_to)))


def _tick(service: Path, lock_dir: Path) -> dict[str, object]:
    return guard.op_guard(str(service), "sglang.service", str(lock_dir), STALE_S)


def _hold(lock_dir: Path, token: str, age_s: float = 0.0) -> None:
    """A deploy's lock as the lock script writes it, its last heartbeat `age_s` ago."""
    lock_dir.mkdir(parents=True)
    holder = lock_dir / "holder.json"
    holder.write_text(json.dumps({"token": token, "command": "specops deploy llm-two"}) + "\n")
    past = time.time() - age_s
    os.utime(holder, (past, past))


def test_a_live_deploy_is_left_alone(service: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = record_systemctl(monkeypatch)
    _hold(tmp_path / "lock", "deploy")
    assert _tick(service, tmp_path / "lock") == {"action": "none", "why": "the deploy is alive (fresh lock heartbeat)"}
    assert current(service) == NEW and calls == []


def test_a_verified_current_release_is_left_alone_and_no_lock_is_taken(
    service: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = record_systemctl(monkeypatch)
    point_current(service, OLD)
    reply = _tick(service, tmp_path / "lock")
    assert reply == {"action": "none", "why": f"current release {OLD} is verified"}
    assert calls == [] and not (tmp_path / "lock").exists()


def test_a_gone_deploy_is_rolled_back_while_the_guard_holds_the_lock_and_the_next_deploy_waits(
    service: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = record_systemctl(monkeypatch)
    lock_dir = tmp_path / "run" / "lock"
    refused: list[str] = []
    rollback = guard.op_rollback

    def next_deploy_during_the_rollback(*args: str) -> dict[str, object]:
        with pytest.raises(LockHeld) as caught:  # the real lock script, as the next deploy runs it
            acquire(LocalHost("llm-two"), LockHolder.current("specops deploy llm-two"), root=str(lock_dir))
        refused.append(caught.value.message)
        return rollback(*args)

    monkeypatch.setattr(guard, "op_rollback", next_deploy_during_the_rollback)
    reply = _tick(service, lock_dir)
    assert (reply["action"], reply["previous"], reply["current"]) == ("rollback", NEW, OLD)
    assert current(service) == OLD and ["systemctl", "restart", "sglang.service"] in calls
    assert refused and f"(`specops guard: rolling back {NEW} (its deploy stopped)`" in refused[0]
    assert not lock_dir.exists()  # let go afterwards: the next deploy gets it at once
    entry = audit_lines(service)[-1]
    assert (entry["action"], entry["from"], entry["to"]) == ("rollback", NEW, OLD)
    assert entry["message"] == f"guard: the deploy stopped (no lock heartbeat) before release {NEW} was verified"
    # the deploy stopped before its gates judged NEW (Ctrl-C, kill -9): the host is rolled back, nothing marked
    assert entry["marked_bad"] is None and reply["marked_bad"] is None
    assert all(release.get("bad") is None for release in op_list(str(service))["releases"])


def test_a_dead_deploys_stale_lock_is_taken_over_for_the_rollback(
    service: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_systemctl(monkeypatch)
    lock_dir = tmp_path / "lock"
    _hold(lock_dir, "killed-deploy", age_s=120)
    seen: list[str] = []
    rollback = guard.op_rollback

    def rollback_seeing_the_lock(*args: str) -> dict[str, object]:
        seen.append(json.loads((lock_dir / "holder.json").read_text())["command"])
        return rollback(*args)

    monkeypatch.setattr(guard, "op_rollback", rollback_seeing_the_lock)
    assert _tick(service, lock_dir)["action"] == "rollback"
    assert seen == [f"specops guard: rolling back {NEW} (its deploy stopped)"]
    assert current(service) == OLD and not lock_dir.exists()
    assert not [name for name in os.listdir(tmp_path) if name.startswith("lock.removed-")]


def test_a_deploy_that_takes_the_lock_first_keeps_the_host(
    service: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The heartbeat looked stale at the check, but another specops took the lock before the guard could."""
    calls = record_systemctl(monkeypatch)
    lock_dir = tmp_path / "lock"
    monkeypatch.setattr(guard, "lock_is_alive", lambda *_: False)  # the check saw no live deploy...
    _hold(lock_dir, "next-deploy")  # ...and a new deploy holds a fresh lock by the time the guard takes it
    reply = _tick(service, lock_dir)
    assert reply == {"action": "none", "why": "another specops took the lock (it owns the host now)"}
    assert current(service) == NEW and calls == []
    assert json.loads((lock_dir / "holder.json").read_text())["token"] == "next-deploy"
