"""EngineClient against the real test engine run locally (LocalHost: its tunnel is a plain TCP connection).

Real HTTP, real status codes and JSON from the SGLang-compatible engine; the SSH-tunnel variant of the same
client runs in tests/e2e/test_gates.py.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from specops.config.inventory import HostSpec
from specops.config.profile import Profile, Smoke
from specops.engine.client import EngineClient, EngineError
from specops.engine.smoke import run_smoke
from specops.host.local import LocalHost
from tests.testbed.engine import BUILD_PYTHON, DDTREE_PATCH, copy_build
from tests.testbed.engine.local import LocalEngine, free_port
from tests.testbed.models import write_model_fixtures

pytestmark = [pytest.mark.testbed, pytest.mark.testbed_venv]  # starts engines: outside the fast suite


@pytest.fixture(scope="module")
def venv_python() -> str:
    configured = os.environ.get("SPECOPS_TESTBED_PYTHON")
    if configured and (Path(configured).parent.parent / "pyvenv.cfg").exists():
        return configured
    from tests.testbed import pyenv

    try:
        return str(pyenv.venv_python(pyenv.ensure_host_venv()))
    except Exception as exc:  # the build names the failing step
        pytest.fail(f"cannot get the hosts' venv (torch==2.13.0 torchcodec==0.13.0): {exc}")


def _args(models: dict[str, Path], metrics: bool) -> list[str]:
    args = ["--model-path", str(models["target"]), "--served-model-name", "qwen-ddtree",
            "--speculative-algorithm", "DDTREE", "--speculative-draft-model-path", str(models["draft"]),
            "--speculative-dflash-block-size", "16", "--speculative-num-draft-tokens", "16",
            "--speculative-ddtree-budget", "8", "--page-size", "1"]  # fmt: skip
    return [*args, "--enable-metrics"] if metrics else args


@pytest.fixture(scope="module")
def engines(venv_python: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, LocalEngine]]:
    """Both builds at once (they start in parallel: the slow part is importing torch)."""
    tmp = tmp_path_factory.mktemp("engines")
    models = write_model_fixtures(tmp / "models")
    patched = copy_build(tmp / "patched", [DDTREE_PATCH])
    started = {
        "patched": LocalEngine(venv_python, _args(models, True), tmp / "patched.log", build=patched),
        "unpatched": LocalEngine(venv_python, _args(models, False), tmp / "unpatched.log", build=BUILD_PYTHON),
    }
    yield started
    for engine in started.values():
        engine.stop()


def _spec(port: int) -> HostSpec:
    return HostSpec(name="local", ssh="local", python="/usr/bin/python3", model_path="/m", port=port,
                    served_model_name="qwen-ddtree", listen="0.0.0.0")  # fmt: skip


def _until_200(client: EngineClient, timeout: float = 120) -> list[int]:
    seen: list[int] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = client.health_generate()
        if not seen or seen[-1] != code:
            seen.append(code)
        if code == 200:
            return seen
        time.sleep(0.1)
    raise AssertionError(f"no 200 within {timeout}s: {seen}")


PROFILE = Profile(name="ddtree", algorithm="DDTREE",
                  smoke=Smoke(prompt="Explain.", max_new_tokens=32, min_tokens_per_s=20, min_accept_length=2.0))  # fmt: skip


def test_patched_engine_health_info_models_generate_metrics(engines: dict[str, LocalEngine]) -> None:
    with EngineClient(LocalHost(), _spec(engines["patched"].port)) as client:
        codes = _until_200(client)
        assert codes[-1] == 200 and set(codes) <= {0, 503, 200}  # 0: not listening yet, 503: starting
        info = client.server_info()
        assert info["speculative_algorithm"] == "DDTREE" and info["version"]
        assert client.models()["data"][0]["id"] == "qwen-ddtree"
        body = client.generate("Explain speculative decoding.", 16)
        assert body["meta_info"]["completion_tokens"] == 16 and body["meta_info"]["spec_accept_length"] > 2
        metrics = client.metrics()
        assert metrics is not None and "sglang:spec_accept_length" in metrics
        result = run_smoke(client, PROFILE, _spec(engines["patched"].port), None)
        assert result.passed, result.reason


def test_unpatched_engine_fails_smoke_and_has_no_metrics(engines: dict[str, LocalEngine]) -> None:
    spec = _spec(engines["unpatched"].port)
    with EngineClient(LocalHost(), spec) as client:
        _until_200(client)
        assert client.metrics() is None
        result = run_smoke(client, PROFILE, spec, None)
    assert not result.passed
    assert {gate.id for gate in result.failed_gates} >= {"output", "accept-length"}
    assert result.figures["text_head"].startswith("!!!!")


def test_nothing_listening_is_health_0_and_a_clear_error() -> None:
    with EngineClient(LocalHost(), _spec(free_port())) as client:
        assert client.health_generate() == 0
        with pytest.raises(EngineError, match="the engine does not answer"):
            client.server_info()
