"""The test engine's sampling-dependent output and its streamed /generate, as the real server behaves: greedy
answers depend only on the prompt, sampled ones vary; the sampled-loop fault (a build patch, or the
environment) loops only at temperature > 0. The real smoke is run against it through the real client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from specops.config.inventory import HostSpec
from specops.config.profile import Profile, Smoke
from specops.engine.client import EngineClient
from specops.engine.degenerate import degenerate_reason
from specops.engine.smoke import run_smoke
from specops.host.local import LocalHost
from tests.testbed.engine import DDTREE_PATCH, SAMPLING_LOOP_PATCH, copy_build
from tests.testbed.engine.local import LocalEngine, http_post_json

pytestmark = [pytest.mark.testbed, pytest.mark.testbed_venv]  # starts engines: outside the fast suite

PROMPT = "Write a short story about a lighthouse keeper."


def _args(models: dict[str, Path]) -> list[str]:
    return ["--model-path", str(models["target"]), "--served-model-name", "qwen-ddtree",
            "--speculative-algorithm", "DDTREE", "--speculative-draft-model-path", str(models["draft"]),
            "--speculative-dflash-block-size", "16", "--speculative-num-draft-tokens", "16",
            "--speculative-ddtree-budget", "8", "--page-size", "1"]  # fmt: skip


@pytest.fixture(scope="module")
def engines(testbed_python: str, models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[dict[str, LocalEngine]]:  # fmt: skip
    """A healthy build, the same build patched to loop when sampling, and the healthy one with the fault set by
    the environment: started together (the slow part is importing torch)."""
    tmp = tmp_path_factory.mktemp("sampling")
    healthy = copy_build(tmp / "healthy", [DDTREE_PATCH])
    looping = copy_build(tmp / "looping", [DDTREE_PATCH, SAMPLING_LOOP_PATCH])
    started = {
        "healthy": LocalEngine(testbed_python, _args(models), tmp / "healthy.log", build=healthy),
        "patched": LocalEngine(testbed_python, _args(models), tmp / "patched.log", build=looping),
        "env": LocalEngine(testbed_python, _args(models), tmp / "env.log", build=healthy,
                           env={"SGLANG_TESTENGINE_SAMPLED_LOOP": "1"}),
    }  # fmt: skip
    for engine in started.values():
        engine.health_codes_until_up()
    yield started
    for engine in started.values():
        engine.stop()


def _text(engine: LocalEngine, temperature: float | None) -> str:
    params: dict[str, object] = {"max_new_tokens": 48}
    if temperature is not None:
        params["temperature"] = temperature
    return str(http_post_json(engine.base_url + "/generate", {"text": PROMPT, "sampling_params": params})["text"])


def test_greedy_answers_repeat_and_sampled_answers_vary(engines: dict[str, LocalEngine]) -> None:
    healthy = engines["healthy"]
    assert _text(healthy, 0) == _text(healthy, 0)
    sampled = {_text(healthy, 0.7) for _ in range(3)}
    assert len(sampled) == 3
    assert _text(healthy, None) != _text(healthy, None)  # SGLang samples at 1.0 when no temperature is sent
    assert all(degenerate_reason(text) == "" for text in [*sampled, _text(healthy, 0)])


@pytest.mark.parametrize("which", ["patched", "env"])
def test_the_sampled_loop_fault_loops_only_at_temperature_above_zero(engines: dict[str, LocalEngine], which: str):
    engine = engines[which]
    assert degenerate_reason(_text(engine, 0)) == ""
    looping = _text(engine, 0.7)
    assert degenerate_reason(looping).startswith("repetition loop: "), looping


def _spec(engine: LocalEngine) -> HostSpec:
    return HostSpec(name="local", ssh="local", python="/usr/bin/python3", model_path="/m", port=engine.port,
                    listen="127.0.0.1", served_model_name="qwen-ddtree")  # fmt: skip


def test_a_streamed_answer_arrives_event_by_event(engines: dict[str, LocalEngine]) -> None:
    engine = engines["healthy"]
    with EngineClient(LocalHost(), _spec(engine)) as client:
        answer = client.generate_stream(PROMPT, {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 64})
        greedy = client.generate(PROMPT, 64)
    assert answer.done and answer.error is None and answer.completion_tokens == 64
    assert answer.events > 1 and answer.ttft_s is not None and answer.ttft_s < answer.elapsed_s
    assert len(answer.text.split()) == 64 and answer.meta_info["spec_accept_length"] > 2
    assert answer.finish_reason == "length" and answer.text != greedy["text"]


PROFILE = Profile(name="ddtree", algorithm="DDTREE",
                  smoke=Smoke(prompt=PROMPT, max_new_tokens=64, min_accept_length=2.0, sampled_max_new_tokens=64))  # fmt: skip


def test_the_smoke_passes_a_healthy_build_with_ttft_and_fails_the_looping_one_on_sampled_output_alone(
    engines: dict[str, LocalEngine],
) -> None:
    with EngineClient(LocalHost(), _spec(engines["healthy"])) as client:
        healthy = run_smoke(client, PROFILE, _spec(engines["healthy"]), None)
    assert healthy.passed, healthy.reason
    assert healthy.figures["sampled_requests"] == 4 and healthy.figures["sampled_completion_tokens"] == 4 * 64
    assert 0 < healthy.figures["ttft_p50_s"] <= healthy.figures["ttft_p99_s"]  # type: ignore[operator]
    with EngineClient(LocalHost(), _spec(engines["patched"])) as client:
        broken = run_smoke(client, PROFILE, _spec(engines["patched"]), None)
    assert [gate.id for gate in broken.failed_gates] == ["sampled-output"], broken.reason
    assert "4 of 4 degenerate" in broken.reason and "repetition loop" in broken.reason
