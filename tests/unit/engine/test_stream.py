"""Streamed /generate answers: SGLang's event stream read through the real EngineClient (canned server), and the
reader's rules for cumulative and incremental events, errors mid-stream and the time to the first token."""

from __future__ import annotations

import json

import pytest

from specops.config.inventory import HostSpec
from specops.engine.client import EngineClient, EngineError
from specops.engine.stream import StreamReader
from specops.host.recording import RecordingHost
from tests.unit.engine.fakes import CannedServer, json_route, sse_route

SAMPLING = {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 3}


def _events(texts: list[str], cumulative: bool = True) -> list[dict[str, object]]:
    """What SGLang streams for these decode steps: text and ids so far (or only the new part), the running
    completion_tokens, and the finish reason and e2e_latency on the last event."""
    events: list[dict[str, object]] = []
    for step, text in enumerate(texts, start=1):
        ids = list(range(100, 100 + step)) if cumulative else [100 + step - 1]
        meta: dict[str, object] = {"id": "r1", "completion_tokens": step, "finish_reason": None}
        if step == len(texts):
            meta.update(finish_reason={"type": "length", "length": step}, e2e_latency=0.05, spec_accept_length=2.5)
        events.append({"text": text, "output_ids": ids, "meta_info": meta})
    return events


def test_a_streamed_answer_is_read_through_the_client_with_sglangs_request_body(
    host: RecordingHost, server: CannedServer, spec: HostSpec
) -> None:
    server.add("POST", "/generate", sse_route(_events([" The", " The sky", " The sky is"])))
    with EngineClient(host, spec) as client:
        answer = client.generate_stream("Why?", SAMPLING)
    assert (answer.text, answer.output_ids, answer.completion_tokens) == (" The sky is", [100, 101, 102], 3)
    assert answer.done and answer.error is None and answer.events == 3
    assert answer.finish_reason == "length" and answer.meta_info["spec_accept_length"] == 2.5
    assert answer.ttft_s is not None and 0 <= answer.ttft_s <= answer.elapsed_s
    posted = json.loads(server.requests[0][2])
    assert posted == {"text": "Why?", "sampling_params": SAMPLING, "stream": True}


def test_an_engine_that_refuses_the_stream_is_a_clear_error(
    host: RecordingHost, server: CannedServer, spec: HostSpec
) -> None:
    server.add("POST", "/generate", json_route({"error": {"message": "top_p must be in (0, 1]"}}, 400))
    with EngineClient(host, spec) as client, pytest.raises(EngineError) as raised:
        client.generate_stream("Why?", SAMPLING)
    assert raised.value.message == (
        'llm-one: POST /generate (stream) answered 400: {"error": {"message": "top_p must be in (0, 1]"}}'
    )


def test_incremental_events_are_appended() -> None:
    reader = StreamReader(started=10.0, incremental=True)
    for at, event in zip((10.2, 10.3, 10.4), _events([" The", " sky", " is"], cumulative=False), strict=True):
        assert reader.feed("data: " + json.dumps(event), at) is False
    assert reader.feed("data: [DONE]", 10.5) is True
    answer = reader.answer
    assert (answer.text, answer.output_ids) == (" The sky is", [100, 101, 102])
    assert answer.ttft_s == pytest.approx(0.2) and answer.elapsed_s == pytest.approx(0.5)


def test_the_first_token_time_waits_for_an_event_with_a_token() -> None:
    reader = StreamReader(started=0.0)
    reader.feed(": keep-alive", 0.1)
    reader.feed("", 0.1)
    reader.feed('data: {"text": "", "output_ids": [], "meta_info": {"completion_tokens": 0}}', 0.3)
    assert reader.answer.ttft_s is None
    reader.feed('data: {"text": " Hi", "output_ids": [7], "meta_info": {"completion_tokens": 1}}', 0.9)
    assert reader.answer.ttft_s == pytest.approx(0.9)


@pytest.mark.parametrize(
    ("line", "error"),
    [
        pytest.param('data: {"error": {"message": "CUDA error"}}', "the engine reported an error mid-stream: CUDA error",
                     id="error-event"),
        pytest.param("data: <html>502</html>", "the stream sent something that is not JSON: '<html>502</html>'",
                     id="not-json"),
        pytest.param("data: [1, 2]", "the stream sent list, expected an object", id="not-an-object"),
    ],
)  # fmt: skip
def test_a_broken_stream_ends_with_what_it_sent(line: str, error: str) -> None:
    reader = StreamReader(started=0.0)
    reader.feed('data: {"text": " Hi", "output_ids": [7], "meta_info": {"completion_tokens": 1}}', 0.1)
    assert reader.feed(line, 0.2) is True
    assert reader.answer.error == error and not reader.answer.done and reader.answer.text == " Hi"
