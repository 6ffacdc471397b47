"""A stale lock taken over is an event for [notify]: the on-call learns that a deploy died and who took over."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from specops.config.notify import Notify, use_notify
from specops.host.local import LocalHost
from specops.ops import notify
from specops.ops.lock import LockHolder, acquire
from tests.unit.lock.conftest import age_lock
from tests.unit.webhook import receiver


def test_a_stale_lock_taken_over_is_posted_to_the_webhook(
    local: LocalHost, root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    crashed = acquire(local, replace(LockHolder.current("specops deploy llm-two"), machine="ci-runner-7", pid=4242),
                      root=root)  # fmt: skip
    crashed._stop.set()  # what kill -9 does to the heartbeat
    age_lock(root, 120)
    with receiver() as hook:
        use_notify(Notify.model_validate({"webhook": hook.url}))
        try:
            with acquire(local, LockHolder.current("rescuer"), stale_after_s=90, root=root):
                notify.wait_for_deliveries()
        finally:
            use_notify(None)
    (event,) = hook.events
    assert (event["event"], event["host"], event["outcome"]) == ("lock.taken-over", local.name, "taken-over")
    assert str(event["cause"]).startswith("took over a stale lock held by ")
    assert "ci-runner-7 pid 4242" in str(event["cause"])
