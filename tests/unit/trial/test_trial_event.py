"""The `trial.result` event: what the on-call reads of a trial, delivered by [notify] to a real receiver."""

from __future__ import annotations

from pathlib import Path

import pytest

from specops.config.notify import Notify
from specops.deploy.notify_events import trial_event
from specops.deploy.trial import TrialReport
from specops.engine.trial_compare import Answer, compare
from specops.ops import notify
from tests.unit.webhook import receiver


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def test_a_failed_trial_posts_its_host_release_profile_outcome_and_cause() -> None:
    bang = Answer("!" * 8, (0,) * 8, 0.5, 8.0, 1.0)
    good = Answer(" the model drafts", (1, 2, 3, 4, 5, 6, 7, 8), 0.01, 400.0, 2.5)
    report = TrialReport("llm-two", "ddtree", "nextn", release="81618f3c32d8-b75c26", outcome="failed",
                         causes=["degenerate output on 1 of 1 prompt(s): one character repeated: '!' x8"],
                         comparison=compare(("Why?",), [good], [bang]))  # fmt: skip
    with receiver() as hook:
        assert notify.deliver(Notify.model_validate({"webhook": hook.url}), trial_event(report)) == []
    (body,) = hook.events
    assert (body["event"], body["host"], body["release"], body["profile"], body["outcome"]) == (
        "trial.result", "llm-two", "81618f3c32d8-b75c26", "ddtree", "failed")  # fmt: skip
    assert body["cause"] == "degenerate output on 1 of 1 prompt(s): one character repeated: '!' x8"
    assert (body["production_profile"], body["agreement"], body["speed_ratio"]) == ("nextn", 0.0, 0.02)


def test_an_agreeing_trial_says_so() -> None:
    event = trial_event(TrialReport("llm-two", "ddtree", "nextn", release="r", outcome="agrees"))
    assert (event["outcome"], event["cause"], event["agreement"]) == (
        "agrees", "passed its smoke and agrees with production", None)  # fmt: skip
