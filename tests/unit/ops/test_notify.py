"""Events to [notify] from this machine, against a real webhook receiver on loopback and real commands: what is
delivered, and that a receiver or command that fails is retried, warned about and logged, never raised and
never shown with the URL's credentials."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from specops.config.notify import Notify
from specops.deploy.notify_events import deploy_events
from specops.deploy.outcome import HostOutcome, Outcome
from specops.ops import notify
from tests.unit.webhook import receiver

SECRETS = ("s3cr3t-path", "s3cr3t-query")


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state" / "specops" / notify.LOG_FILE


def _event() -> dict[str, object]:
    return notify.event("deploy.failed", host="llm-two", release="20261102T000000Z-bbbb", outcome="failed",
                        cause="smoke: 2 of 3 prompts failed", previous="20261101T000000Z-aaaa",
                        profile="ddtree")  # fmt: skip


def test_an_event_is_posted_as_json_and_given_to_the_command(tmp_path: Path, state: Path) -> None:
    got = tmp_path / "stdin.json"
    with receiver() as hook:
        settings = Notify.model_validate({"webhook": hook.url, "command": ["sh", "-c", f"cat > {got}"]})
        assert notify.deliver(settings, _event()) == []
    ((path, body),) = hook.posts
    assert path == "/hooks/s3cr3t-path?token=s3cr3t-query"  # the URL as written, credentials and all
    assert json.loads(got.read_text()) == body
    assert (body["event"], body["host"], body["release"], body["previous"], body["profile"], body["outcome"]) == (
        "deploy.failed", "llm-two", "20261102T000000Z-bbbb", "20261101T000000Z-aaaa", "ddtree", "failed")  # fmt: skip
    assert body["cause"] == "smoke: 2 of 3 prompts failed" and body["schema"] == 1 and body["source"] == "specops"
    assert str(body["time"]).endswith("Z") and body["specops_version"]
    logged = [json.loads(line) for line in state.read_text().splitlines()]
    assert [(line["to"], line["ok"]) for line in logged] == [("webhook http://127.0.0.1:" + path_port(hook.url)
                                                              + "/***", True), ("command sh", True)]  # fmt: skip


def path_port(url: str) -> str:
    return url.split(":")[2].split("/")[0]


def test_a_failing_webhook_is_retried_then_warned_and_logged_without_its_secrets(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with receiver() as hook:
        hook.status = 500
        settings = Notify.model_validate({"webhook": hook.url, "retries": 1, "command": ["false"]})
        failures = notify.deliver(settings, _event())
    assert len(hook.posts) == 2  # one retry
    assert failures == [f"webhook http://127.0.0.1:{path_port(hook.url)}/***: answered 500 after 2 attempt(s)",
                        "command `false`: exited 1"]  # fmt: skip
    err = capsys.readouterr().err
    assert "warning: notify: the deploy.failed event was not delivered: webhook http://127.0.0.1:" in err
    text = err + state.read_text()
    assert not [secret for secret in SECRETS if secret in text]
    assert [json.loads(line)["ok"] for line in state.read_text().splitlines()] == [False, False]


def test_an_unreachable_webhook_and_a_hung_command_never_raise_and_end_in_time() -> None:
    with receiver() as hook:
        url = hook.url  # closed when the block ends: nothing listens there any more
    settings = Notify.model_validate({"webhook": url, "retries": 0, "timeout_s": 1,
                                      "command": [sys.executable, "-c", "import time; time.sleep(30)"]})  # fmt: skip
    began = time.monotonic()
    notify.send(_event(), settings)
    notify.wait_for_deliveries()
    assert time.monotonic() - began < 5


def _outcome(host: str, outcome: Outcome, cause: str = "") -> HostOutcome:
    return HostOutcome(host, outcome, attempted="20261102T000000Z-bbbb", previous="20261101T000000Z-aaaa",
                       release="20261101T000000Z-aaaa" if outcome is Outcome.ROLLED_BACK else None,
                       cause=cause)  # fmt: skip


def test_a_fleet_stopped_at_its_canary_says_so_in_its_summary() -> None:
    results = {"gpu-1": _outcome("gpu-1", Outcome.ROLLED_BACK, "smoke failed: 2 of 3 prompts"),
               "gpu-2": _outcome("gpu-2", Outcome.SKIPPED, "the canary gpu-1 failed"),
               "gpu-3": _outcome("gpu-3", Outcome.SKIPPED, "the canary gpu-1 failed")}  # fmt: skip
    events = deploy_events(results, {"gpu-1": "ddtree", "gpu-2": "ddtree", "gpu-3": "ddtree"})
    assert [(e["event"], e["host"]) for e in events] == [("deploy.rolled-back", "gpu-1"), ("deploy.fleet", None)]
    host, fleet = events
    assert (host["release"], host["serving"], host["profile"]) == ("20261102T000000Z-bbbb", "20261101T000000Z-aaaa",
                                                                  "ddtree")  # fmt: skip
    assert (fleet["outcome"], fleet["release"], fleet["profile"]) == ("failed", "20261102T000000Z-bbbb", "ddtree")
    assert fleet["cause"] == ("1 rolled-back, 2 skipped; gpu-1: rolled-back (smoke failed: 2 of 3 prompts); "
                              "not started: the canary gpu-1 failed")  # fmt: skip
    assert fleet["hosts"] == {"gpu-1": "rolled-back", "gpu-2": "skipped", "gpu-3": "skipped"}


def test_an_unchanged_host_sends_nothing_and_one_host_sends_no_summary() -> None:
    assert deploy_events({"gpu-1": _outcome("gpu-1", Outcome.UNCHANGED)}, {}) == []
    (only,) = deploy_events({"gpu-1": _outcome("gpu-1", Outcome.DEPLOYED)}, {})
    assert (only["event"], only["outcome"]) == ("deploy.verified", "deployed")
