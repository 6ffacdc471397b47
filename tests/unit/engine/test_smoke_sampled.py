"""The sampled part of the smoke on canned SGLang streams, through the real EngineClient: a build that loops
only at temperature > 0 fails while its greedy answer passes, and the failure names the request and the loop."""

from __future__ import annotations

import json
from typing import Any

import pytest

from specops.config.inventory import HostSpec
from specops.config.profile import Profile, Smoke
from specops.engine.client import EngineClient
from specops.engine.sampled import SampledAnswer, SampledRun
from specops.engine.smoke import SmokeResult, run_smoke
from specops.engine.stream import StreamedAnswer
from specops.host.recording import RecordingHost
from tests.unit.engine.fakes import CannedServer, json_route, sampled_events, sse_route

GOOD = " the keeper climbed the stairs and lit the lamp for the ships that passed in the night"
LOOP = " the keeper climbed the stairs and" + " lit the lamp and" * 12
INFO = {"version": "0.5.99", "speculative_algorithm": "DDTREE", "internal_states": [{}]}


def _greedy(text: str = GOOD, tokens: int = 8) -> dict[str, Any]:
    meta = {"completion_tokens": tokens, "e2e_latency": 0.08, "spec_accept_length": 3.2, "spec_verify_ct": 3}
    return {"text": text, "output_ids": list(range(1000, 1000 + tokens)), "meta_info": meta}


def _serve(server: CannedServer, *streams: list[dict[str, Any]], greedy: dict[str, Any] | None = None,
           info: dict[str, Any] = INFO) -> None:  # fmt: skip
    server.add("GET", "/get_server_info", json_route(info))
    server.add("GET", "/v1/models", json_route({"object": "list", "data": [{"id": "qwen-test"}]}))
    server.add("POST", "/generate", json_route(greedy or _greedy()), *(sse_route(events) for events in streams))


def _smoke(host: RecordingHost, spec: HostSpec, profile: Profile) -> SmokeResult:
    with EngineClient(host, spec) as client:
        return run_smoke(client, profile, spec, None)


def _profile(**smoke: Any) -> Profile:
    base = {"prompt": "Explain.", "max_new_tokens": 8, "min_accept_length": 2.0, "sampled_requests": 3}
    return Profile(name="ddtree", algorithm="DDTREE", smoke=Smoke(**{**base, **smoke}))


def _gate(result: SmokeResult, gate_id: str) -> Any:
    return next(gate for gate in result.gates if gate.id == gate_id)


def test_a_build_that_loops_only_when_sampling_fails_the_sampled_gate_alone(
    host: RecordingHost, server: CannedServer, spec: HostSpec
) -> None:
    _serve(server, sampled_events(LOOP))
    result = _smoke(host, spec, _profile())
    assert not result.passed
    assert [gate.id for gate in result.failed_gates] == ["sampled-output"]
    gate = _gate(result, "sampled-output")
    assert gate.observed == "3 of 3 degenerate" and gate.expected == "real text at temperature 0.7, top_p 0.95"
    first = gate.detail.split("; ")[0]
    assert first.startswith("request 1 ('Write a short story about a lighthouse …'): repetition loop: ")
    assert "x12 (words, from character" in first and "the stairs and lit the lamp and lit" in first
    assert (
        "sampled-output 3 of 3 degenerate (want real text at temperature 0.7, top_p 0.95): request 1 (" in result.reason
    )
    assert result.reason.endswith("(and 2 more)")
    assert result.sampled[0]["degenerate"].startswith("repetition loop:")


def test_one_looping_request_among_good_ones_is_named(host: RecordingHost, server: CannedServer, spec: HostSpec):
    server.add("GET", "/get_server_info", json_route(INFO))
    server.add("GET", "/v1/models", json_route({"object": "list", "data": []}))
    # the greedy answer, then three streams: answers are handed out in the order the requests arrive
    server.add("POST", "/generate", json_route(_greedy()), sse_route(sampled_events(GOOD)),
               sse_route(sampled_events(LOOP)), sse_route(sampled_events(GOOD)))  # fmt: skip
    result = _smoke(host, spec, _profile())
    gate = _gate(result, "sampled-output")
    assert not gate.ok and gate.observed == "1 of 3 degenerate"
    assert gate.detail.count("request ") == 1 and ": repetition loop: " in gate.detail


def test_a_stream_that_errors_fails_the_requests_gate_with_the_engines_message(
    host: RecordingHost, server: CannedServer, spec: HostSpec
) -> None:
    _serve(server, [*sampled_events(GOOD)[:2], {"error": {"message": "CUDA error: an illegal memory access"}}])
    result = _smoke(host, spec, _profile(sampled_requests=2))
    gate = _gate(result, "sampled-requests")
    assert not gate.ok and gate.observed == "0/2 answered"
    assert gate.detail.startswith(
        "request 1 ('Write a short story about a lighthouse …'): the engine reported an error mid-stream: "
        "CUDA error: an illegal memory access"
    )
    assert _gate(result, "sampled-output").ok  # a cut answer is not judged as text


def test_a_greedy_failure_skips_the_sampled_requests(host: RecordingHost, server: CannedServer, spec: HostSpec):
    _serve(server, sampled_events(GOOD), greedy=_greedy("!!!!!!!!"))
    result = _smoke(host, spec, _profile())
    gate = _gate(result, "sampled-output")
    assert gate.ok and gate.detail == "skipped: the greedy request already failed"
    assert [method for method, path, _ in server.requests if path == "/generate"] == ["POST"]
    assert "ttft" not in {gate.id for gate in result.gates} and result.sampled == []


def test_no_sampled_requests_when_the_profile_asks_for_none(host: RecordingHost, server: CannedServer, spec: HostSpec):
    _serve(server, sampled_events(GOOD))
    result = _smoke(host, spec, _profile(sampled_requests=0))
    assert result.passed
    assert not {"sampled-requests", "sampled-output", "ttft"} & {gate.id for gate in result.gates}
    assert len([path for _, path, _ in server.requests if path == "/generate"]) == 1


def test_an_incremental_streaming_server_is_read_as_deltas(host: RecordingHost, server: CannedServer, spec: HostSpec):
    deltas = [{**event, "text": " " + GOOD.split()[step], "output_ids": [1000 + step]}
              for step, event in enumerate(sampled_events(GOOD))]  # fmt: skip
    _serve(server, deltas, info={**INFO, "incremental_streaming_output": True})
    result = _smoke(host, spec, _profile(sampled_requests=1))
    assert result.passed, result.reason
    assert result.sampled[0]["text_head"] == GOOD[:80]
    posted = [json.loads(body) for method, _, body in server.requests if method == "POST"]
    assert posted[1]["stream"] is True and posted[1]["sampling_params"]["temperature"] == 0.7


def _answer(ttft: float, tokens: int) -> StreamedAnswer:
    return StreamedAnswer(text=GOOD, meta_info={"completion_tokens": tokens}, ttft_s=ttft, elapsed_s=1.0, done=True)


@pytest.mark.parametrize(
    ("ttfts", "p50", "p99"),
    [([0.4, 0.1, 0.3, 0.2], 0.2, 0.4), ([0.25], 0.25, 0.25), ([0.1 * i for i in range(1, 201)], 10.0, 19.8)],
)
def test_ttft_percentiles_are_nearest_rank_and_throughput_counts_every_token(
    ttfts: list[float], p50: float, p99: float
) -> None:
    run = SampledRun([SampledAnswer(i, "p", _answer(t, 50)) for i, t in enumerate(ttfts, 1)], wall_s=2.0)
    figures = run.figures(Smoke())
    assert figures["ttft_p50_s"] == pytest.approx(p50) and figures["ttft_p99_s"] == pytest.approx(p99)
    assert figures["sampled_tokens_per_s"] == 50 * len(ttfts) / 2.0
    assert figures["sampled_temperature"] == 0.7 and figures["sampled_top_p"] == 0.95


def test_a_stream_cut_before_done_is_a_failed_request_not_an_answer(
    host: RecordingHost, server: CannedServer, spec: HostSpec
) -> None:
    cut = "".join(f"data: {json.dumps(event)}\n\n" for event in sampled_events(GOOD)[:3]).encode()
    server.add("GET", "/get_server_info", json_route(INFO))
    server.add("GET", "/v1/models", json_route({"object": "list", "data": []}))
    server.add("POST", "/generate", json_route(_greedy()), (200, cut))
    result = _smoke(host, spec, _profile(sampled_requests=1))
    gate = _gate(result, "sampled-requests")
    assert not gate.ok and gate.detail.endswith("): the stream ended before [DONE]")
    assert result.figures["sampled_completion_tokens"] == 0 and result.figures["ttft_p50_s"] is None
    assert "ttft" not in {gate.id for gate in result.gates}


def test_a_loop_in_the_greedy_answer_only_warns_and_the_sampled_answers_decide(
    host: RecordingHost, server: CannedServer, spec: HostSpec
) -> None:
    _serve(server, sampled_events(GOOD), greedy=_greedy(LOOP, tokens=len(LOOP.split())))
    result = _smoke(host, spec, _profile(max_new_tokens=len(LOOP.split())))
    assert result.passed, result.reason
    output = _gate(result, "output")
    assert output.ok and output.warn and output.detail.startswith("warning: repetition loop: 'and lit the lamp' x12")
    assert result.reason.startswith("all smoke gates passed (warning: output: repetition loop: ")
