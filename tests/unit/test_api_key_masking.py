"""Credentials a host hands back (the engine's command line, its journal) are masked before any output.

SGLang logs its server arguments at start and systemd puts the expanded `--api-key` on the engine's command
line; a log line may also carry a token in a URL. `specops logs`, the journal that `diagnose` quotes and
both audit logs must show each of them as ***, while what is not a credential reads as it was."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from specops.config.inventory import HostSpec
from specops.config.redact import mask_secrets
from specops.host.recording import RecordingHost, reply
from specops.ops import audit
from specops.ops.forensics import read_unit_and_journal
from tests.unit.clirun import run_cli
from tests.unit.conftest import VALID_HOST
from tests.unit.test_secrets_sweep import _record_inputs

KEY = "sk-LIVE-SECRET-123"
SPEC = HostSpec(name="llm-two", ssh="root@llm-two", python="/opt/venv/bin/python", model_path="/m")
JOURNAL = [  # what SGLang, a library or a proxy in front of the engine may log
    f"server_args=ServerArgs(model_path='/m', api_key='{KEY}', admin_api_key=None, port=30000)",
    f"argv: python -m sglang.launch_server --api-key={KEY} --port 30000",
    f"argv: python -m sglang.launch_server --admin-api-key {KEY}",
    f"Downloading https://hf:{KEY}@models.internal/target/config.json",
    f"GET /v1/models?api_key={KEY}&verbose=1 401",
    f"request headers: Authorization: Bearer {KEY}",
    f'config: {{"hf_token": "{KEY}", "port": 30000}}',
]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (f"--api-key {KEY} --port 1", "--api-key *** --port 1"),
        (f"--api-key={KEY}", "--api-key=***"),
        (f"--admin-api-key {KEY}", "--admin-api-key ***"),
        (f"--hf-token '{KEY}'", "--hf-token '***'"),
        (f"api_key='{KEY}', x=1", "api_key='***', x=1"),
        (f"env SGLANG_API_KEY={KEY} python", "env SGLANG_API_KEY=*** python"),
        (f"https://user:{KEY}@host/x", "https://user:***@host/x"),
        (f"https://{KEY}@host/x", "https://***@host/x"),
        (f"https://host/x?token={KEY}&a=1#f", "https://host/x?token=***&a=1#f"),
        (f"/x?key={KEY}", "/x?key=***"),
        (f"Authorization: Bearer {KEY}", "Authorization: Bearer ***"),
        (f'{{"api_key": "{KEY}"}}', '{"api_key": "***"}'),
    ],
)
def test_every_form_of_a_credential_is_masked(text: str, shown: str) -> None:
    assert mask_secrets(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        "--api-key ${SGLANG_API_KEY} --port 30000",  # the unit's reference, not a value
        "--tokenizer-path /m/tok --max-total-tokens 4096 --speculative-num-draft-tokens 4",
        "server_args=ServerArgs(api_key=None, max_total_tokens=None, ssl_keyfile='/k')",
        "http://127.0.0.1:30000/generate user@host releases/20261130T120000Z-abc",
    ],
)
def test_what_is_not_a_credential_reads_as_it_was(text: str) -> None:
    assert mask_secrets(text) == text


@pytest.fixture
def recorded(write_config: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch) -> RecordingHost:
    write_config(VALID_HOST)
    host = RecordingHost("llm-two")
    monkeypatch.setattr("specops.host.ssh.connection.connect", lambda spec: host)
    host.script(["journalctl"], reply(stdout="\n".join(JOURNAL) + "\n-- cursor: s=1;i=2\n"))
    return host


@pytest.mark.parametrize("mode", [(), ("--json",)], ids=["plain", "json"])
def test_specops_logs_shows_every_journal_line_with_the_key_masked(
    capsys: pytest.CaptureFixture[str], recorded: RecordingHost, mode: tuple[str, ...]
) -> None:
    result = run_cli(capsys, *mode, "logs", "llm-two")
    assert result.code == 0, result.err
    assert KEY not in result.out + result.err
    assert "https://hf:***@models.internal/target/config.json" in result.out  # the line is still there
    assert result.out.count("***") >= len(JOURNAL)


def test_the_journal_diagnose_quotes_has_the_key_masked() -> None:
    host = RecordingHost("llm-two")
    host.script(["systemctl", "show"], reply(stdout="ActiveState=failed\nSubState=failed\n"))
    host.script(lambda argv: argv[:2] == ("sh", "-c") and "InvocationID" in argv[2], reply("\n".join(JOURNAL)))
    _unit, lines = read_unit_and_journal(host, SPEC)
    assert len(lines) == len(JOURNAL) and not [line for line in lines if KEY in line]


def test_both_audit_logs_mask_a_key_that_a_message_quotes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error's text may quote a host's output (a command line, a journal line): audited, it is masked."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    inputs: list[bytes] = []
    _record_inputs(monkeypatch, inputs)
    host = RecordingHost("llm-two").script([SPEC.python, "-IS", "-c"], reply())
    message = f"the engine failed: {JOURNAL[1]}\n  | {JOURNAL[3]}"
    audit.record(host, SPEC, audit.new_entry("deploy", outcome="failed", message=message))
    local = (tmp_path / "state" / "specops" / audit.AUDIT_FILE).read_text()
    (on_host,) = inputs
    for line in (local, on_host.decode()):
        assert KEY not in line and "--api-key=***" in json.loads(line)["message"]


def test_specops_audit_masks_a_key_an_older_specops_wrote_into_the_hosts_log(
    capsys: pytest.CaptureFixture[str], recorded: RecordingHost
) -> None:
    old = {"v": 1, "when": "2026-11-29T00:00:00Z", "action": "deploy", "outcome": "failed",
           "message": f"its GPUs are not free: pid 42 ({JOURNAL[1]}) is still in sglang.service's cgroup"}  # fmt: skip
    recorded.script(["sh", "-c", audit.READ_SCRIPT], reply(json.dumps(old) + "\n"))
    for mode in ((), ("--json",)):
        shown = run_cli(capsys, *mode, "audit", "llm-two")
        assert shown.code == 0, shown.err
        assert KEY not in shown.out + shown.err and "--api-key=***" in shown.out
