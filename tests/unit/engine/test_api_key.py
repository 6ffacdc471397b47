"""SGLang's API key: the NAME of a secret in the config, the value only in the host's 0600 env file; the unit
holds `${NAME}`, every output masks it, extra_args cannot set it, and the engine client sends it."""

from __future__ import annotations

import http.server
import json
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from specops.commands.journal import split_journal
from specops.config.inventory import HostSpec
from specops.config.secrets import engine_api_key
from specops.engine.client import EngineClient, EngineError
from specops.host.local import LocalHost
from tests.unit.clirun import run_cli
from tests.unit.conftest import VALID_HOST
from tests.unit.test_render_golden import systemd_verify

KEY = "sk-very-secret-4711"
PROTECTED = VALID_HOST + 'secrets = ["SGLANG_API_KEY"]\napi_key_secret = "SGLANG_API_KEY"\n'


@pytest.fixture
def protected(write_config: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SGLANG_API_KEY", KEY)
    return write_config(PROTECTED)


def test_the_unit_passes_the_key_by_reference_and_render_never_shows_the_value(
    protected: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    unit = run_cli(capsys, "render", "llm-two")
    assert unit.code == 0, unit.err
    assert "    --api-key ${SGLANG_API_KEY}" in unit.out.splitlines()
    as_json = run_cli(capsys, "render", "llm-two", "--json")
    env = run_cli(capsys, "render", "llm-two", "--env")
    assert "SGLANG_API_KEY=***" in env.out.splitlines()
    for result in (unit, as_json, env):
        assert KEY not in result.out + result.err
    if shutil.which("systemd-analyze"):
        verified = systemd_verify(unit.out, "sglang.service", tmp_path)
        assert "api-key" not in verified.stderr and "SGLANG_API_KEY" not in verified.stderr


def test_an_api_key_secret_that_is_not_among_the_secrets_is_a_config_error(
    write_config: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(VALID_HOST + 'api_key_secret = "SGLANG_API_KEY"\n')
    result = run_cli(capsys, "config", "check")
    assert result.code == 3
    assert "specops.toml: hosts.llm-two.api_key_secret: SGLANG_API_KEY is not listed in hosts.llm-two.secrets" in (
        result.err
    )


@pytest.mark.parametrize("args", [["--api-key", KEY], [f"--api-key={KEY}"], ["--api", KEY]])
def test_extra_args_cannot_set_the_api_key(
    write_config: Callable[[str], Path], capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    write_config(VALID_HOST + "extra_args = " + json.dumps(args) + "\n")
    result = run_cli(capsys, "config", "check")
    assert result.code == 3 and "extra_args.0" in result.err and "--api-key" in result.err
    assert KEY not in result.out + result.err


def test_the_key_is_read_from_the_secrets_file_of_the_loaded_config(
    write_config: Callable[[str], Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SGLANG_API_KEY", raising=False)
    path = write_config('secrets_file = "secrets.env"\n' + PROTECTED)
    (path.parent / "secrets.env").write_text(f"SGLANG_API_KEY={KEY}\n")
    from specops.config.loader import load

    spec = load(path).inventory.hosts["llm-two"]
    key = engine_api_key(spec)
    assert key is not None and key.reveal() == KEY and f"{key}" == "***"


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers like SGLang with --api-key: 401 without the right bearer token."""

    seen: ClassVar[list[str | None]] = []

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        auth = self.headers.get("Authorization")
        self.seen.append(auth)
        ok = auth == "Bearer " + KEY
        body = json.dumps({"data": [{"id": "m"}]} if ok else {"error": "Unauthorized"}).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[int]:
    _Recorder.seen = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def _spec(port: int, api_key_secret: str | None) -> HostSpec:
    return HostSpec(
        name="local", ssh="local", python="/usr/bin/python3", model_path="/m", port=port,
        secrets=[api_key_secret] if api_key_secret else [], api_key_secret=api_key_secret,
    )  # fmt: skip


def test_the_client_sends_the_key_of_the_hosts_api_key_secret(server: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGLANG_API_KEY", KEY)
    with EngineClient(LocalHost(), _spec(server, "SGLANG_API_KEY")) as client:
        assert client.models()["data"][0]["id"] == "m"
    assert _Recorder.seen == ["Bearer " + KEY]


def test_without_a_key_a_protected_engine_is_a_clear_error_that_names_the_setting(server: int) -> None:
    with EngineClient(LocalHost(), _spec(server, None)) as client, pytest.raises(EngineError) as caught:
        client.models()
    assert "answered 401" in caught.value.message and "api_key_secret" in (caught.value.hint or "")
    assert _Recorder.seen == [None]


def test_journal_lines_never_carry_the_key() -> None:
    text = f"server_args=ServerArgs(model_path='/m', api_key='{KEY}', port=30000)\nargv: --api-key {KEY}\n"
    lines, _cursor = split_journal(text)
    assert lines == ["server_args=ServerArgs(model_path='/m', api_key='***', port=30000)", "argv: --api-key ***"]
