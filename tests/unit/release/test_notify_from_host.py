"""The host posts its own rollbacks: the watch and the guard, run in-process, POST their event to a real
webhook receiver on loopback, read from the 0600 notify file a deploy's arm writes; a receiver that is down
changes nothing the guard did and leaves an audit line without the URL. The plan shows the file masked."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from specops.commands.hostdata import NOTIFY_FILE
from specops.config.inventory import HostSpec
from specops.config.notify import Notify, use_notify
from specops.deploy.step_commands import guard_commands
from specops.ops.guard import guard_state, host_notify_document
from specops.remote.release import guard, watch
from tests.unit.guard_here import arm_here
from tests.unit.release.hostfixture import add_release, audit_lines, current, point_current, record_systemctl
from tests.unit.webhook import Receiver, receiver

OLD, NEW = "20261101T000000Z-aaaa", "20261102T000000Z-bbbb"


@pytest.fixture
def hook() -> Iterator[Receiver]:
    with receiver() as found:
        yield found


@pytest.fixture
def service(tmp_path: Path, hook: Receiver) -> Path:
    """NEW serves, OLD is the plan's target; the notify file as the arm writes it for host llm-two."""
    service_dir = tmp_path / "sglang"
    add_release(service_dir, OLD)
    add_release(service_dir, NEW)
    point_current(service_dir, NEW)
    use_notify(Notify.model_validate({"webhook": hook.url, "retries": 0}))
    (service_dir / NOTIFY_FILE).write_bytes(host_notify_document("llm-two"))
    use_notify(None)
    return service_dir


def _dead_engine() -> str:
    """A URL where nothing listens: every probe of the watch fails at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/health_generate"


def _watch(service: Path, tmp_path: Path) -> dict[str, object]:
    return watch.op_watch(str(service), "sglang.service", NEW, "30", _dead_engine(), str(tmp_path / "lock"), "0.3",
                          "2", "0.1", OLD)  # fmt: skip


def test_a_release_rolled_back_by_the_watch_is_posted_by_the_host(
    service: Path, hook: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_systemctl(monkeypatch)
    reply = _watch(service, tmp_path)
    assert reply["state"] == "rolled-back" and current(service) == OLD
    (event,) = hook.events
    assert (event["event"], event["host"], event["release"], event["serving"], event["profile"]) == (
        "watch.rolled-back", "llm-two", NEW, OLD, "ddtree")  # fmt: skip
    assert (event["outcome"], event["cause"], event["source"]) == ("rolled-back", reply["reason"], "host")
    assert str(event["cause"]).startswith(f"guard: release {NEW} failed its watch ")


def test_a_rollback_by_the_guard_after_a_dead_deploy_is_posted(
    service: Path, hook: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_systemctl(monkeypatch)
    (service / ".specops-guard.json").write_text(json.dumps(guard_state(NEW, OLD)))
    point_current(service, NEW)
    manifest = service / "releases" / NEW / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "verified": False}))
    assert guard.op_guard(str(service), "sglang.service", str(tmp_path / "lock"), "90")["action"] == "rollback"
    (event,) = hook.events
    assert (event["event"], event["release"], event["serving"], event["outcome"]) == (
        "guard.rolled-back", NEW, OLD, "rolled-back")  # fmt: skip
    assert "the deploy stopped (no lock heartbeat)" in str(event["cause"])


def test_a_webhook_that_is_down_changes_nothing_and_is_audited_without_its_url(
    service: Path, hook: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_systemctl(monkeypatch)
    hook.status = 503
    assert _watch(service, tmp_path)["state"] == "rolled-back" and current(service) == OLD
    entry = audit_lines(service)[-1]
    assert (entry["action"], entry["outcome"], entry["to"]) == ("notify", "failed", NEW)
    assert entry["message"] == ("the watch.rolled-back event was not delivered to the webhook: answered 503 after "
                                "1 attempt(s)")  # fmt: skip
    assert "s3cr3t" not in (service / "audit.jsonl").read_text()


def test_without_a_webhook_the_host_posts_nothing(
    service: Path, hook: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_systemctl(monkeypatch)
    (service / NOTIFY_FILE).write_bytes(host_notify_document("llm-two"))  # no [notify]: `{}`
    assert _watch(service, tmp_path)["state"] == "rolled-back"
    assert hook.posts == [] and [e for e in audit_lines(service) if e["action"] == "notify"] == []


def test_the_plan_writes_the_webhook_to_a_0600_file_and_shows_it_masked(
    hook: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = HostSpec(name="llm-two", ssh="root@llm-two", python="/opt/venv/bin/python", model_path="/models/target",
                    base_dir=str(tmp_path / "opt"))  # fmt: skip
    use_notify(Notify.model_validate({"webhook": hook.url}))
    try:
        commands = guard_commands(spec, NEW, OLD)
        arm_here(spec, commands, tmp_path, monkeypatch, NEW, OLD)
    finally:
        use_notify(None)
    written = Path(spec.service_dir, NOTIFY_FILE)
    assert written.stat().st_mode & 0o777 == 0o600
    document = json.loads(written.read_text())
    shown = " ".join(command.stdin or "" for command in commands) + " ".join(" ".join(c.argv) for c in commands)
    assert "s3cr3t" not in shown and "http://127.0.0.1:" in shown
    assert (document["host"], document["webhook"]) == ("llm-two", hook.url)
