"""`specops logs HOST` against a recorded host: the journal is shown, and a journal that cannot be read is an
error with the host's own message (exit 5), never an empty screen with exit 0."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from specops.host.recording import RecordingHost, reply
from specops.ops.journal import JournalQuery, follow
from tests.unit.clirun import run_cli
from tests.unit.conftest import VALID_HOST


@pytest.fixture
def recorded(write_config: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch) -> RecordingHost:
    """llm-two from specops.toml, reached as a RecordingHost (the CLI's one way to connect, replaced)."""
    write_config(VALID_HOST)
    host = RecordingHost("llm-two")
    monkeypatch.setattr("specops.host.ssh.connection.connect", lambda spec: host)
    return host


def test_logs_shows_the_journal_and_explains_a_known_failure(
    capsys: pytest.CaptureFixture[str], recorded: RecordingHost
) -> None:
    recorded.script(["journalctl"], reply(stdout="starting\nCUDA out of memory\n-- cursor: s=1;i=2\n"))
    result = run_cli(capsys, "logs", "llm-two", "-n", "5")
    assert result.code == 0
    assert result.out.splitlines()[:2] == ["starting", "CUDA out of memory"]
    assert recorded.commands == [
        ("journalctl", "-u", "sglang.service", "--no-pager", "-o", "cat", "--show-cursor", "-n", "5")
    ]


def test_logs_json_gives_each_explained_line_with_its_signature_kind_and_fatality(
    capsys: pytest.CaptureFixture[str], recorded: RecordingHost
) -> None:
    import json

    journal = (
        "[2026-11-30 02:14:07 TP0] Load weight begin.\n"
        "RuntimeError: Could not load libtorchcodec. Likely causes:\n"
        "-- cursor: s=1;i=2\n"
    )
    recorded.script(["journalctl"], reply(stdout=journal))
    result = run_cli(capsys, "--json", "logs", "llm-two")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["host"] == "llm-two" and len(payload["lines"]) == 2
    (explained,) = [item for item in payload["explained"] if item["fatal"]]
    assert (explained["line_no"], explained["id"], explained["kind"]) == (1, "torchcodec-ffmpeg", "torchcodec")
    assert explained["hint"]


def test_logs_json_with_follow_is_a_usage_error(capsys: pytest.CaptureFixture[str], recorded: RecordingHost) -> None:
    result = run_cli(capsys, "--json", "logs", "llm-two", "-f")
    assert result.code == 2 and "--json and --follow" in result.out  # with --json the error is JSON too
    assert recorded.commands == []


def test_logs_when_journalctl_fails_exits_5_with_the_hosts_error(
    capsys: pytest.CaptureFixture[str], recorded: RecordingHost
) -> None:
    failure = "Failed to get journal access: Permission denied"
    recorded.script(["journalctl"], reply(stderr=failure + "\n", exit_code=1))
    result = run_cli(capsys, "logs", "llm-two")
    assert result.code == 5
    assert result.out == ""
    assert "error: llm-two: `journalctl -u sglang.service" in result.err
    assert f"| {failure}" in result.err
    assert "hint: check the journal on llm-two" in result.err


def test_a_unit_that_never_logged_is_an_empty_journal_not_an_error(
    capsys: pytest.CaptureFixture[str], recorded: RecordingHost
) -> None:
    recorded.script(["journalctl"], reply(exit_code=1))  # systemd 252 with --show-cursor and no entries
    result = run_cli(capsys, "logs", "llm-two")
    assert (result.code, result.out, result.err) == (0, "", "")


def test_a_bad_grep_is_a_usage_error_before_connecting(
    capsys: pytest.CaptureFixture[str], recorded: RecordingHost
) -> None:
    result = run_cli(capsys, "logs", "llm-two", "--grep", "(")
    assert result.code == 2
    assert "error: --grep '('" in result.err
    assert recorded.commands == []


def test_follow_resumes_after_the_last_cursor_and_filters() -> None:
    from specops.config.inventory import HostSpec

    host = RecordingHost("llm-two")
    host.script(
        ["journalctl"],
        reply(stdout="a ok\nb skip\n-- cursor: s=1;i=3\n"),
        reply(stdout=""),
        reply(stdout="c ok\n-- cursor: s=1;i=4\n"),
    )
    spec = HostSpec.model_validate({"name": "llm-two", "ssh": "llm-two", "python": "/p", "model_path": "/m"})
    stop = threading.Event()
    batches = []
    for batch in follow(host, spec, JournalQuery(grep="ok"), "s=1;i=2", stop=stop, sleep=lambda s: None):
        batches.append(batch)
        if len(batches) == 3:
            stop.set()
    assert batches == [["a ok"], [], ["c ok"]]
    cursors = [argv[argv.index("--after-cursor") + 1] for argv in host.commands]
    assert cursors == ["s=1;i=2", "s=1;i=3", "s=1;i=3"]


def test_grep_searches_the_engines_current_run_before_taking_the_last_n(
    capsys: pytest.CaptureFixture[str], recorded: RecordingHost
) -> None:
    started = "Tue 2026-12-01 10:00:00 UTC"
    recorded.script(["systemctl", "show"], reply(stdout=f"ExecMainStartTimestamp={started}\n"))
    probes = "".join('"GET /health HTTP/1.1" 200\n' for _ in range(300))
    journal = "a Traceback (most recent call last):\nRuntimeError: CUDA error\n" + probes + "-- cursor: s=1;i=9\n"
    recorded.script(["journalctl"], reply(stdout=journal))
    result = run_cli(capsys, "logs", "llm-two", "-n", "5", "--grep", "Traceback|Error")
    assert result.code == 0, result.err
    assert result.out.splitlines()[:2] == ["a Traceback (most recent call last):", "RuntimeError: CUDA error"]
    (journalctl,) = [argv for argv in recorded.commands if argv[0] == "journalctl"]
    assert journalctl[journalctl.index("--since") + 1] == started and "-n" not in journalctl


def test_grep_shows_the_last_n_matches_of_the_window(
    capsys: pytest.CaptureFixture[str], recorded: RecordingHost
) -> None:
    recorded.script(["journalctl"], reply(stdout="hit 1\nmiss\nhit 2\nhit 3\n-- cursor: s=1;i=9\n"))
    result = run_cli(capsys, "logs", "llm-two", "--since", "1 hour ago", "-n", "2", "--grep", "hit")
    assert result.code == 0, result.err
    assert result.out.splitlines() == ["hit 2", "hit 3"]
    assert [argv[argv.index("--since") + 1] for argv in recorded.commands] == ["1 hour ago"]


def test_json_logs_for_a_group_is_one_document_with_an_entry_per_host(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    other = VALID_HOST.replace("llm-two", "llm-one")
    write_config(other + VALID_HOST + '[groups]\ngpu = ["llm-one", "llm-two"]\n')
    hosts = {name: RecordingHost(name) for name in ("llm-one", "llm-two")}
    hosts["llm-one"].script(["journalctl"], reply(stdout="CUDA out of memory\n-- cursor: s=1;i=2\n"))
    hosts["llm-two"].script(["journalctl"], reply(stderr="Permission denied\n", exit_code=1))
    monkeypatch.setattr("specops.host.ssh.connection.connect", lambda spec: hosts[spec.name])
    result = run_cli(capsys, "--json", "logs", "gpu")
    assert result.code == 5
    payload = json.loads(result.out)
    one, two = payload["hosts"]
    assert (one["host"], one["lines"], one["explained"][0]["fatal"]) == ("llm-one", ["CUDA out of memory"], True)
    assert two["host"] == "llm-two" and two["error"]["exit_code"] == 5
    assert "Permission denied" in two["error"]["message"]
