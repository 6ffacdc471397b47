"""The test engine stops as SGLang does on SIGTERM: it drains running requests, refuses new ones, then exits;
its scheduler child holds GPU memory (as the nvidia-smi double shows) until the engine stops it."""

from __future__ import annotations

import json
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.testbed.engine.local import LocalEngine, http_get

pytestmark = [pytest.mark.testbed, pytest.mark.testbed_venv]


@pytest.fixture
def engine(testbed_python: str, models: dict[str, Path], tmp_path: Path) -> Iterator[LocalEngine]:
    args = ["--model-path", str(models["target"]), "--served-model-name", "qwen-drain", "--enable-metrics"]
    started = LocalEngine(testbed_python, args, tmp_path / "engine.log",
                          env={"SGLANG_TESTENGINE_TOKENS_PER_SECOND": "100"})  # fmt: skip
    try:
        yield started
    finally:
        started.stop()


def _gauge(engine: LocalEngine, name: str) -> float:
    code, body = http_get(engine.base_url + "/metrics")
    assert code == 200
    line = next(line for line in body.decode().splitlines() if line.startswith(name + "{"))
    return float(line.rsplit(" ", 1)[1])


def _stream(engine: LocalEngine, tokens: int, into: list[dict[str, object]]) -> None:
    payload = {"text": "drain me", "sampling_params": {"max_new_tokens": tokens}, "stream": True}
    request = urllib.request.Request(engine.base_url + "/generate", data=json.dumps(payload).encode())
    with urllib.request.urlopen(request, timeout=60) as response:
        for raw in response:
            line = raw.decode().strip()
            if line == "data: [DONE]":
                into.append({"done": True})
            elif line.startswith("data: "):
                into.append(json.loads(line.removeprefix("data: ")))


def _holders(engine: LocalEngine) -> list[dict[str, object]]:
    folder = engine.log_path.parent / "gpu-holders"
    return [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]


def test_sigterm_drains_a_running_stream_refuses_new_requests_then_exits(engine: LocalEngine) -> None:
    engine.health_codes_until_up()
    assert _gauge(engine, "sglang:num_running_reqs") == 0.0
    assert _gauge(engine, "sglang:num_queue_reqs") == 0.0
    holders = _holders(engine)
    assert len(holders) == 1 and holders[0]["gpus"] == [0] and holders[0]["used_memory"] == 60000
    chunks: list[dict[str, object]] = []
    client = threading.Thread(target=_stream, args=(engine, 300, chunks))  # 3 s at 100 tokens/s
    client.start()
    deadline = time.monotonic() + 10
    while _gauge(engine, "sglang:num_running_reqs") != 1.0:
        assert time.monotonic() < deadline, "the stream never showed as running"
        time.sleep(0.05)
    engine.process.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    assert http_get(engine.base_url + "/health")[0] == 503
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(engine.base_url + "/generate", data=b'{"text": "late"}'))
    assert refused.value.code == 503
    assert _gauge(engine, "sglang:num_running_reqs") == 1.0  # still finishing the stream
    client.join(timeout=30)
    assert engine.wait_exit(timeout=30) == 0
    assert chunks[-1] == {"done": True}
    last = chunks[-2]["meta_info"]
    assert isinstance(last, dict) and last["completion_tokens"] == 300
    assert last["finish_reason"] == {"type": "length", "length": 300}
    log = engine.log_text()
    assert "SIGTERM received" in log and "Gracefully exiting... remaining number of requests 1" in log
    pid = int(str(holders[0]["pid"]))
    assert not Path(f"/proc/{pid}").exists()  # the engine stopped its scheduler: the GPU memory is free
