"""The smoke gates on canned SGLang answers, through the real EngineClient (httpx over a fake tunnel)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from specops.config.inventory import HostSpec
from specops.config.profile import DEFAULT_SAMPLED_PROMPTS, Profile
from specops.engine.client import EngineClient
from specops.engine.signatures import match
from specops.engine.smoke import degenerate_reason, run_smoke, with_cause
from specops.host.recording import RecordingHost
from tests.unit.engine.fakes import CannedServer, json_route, sampled_events, sse_route

GOOD_TEXT = " the model drafts a block of tokens and the target verifies"
MISMATCH_LINE = (
    "[2026-11-29 17:22:14] DFLASH target_hidden feature dim mismatch. Expected shape [N, 2560] "
    "(num_context_features=5, hidden_size=512), but got shape=(7, 512)."
)


def _generate(text: str, tokens: int = 8, latency: float = 0.08, accept: float | None = 3.2) -> dict[str, Any]:
    meta: dict[str, Any] = {"completion_tokens": tokens, "e2e_latency": latency, "finish_reason": {"type": "length"}}
    if accept is not None:
        meta.update(spec_accept_length=accept, spec_verify_ct=max(1, round(tokens / accept)))
    return {"text": text, "output_ids": list(range(1000, 1000 + tokens)), "meta_info": meta}


def _serve(server: CannedServer, body: dict[str, Any], algorithm: str = "DDTREE", info_path: str = "/get_server_info"):
    info = {"version": "0.5.99", "speculative_algorithm": algorithm, "speculative_draft_model_path": "/srv/models/draft",
            "speculative_num_draft_tokens": 16, "internal_states": [{"avg_spec_accept_length": 3.2}]}  # fmt: skip
    server.add("GET", info_path, json_route(info))
    server.add("GET", "/v1/models", json_route({"object": "list", "data": [{"id": "qwen-test"}]}))
    server.add("POST", "/generate", json_route(body), sse_route(sampled_events(GOOD_TEXT)))


def _smoke(host: RecordingHost, spec: HostSpec, profile: Profile, previous: dict[str, Any] | None = None):
    with EngineClient(host, spec) as client:
        return run_smoke(client, profile, spec, previous)


def _gates(result) -> dict[str, bool]:
    return {gate.id: gate.ok for gate in result.gates}


def test_healthy_server_passes_every_gate(host, server, spec, ddtree) -> None:
    _serve(server, _generate(GOOD_TEXT))
    result = _smoke(host, spec, ddtree)
    assert result.passed, result.reason
    assert _gates(result) == {"algorithm": True, "served-model": True, "tokens": True, "tokens-per-s": True,
                              "accept-length": True, "output": True, "sampled-requests": True,
                              "sampled-output": True, "regression": True, "ttft": True}  # fmt: skip
    assert result.figures["tokens_per_s"] == 100.0
    assert result.figures["accept_length"] == 3.2
    assert result.figures["server_version"] == "0.5.99"
    posted = [json.loads(body) for method, _, body in server.requests if method == "POST"]
    assert posted[0] == {"text": "Explain.", "stream": False,
                         "sampling_params": {"temperature": 0.0, "max_new_tokens": 8, "ignore_eos": True}}  # fmt: skip
    sampling = {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 128}
    assert sorted(item["text"] for item in posted[1:]) == sorted(DEFAULT_SAMPLED_PROMPTS)
    assert all(item["stream"] is True and item["sampling_params"] == sampling for item in posted[1:])
    assert result.figures["sampled_requests"] == 4 and result.figures["sampled_completion_tokens"] == 4 * 11
    assert [answer["request"] for answer in result.sampled] == [1, 2, 3, 4]
    assert host.calls[0].kind == "tunnel" and host.calls[0].path == "127.0.0.1:30000"


def test_unpatched_ddtree_fails_on_bangs_speed_and_accept_length_and_names_the_cause(host, server, spec, ddtree):
    body = _generate("!!!!!!!!", latency=1.0, accept=1.0)
    body["output_ids"] = [0] * 8
    _serve(server, body)
    result = _smoke(host, spec, ddtree)
    assert not result.passed
    failed = {gate.id for gate in result.failed_gates}
    assert failed == {"output", "accept-length", "tokens-per-s"}
    output = next(gate for gate in result.gates if gate.id == "output")
    assert "one character repeated: '!' x8" in output.detail
    explained = with_cause(result, match([MISMATCH_LINE]))
    assert explained.cause is not None and explained.cause.signature.id == "dflash-feature-mismatch"
    assert "cause: the draft gets the wrong hidden-state width" in explained.reason
    assert "accept-length 1.00 (want >= 2)" in explained.reason


def test_wrong_algorithm_and_missing_accept_length_fail(host, server, spec, ddtree) -> None:
    _serve(server, _generate(GOOD_TEXT, accept=None), algorithm="DFLASH")
    result = _smoke(host, spec, ddtree)
    gates = {gate.id: gate for gate in result.gates}
    assert not gates["algorithm"].ok and gates["algorithm"].observed == "DFLASH"
    assert not gates["accept-length"].ok and gates["accept-length"].observed == "not reported"


def test_newer_build_with_server_info_alias_only(host, server, spec, ddtree) -> None:
    _serve(server, _generate(GOOD_TEXT), info_path="/server_info")
    assert _smoke(host, spec, ddtree).passed


def test_short_output_fails_the_tokens_gate(host, server, spec, ddtree) -> None:
    _serve(server, _generate(GOOD_TEXT, tokens=5, latency=0.05))
    result = _smoke(host, spec, ddtree)
    assert _gates(result)["tokens"] is False


def test_regression_against_previous_release(host, server, spec, ddtree) -> None:
    _serve(server, _generate(GOOD_TEXT, latency=0.16))  # 50 tok/s
    result = _smoke(host, spec, ddtree, previous={"tokens_per_s": 100.0, "accept_length": 3.2})
    regression = next(gate for gate in result.gates if gate.id == "regression")
    assert not regression.ok
    assert "tokens_per_s dropped 50%" in regression.detail
    ok = _smoke(host, spec, ddtree, previous={"tokens_per_s": 60.0, "accept_length": 3.0})
    assert next(gate for gate in ok.gates if gate.id == "regression").ok


def test_engine_not_listening_is_a_failed_gate_not_a_crash(spec, ddtree) -> None:
    server = CannedServer(refuse=True)
    host = RecordingHost("llm-one", tunnel_factory=server.tunnel)
    result = _smoke(host, spec, ddtree)
    assert not result.passed
    api = next(gate for gate in result.gates if gate.id == "api")
    assert "does not answer" in api.detail and "Connection refused" in api.detail


@pytest.mark.parametrize(
    ("text", "ids", "why"),
    [
        ("!!!!!!!!", None, "one character repeated"),
        ("", None, "empty"),
        ("   \n", None, "empty"),
        ("the the the the the", None, "one word is 5 of 5"),
        (" the the the the cat", None, "one word is 4 of 5"),
        ("ok", [7, 7, 7, 7, 7, 7], "one token id is 6 of 6"),
    ],
)
def test_degenerate_outputs(text: str, ids: list[int] | None, why: str) -> None:
    assert why in degenerate_reason(text, ids)


@pytest.mark.parametrize(
    "text",
    [
        "The sky is blue because molecules scatter short wavelengths of sunlight more than long ones.",
        GOOD_TEXT * 2,  # a sentence said twice is no loop (loops: docs/smoke.md, tests/unit/engine/test_degenerate.py)
        "Yes. Yes, it is.",
    ],
)
def test_real_text_is_not_degenerate(text: str) -> None:
    assert degenerate_reason(text, list(range(40))) == ""


def test_every_gate_is_documented(host, server, spec, ddtree) -> None:
    from pathlib import Path

    _serve(server, _generate(GOOD_TEXT))
    ids = [gate.id for gate in _smoke(host, spec, ddtree).gates] + ["api"]
    text = (Path(__file__).resolve().parents[3] / "docs" / "smoke.md").read_text(encoding="utf-8")
    assert [gate for gate in ids if f"| `{gate}` |" not in text] == []
