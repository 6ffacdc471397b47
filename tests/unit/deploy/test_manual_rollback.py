"""`specops rollback`'s core: it holds the host's lock while it works, audits the outcome, and refuses to
start while another specops holds the lock."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from specops.commands.release import Listing
from specops.config.inventory import HostSpec
from specops.config.notify import Notify, use_notify
from specops.deploy import manual_rollback
from specops.deploy.rollback import RollbackResult
from specops.deploy.rollback_plan import RollbackPlan
from specops.errors import LockHeld
from specops.events import NullReporter
from specops.host.local import LocalHost
from specops.ops import lock, notify
from tests.unit.webhook import receiver


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HostSpec:
    monkeypatch.setattr("specops.ops.lock.DEFAULT_LOCK_ROOT", str(tmp_path / "run" / "lock"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return HostSpec.model_validate({"name": "llm-two", "ssh": "llm-two", "python": sys.executable,
                                    "model_path": "/m", "base_dir": str(tmp_path / "opt")})  # fmt: skip


def _planned(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host with a release to go back to (the plan's own tests are in test_rollback_plan.py)."""
    plan = RollbackPlan("llm-two", "sglang.service", "20260102-0000-bbbb", "20260101-0000-aaaa", "named", False,
                        "20260102-0000-bbbb", 60, "nextn", 900)  # fmt: skip
    monkeypatch.setattr(manual_rollback, "read_listing", lambda host, spec: Listing(plan.from_release, []))
    monkeypatch.setattr(manual_rollback, "plan_rollback", lambda *args: plan)


def test_rollback_runs_under_the_lock_and_is_audited(spec: HostSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    host = LocalHost("llm-two")
    _planned(monkeypatch)
    seen: list[object] = []

    def fake_rollback(*args: object, **kwargs: object) -> RollbackResult:
        seen.append(lock.status(host))  # who holds the lock while the rollback runs
        return RollbackResult(True, "20260102-0000-bbbb", "20260101-0000-aaaa")

    monkeypatch.setattr(manual_rollback, "rollback_host", fake_rollback)
    result = manual_rollback.manual_rollback(host, spec, lambda name: None, None, NullReporter(),  # type: ignore[arg-type,return-value]
                                             command="specops rollback llm-two")  # fmt: skip
    assert result.ok
    held = seen[0]
    assert isinstance(held, lock.LockInfo) and held.holder is not None
    assert held.holder.command == "specops rollback llm-two"
    assert lock.status(host) is None  # released afterwards
    entry = json.loads((Path(spec.service_dir) / "audit.jsonl").read_text().splitlines()[-1])
    assert (entry["action"], entry["outcome"], entry["from"], entry["to"]) == (
        "rollback", "verified", "20260102-0000-bbbb", "20260101-0000-aaaa")  # fmt: skip


def test_rollback_refuses_while_another_specops_holds_the_lock(spec: HostSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    host = LocalHost("llm-two")
    _planned(monkeypatch)
    monkeypatch.setattr(manual_rollback, "rollback_host", lambda *args: pytest.fail("rolled back under a lock"))
    other = replace(lock.LockHolder.current("specops deploy llm-two"), user="alice", machine="ci-7", pid=4242)
    with lock.acquire(host, other, heartbeat_s=60), pytest.raises(LockHeld, match="alice@ci-7"):
        manual_rollback.manual_rollback(host, spec, lambda name: None, None, NullReporter())  # type: ignore[arg-type,return-value]
    assert not (Path(spec.service_dir) / "audit.jsonl").exists()


def test_a_manual_rollback_is_posted_to_the_webhook(spec: HostSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    _planned(monkeypatch)
    done = RollbackResult(True, "20260102-0000-bbbb", "20260101-0000-aaaa")
    monkeypatch.setattr(manual_rollback, "rollback_host", lambda *args, **kwargs: done)
    with receiver() as hook:
        use_notify(Notify.model_validate({"webhook": hook.url}))
        try:
            manual_rollback.manual_rollback(LocalHost("llm-two"), spec, lambda name: None, None, NullReporter())  # type: ignore[arg-type,return-value]
            notify.wait_for_deliveries()
        finally:
            use_notify(None)
    (event,) = hook.events
    assert (event["event"], event["host"], event["release"], event["previous"], event["serving"]) == (
        "rollback.manual", "llm-two", "20260102-0000-bbbb", "20260101-0000-aaaa", "20260101-0000-aaaa")  # fmt: skip
    assert (event["outcome"], event["profile"]) == ("rolled-back", "nextn")
