"""The guard and its watch roll back to the release the deploy's plan chose, never to the newest-created verified
one: here A (verified, older) is the plan's target, B (verified) was created later, C is the deploy's release.
A target pruned or marked bad since the plan is not replaced by another: nothing is rolled back, and the audit
log and the guard's (or the watch's) state say why. In-process, on real release folders, with a recording
systemctl and (for the watch) a loopback port where nothing answers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from specops.ops.guard import guard_state
from specops.remote.release import guard, watch
from specops.remote.release.hostdata import GUARD_STATE_FILE
from specops.remote.release.marks import op_mark_bad
from specops.remote.release.script import WATCH_FILE
from tests.unit.release.hostfixture import add_release, audit_lines, current, point_current, record_systemctl

A, B, C = "20261101T000000Z-aaaa", "20261102T000000Z-bbbb", "20261103T000000Z-cccc"
NOBODY_ANSWERS = "http://127.0.0.1:9/health_generate"


def _host(tmp_path: Path, c_verified: bool) -> Path:
    """B was created after A (a redeploy of an older build made A serve again); the plan rolls back to A."""
    service_dir = tmp_path / "sglang"
    add_release(service_dir, A)
    add_release(service_dir, B)
    add_release(service_dir, C, verified=c_verified)
    point_current(service_dir, C)
    (service_dir / GUARD_STATE_FILE).write_text(json.dumps(guard_state(C, A)))
    return service_dir


def _tick(service: Path, tmp_path: Path) -> dict[str, object]:
    return guard.op_guard(str(service), "sglang.service", str(tmp_path / "lock"), "90")


def _state(service: Path, name: str = GUARD_STATE_FILE) -> dict[str, object]:
    return dict(json.loads((service / name).read_text()))


def _watch(service: Path, tmp_path: Path, rollback_to: str) -> dict[str, object]:
    """One failed probe ends the window: nothing listens on the port."""
    return watch.op_watch(str(service), "sglang.service", C, "30", NOBODY_ANSWERS, str(tmp_path / "lock"), "0.3",
                          "1", "0.1", rollback_to)  # fmt: skip


def test_the_guard_rolls_back_to_the_planned_release_not_the_newest_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = record_systemctl(monkeypatch)
    service = _host(tmp_path, c_verified=False)
    reply = _tick(service, tmp_path)
    assert (reply["action"], reply["previous"], reply["current"]) == ("rollback", C, A)
    assert current(service) == A and ["systemctl", "restart", "sglang.service"] in calls
    assert (_state(service)["state"], _state(service)["rolled_back_to"]) == ("rolled-back", A)
    entry = audit_lines(service)[-1]
    assert (entry["action"], entry["from"], entry["to"]) == ("rollback", C, A)


def test_the_watch_rolls_back_to_its_planned_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record_systemctl(monkeypatch)
    service = _host(tmp_path, c_verified=True)
    assert _watch(service, tmp_path, A)["state"] == "rolled-back"
    assert current(service) == A
    record = _state(service, WATCH_FILE)
    assert (record["rollback_to"], record["rolled_back_to"]) == (A, A)


@pytest.mark.parametrize("change", ["marked bad", "pruned"])
def test_an_unusable_planned_target_leaves_the_host_as_it_is_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    calls = record_systemctl(monkeypatch)
    service = _host(tmp_path, c_verified=False)
    if change == "marked bad":
        op_mark_bad(str(service), A, "leaks memory", "ops@laptop")
    else:
        shutil.rmtree(service / "releases" / A)
    reply = _tick(service, tmp_path)
    assert reply["action"] == "none" and current(service) == C and calls == []
    why = str(reply["why"])
    assert f"the planned rollback target is no longer usable: release {A} is " in why
    assert why.endswith(f"left {C} as it is, NOT rolled back")
    assert (_state(service)["state"], _state(service)["reason"]) == ("no-rollback", why)
    entry = audit_lines(service)[-1]
    assert (entry["action"], entry["from"], entry["to"], entry["outcome"]) == ("guard", C, A, "no-rollback")
    assert entry["message"] == why
    assert _tick(service, tmp_path) == {"action": "none", "why": why}  # the next tick: no second audit line
    assert len(audit_lines(service)) == 1


def test_a_guard_without_a_planned_target_never_picks_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = record_systemctl(monkeypatch)
    service = _host(tmp_path, c_verified=False)
    (service / GUARD_STATE_FILE).unlink()
    reply = _tick(service, tmp_path)
    assert "but no rollback target was planned for this guard" in str(reply["why"])
    assert current(service) == C and calls == []


def test_the_watch_does_not_roll_back_to_a_target_marked_bad_since_the_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = record_systemctl(monkeypatch)
    service = _host(tmp_path, c_verified=True)
    op_mark_bad(str(service), A, "leaks memory", "ops@laptop")
    reply = _watch(service, tmp_path, A)
    changed = [argv for argv in calls if argv[0] != "journalctl"]  # the journal is read for an environment fault
    assert reply["state"] == "no-rollback" and current(service) == C and changed == []
    assert f"the planned rollback target is no longer usable (release {A} is marked bad" in str(reply["reason"])
    assert str(reply["reason"]).endswith(f"left {C} serving, NOT rolled back")
    assert _state(service, WATCH_FILE)["state"] == "no-rollback"
    entry = audit_lines(service)[-1]
    assert (entry["action"], entry["outcome"], entry["message"]) == ("watch", "no-rollback", reply["reason"])
