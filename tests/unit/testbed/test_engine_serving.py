"""The test engine, started with profile-like flags under the hosts' venv (torch + torchcodec)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.testbed.engine import DDTREE_PATCH, copy_build
from tests.testbed.engine.local import LocalEngine, hide_ffmpeg_prefix, http_get, http_post_json

pytestmark = [pytest.mark.testbed, pytest.mark.testbed_venv]  # starts engines: outside the fast suite

SMOKE = {
    "text": "Explain speculative decoding.",
    "sampling_params": {"temperature": 0, "max_new_tokens": 32, "ignore_eos": True},
}


@pytest.fixture
def start(testbed_python: str, tmp_path: Path) -> Iterator:
    engines: list[LocalEngine] = []

    def _start(
        args: list[str], build: Path | None = None, env: dict[str, str] | None = None, prefix: list[str] | None = None
    ) -> LocalEngine:
        kwargs = {"build": build} if build else {}
        engine = LocalEngine(
            testbed_python, args, tmp_path / f"engine{len(engines)}.log", env=env, prefix=prefix, **kwargs
        )
        engines.append(engine)
        return engine

    yield _start
    for engine in engines:
        engine.stop()


def _get_json(engine: LocalEngine, path: str) -> dict:
    code, body = http_get(engine.base_url + path)
    assert code == 200, (path, code, body)
    return json.loads(body)


def _ddtree_args(models: dict[str, Path]) -> list[str]:
    return [
        "--model-path",
        str(models["target"]),
        "--served-model-name",
        "qwen-ddtree",
        "--speculative-algorithm",
        "DDTREE",
        "--speculative-draft-model-path",
        str(models["draft"]),
        "--speculative-dflash-block-size",
        "16",
        "--speculative-num-draft-tokens",
        "16",
        "--speculative-ddtree-budget",
        "8",
        "--page-size",
        "1",
        "--enable-metrics",
    ]


def test_nextn_serves_and_reports_eagle(start, models: dict[str, Path]) -> None:
    engine = start(
        [
            "--model-path",
            str(models["mtp_target"]),
            "--served-model-name",
            "qwen-next",
            "--speculative-algorithm",
            "NEXTN",
            "--speculative-num-steps",
            "3",
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            "4",
            "--context-length",
            "32768",
            "--tp-size",
            "1",
            "--trust-remote-code",
        ]
    )
    codes = engine.health_codes_until_up()
    assert codes[-2:] == [503, 200]
    info = _get_json(engine, "/get_server_info")
    assert info["speculative_algorithm"] == "EAGLE"
    assert info["version"] == "0.5.20.dev0+specops.testengine"
    assert "avg_spec_accept_length" in info["internal_states"][0]  # the warmup already verified
    models_list = _get_json(engine, "/v1/models")
    assert models_list["data"][0]["id"] == "qwen-next"
    assert models_list["data"][0]["max_model_len"] == 32768
    assert http_get(engine.base_url + "/metrics")[0] == 404  # no --enable-metrics
    meta = http_post_json(engine.base_url + "/generate", SMOKE)["meta_info"]
    assert meta["completion_tokens"] == 32 and meta["finish_reason"]["type"] == "length"
    assert meta["spec_accept_length"] == pytest.approx(2.5, abs=0.2)
    log = engine.log_text()
    assert "Uvicorn running on http://127.0.0.1:" in log
    assert log.index("Load weight end.") < log.index("Uvicorn running") < log.index("ready to roll!")


def test_dflash_serves_generate_and_metrics(start, models: dict[str, Path]) -> None:
    engine = start(
        [
            "--model-path",
            str(models["target"]),
            "--speculative-algorithm",
            "DFLASH",
            "--speculative-draft-model-path",
            str(models["draft"]),
            "--speculative-num-draft-tokens",
            "16",
            "--speculative-draft-window-size",
            "32",
            "--enable-metrics",
            "--skip-server-warmup",
        ]
    )
    engine.health_codes_until_up()
    info = _get_json(engine, "/get_server_info")
    assert info["speculative_algorithm"] == "DFLASH" and info["speculative_dflash_block_size"] == 16
    assert "avg_spec_accept_length" not in info["internal_states"][0]  # no verify step yet
    body = http_post_json(engine.base_url + "/generate", SMOKE)
    assert body["text"] == http_post_json(engine.base_url + "/generate", SMOKE)["text"]
    assert "!!!" not in body["text"]
    meta = body["meta_info"]
    assert meta["spec_accept_length"] == pytest.approx(meta["completion_tokens"] / meta["spec_verify_ct"])
    assert meta["spec_accept_length"] > 3
    assert _get_json(engine, "/get_server_info")["internal_states"][0]["avg_spec_accept_length"] > 3
    code, metrics = http_get(engine.base_url + "/metrics")
    assert code == 200
    assert 'sglang:generation_tokens_total{model_name="' in metrics.decode()
    assert "sglang:spec_accept_length" in metrics.decode()


def test_unpatched_ddtree_shows_the_feature_dim_mismatch(start, models: dict[str, Path]) -> None:
    engine = start(_ddtree_args(models))
    engine.health_codes_until_up()
    body = http_post_json(engine.base_url + "/generate", {**SMOKE, "sampling_params": {"max_new_tokens": 8}})
    assert body["text"] == "!!!!!!!!"
    assert body["meta_info"]["spec_accept_length"] == 1.0
    assert "DFLASH target_hidden feature dim mismatch. Expected shape [N, 25600]" in engine.log_text()
    assert "got shape=(7, 5120)" in engine.log_text()


def test_patched_ddtree_generates_normally(start, models: dict[str, Path], tmp_path: Path) -> None:
    build = copy_build(tmp_path / "python", [DDTREE_PATCH])
    engine = start(_ddtree_args(models), build=build)
    engine.health_codes_until_up()
    info = _get_json(engine, "/get_server_info")
    assert info["speculative_algorithm"] == "DDTREE" and info["speculative_ddtree_budget"] == 8
    meta = http_post_json(engine.base_url + "/generate", SMOKE)["meta_info"]
    assert meta["spec_accept_length"] > 1
    assert "feature dim mismatch" not in engine.log_text()


def test_wrong_fc_width_mismatches_even_when_patched(start, models: dict[str, Path], tmp_path: Path) -> None:
    args = _ddtree_args(models)
    args[args.index(str(models["draft"]))] = str(models["draft_fc_5120"])
    engine = start(args, build=copy_build(tmp_path / "python", [DDTREE_PATCH]))
    engine.health_codes_until_up()
    assert "Expected shape [N, 5120]" in engine.log_text() and "got shape=(7, 25600)" in engine.log_text()


def test_out_of_range_layer_ids_and_crash_after_load_exit_nonzero(start, models: dict[str, Path]) -> None:
    args = _ddtree_args(models)
    args[args.index(str(models["draft"]))] = str(models["draft_layer_ids_out_of_range"])
    bad_ids = start(args)
    crash = start(
        ["--model-path", str(models["mtp_target"])],
        env={"SGLANG_TESTENGINE_CRASH_AFTER_LOAD": "CUDA out of memory. Tried to allocate 2.00 GiB"},
    )
    assert bad_ids.wait_exit() == 1
    assert "target_layer_ids contains 77" in bad_ids.log_text()
    assert crash.wait_exit() == 1
    assert "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB" in crash.log_text()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root + unshare to hide FFmpeg")
def test_multimodal_target_without_ffmpeg_dies_with_torchcodec_error(start, models, tmp_path: Path) -> None:
    engine = start(
        ["--model-path", str(models["target"])],
        env={"SGLANG_TESTENGINE_LOAD_SECONDS": "0"},
        prefix=hide_ffmpeg_prefix(tmp_path / "no-ffmpeg"),
    )
    assert engine.wait_exit() != 0
    log = engine.log_text()
    assert "RuntimeError: Could not load libtorchcodec. Likely causes:" in log
    assert "OSError: libavutil.so.57: cannot open shared object file: No such file or directory" in log
    assert "OSError: Could not load this library: " in log and "libtorchcodec_core5.so" in log
    assert "sglang/srt/multimodal/processors/mimo_v2.py" in log
    assert "Uvicorn running" not in log
