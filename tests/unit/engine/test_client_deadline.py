"""An engine that drips its answer one byte at a time, each byte well inside the per-read timeout, still ends
the request when the request's whole budget is spent: a stuck engine never holds a gate for ever."""

from __future__ import annotations

import time

import pytest

from specops.config.inventory import HostSpec
from specops.engine.client import EngineClient, EngineError
from specops.host.local import LocalHost
from tests.unit.badinput.engine_server import Answer, hostile_engine

BODY = '{"version": "0.5.6", "speculative_algorithm": "EAGLE", "padding": "' + "x" * 400 + '"}'


def test_a_dripping_answer_ends_when_the_requests_budget_is_spent() -> None:
    dripping = Answer.from_data({"json": BODY, "drip_s": 6.0})  # 1 byte per 50 ms for up to 6 s
    with hostile_engine({"/get_server_info": dripping}) as port:
        spec = HostSpec(name="llm-two", ssh="llm-two", python="/opt/venv/bin/python", model_path="/m", port=port)
        with EngineClient(LocalHost("llm-two"), spec, timeout=0.5) as client:
            started = time.monotonic()
            with pytest.raises(EngineError) as caught:
                client.server_info()
            took = time.monotonic() - started
    assert took < 3.0, f"gave up after {took:.1f} s, not at its 0.5 s budget"
    assert "no answer in time (timed out " in caught.value.message
    assert "Timeout" not in caught.value.message  # a stage in words, not httpx's class name
