"""The test engine's multi-node rendezvous, as SGLang over torch.distributed does it: rank 0 listens on the
dist-init port and waits for the other ranks (timing out with torch's message), ranks >= 1 connect and serve
no HTTP, and a lost peer takes the engine down on both sides."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.testbed.engine.local import LocalEngine, free_port, http_get

pytestmark = [pytest.mark.testbed, pytest.mark.testbed_venv]


def _rank(python: str, models: dict[str, Path], tmp_path: Path, rank: int, dist_port: int,
          timeout: str = "30") -> LocalEngine:  # fmt: skip
    args = ["--model-path", str(models["target"]), "--tp-size", "2", "--nnodes", "2", "--node-rank", str(rank),
            "--dist-init-addr", f"127.0.0.1:{dist_port}"]  # fmt: skip
    return LocalEngine(python, args, tmp_path / f"rank{rank}.log", env={"SGLANG_TESTENGINE_DIST_TIMEOUT": timeout})


@pytest.fixture
def ranks(testbed_python: str, models: dict[str, Path], tmp_path: Path) -> Iterator[list[LocalEngine]]:
    dist_port = free_port()
    started = [_rank(testbed_python, models, tmp_path, rank, dist_port) for rank in (0, 1)]
    try:
        yield started
    finally:
        for engine in started:
            engine.stop()


def _wait_exit(engine: LocalEngine, timeout: float = 20) -> int | None:
    deadline = time.monotonic() + timeout
    while engine.process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    return engine.process.poll()


def test_rank_0_alone_times_out_with_torchs_message(
    testbed_python: str, models: dict[str, Path], tmp_path: Path
) -> None:
    engine = _rank(testbed_python, models, tmp_path, 0, free_port(), timeout="2")
    try:
        assert _wait_exit(engine) == 1
        assert (
            "torch.distributed.DistStoreError: Timed out after 2 seconds waiting for clients. 1/2 clients joined."
            in (engine.log_text())
        )
        assert "Uvicorn running" not in engine.log_text()
    finally:
        engine.stop()


def test_two_ranks_join_rank_0_serves_http_rank_1_none(ranks: list[LocalEngine]) -> None:
    rank0, rank1 = ranks
    assert rank0.health_codes_until_up()[-1] == 200
    deadline = time.monotonic() + 20
    while "running schedulers only" not in rank1.log_text():
        assert time.monotonic() < deadline, rank1.log_text()
        time.sleep(0.1)
    assert http_get(rank1.base_url + "/health")[0] == 0  # nothing listens on rank 1's --port
    assert "Node rank 1 joined (2/2)" in rank0.log_text()


@pytest.mark.parametrize("lost", [0, 1])
def test_a_lost_peer_takes_the_engine_down_on_both_sides(ranks: list[LocalEngine], lost: int) -> None:
    assert ranks[0].health_codes_until_up()[-1] == 200
    ranks[lost].process.send_signal(signal.SIGKILL)
    survivor = ranks[1 - lost]
    assert _wait_exit(survivor) == 1, survivor.log_text()
    assert "Lost connection to" in survivor.log_text()
