"""How the test engine decodes a request's sampling parameters, and its sampling-dependent fault.

SGLang's defaults: a request without `temperature` samples at 1.0; temperature 0 is greedy. At temperature 0
the test engine's answer depends only on the prompt; above it, it varies from request to request, as a real
server's does.

The fault (`sampled-loop`): speculative verification that silently decodes greedily when the request
samples. On a real server that wrote repetition loops at temperature > 0 while greedy requests were fine.
Here an answer at temperature > 0 starts normally, then repeats one short phrase to the end. It is a
property of the build (`GREEDY_VERIFY_WHEN_SAMPLING`, which `sampling_loop.patch` turns on), and like the
other faults it can be set by the environment too: SGLANG_TESTENGINE_SAMPLED_LOOP=1 (on) or 0 (off).
"""

from __future__ import annotations

import os

GREEDY_VERIFY_WHEN_SAMPLING = False
DEFAULT_TEMPERATURE = 1.0  # SGLang's SamplingParams default
LOOP_AFTER_TOKENS = 6  # the words before the loop starts


def temperature_of(params: dict[str, object]) -> float:
    value = params.get("temperature", DEFAULT_TEMPERATURE)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else DEFAULT_TEMPERATURE


def sampled_loop() -> bool:
    """Whether answers at temperature > 0 loop: the environment decides when it says, else the build."""
    setting = os.environ.get("SGLANG_TESTENGINE_SAMPLED_LOOP", "")
    if setting in ("0", "1"):
        return setting == "1"
    return GREEDY_VERIFY_WHEN_SAMPLING
