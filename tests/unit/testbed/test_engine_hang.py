"""The test engine's hang: like a hung SGLang server it accepts the TCP connection and never answers, after N
requests (environment) or N seconds (environment, or the build's own sglang/testengine_env.json)."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.testbed.engine import DDTREE_PATCH, copy_build
from tests.testbed.engine.local import LocalEngine

pytestmark = [pytest.mark.testbed, pytest.mark.testbed_venv]  # starts engines: outside the fast suite


def _args(models: dict[str, Path]) -> list[str]:
    return ["--model-path", str(models["target"]), "--served-model-name", "qwen-hang"]


@pytest.fixture
def engines() -> Iterator[list[LocalEngine]]:
    started: list[LocalEngine] = []
    yield started
    for engine in started:
        engine.stop()  # SIGTERM ends a hung engine too: its stuck requests are daemon threads


def _wait_listening(engine: LocalEngine, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert engine.process.poll() is None, engine.log_text()
        try:
            socket.create_connection(("127.0.0.1", engine.port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"engine never listened:\n{engine.log_text()}")


def _answers(url: str) -> bool:
    """True when the server answers at all (any status); False when it accepts and stays silent for 2 s."""
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except (TimeoutError, urllib.error.URLError) as error:
        reason = getattr(error, "reason", error)
        assert isinstance(reason, TimeoutError), f"not a silent server: {error!r}"
        return False


def test_after_n_requests_it_accepts_connections_and_never_answers(
    testbed_python: str, models: dict[str, Path], tmp_path: Path, engines: list[LocalEngine]
) -> None:
    engine = LocalEngine(testbed_python, _args(models), tmp_path / "engine.log",
                         env={"SGLANG_TESTENGINE_HANG_AFTER_REQUESTS": "2"})  # fmt: skip
    engines.append(engine)
    _wait_listening(engine)
    assert _answers(engine.base_url + "/get_model_info")
    assert _answers(engine.base_url + "/health_generate")
    assert not _answers(engine.base_url + "/health_generate")
    assert engine.process.poll() is None  # alive, only silent


def test_a_build_carries_its_own_hang_which_wins_over_the_environment(
    testbed_python: str, models: dict[str, Path], tmp_path: Path, engines: list[LocalEngine]
) -> None:
    build = copy_build(tmp_path / "python", [DDTREE_PATCH])
    (build / "sglang" / "testengine_env.json").write_text(json.dumps({"SGLANG_TESTENGINE_HANG_AFTER_SECONDS": "0"}))
    engine = LocalEngine(testbed_python, _args(models), tmp_path / "engine.log", build=build,
                         env={"SGLANG_TESTENGINE_HANG_AFTER_SECONDS": "3600"})  # fmt: skip
    engines.append(engine)
    _wait_listening(engine)
    assert not _answers(engine.base_url + "/health_generate")
    assert "Uvicorn running on" in engine.log_text()
