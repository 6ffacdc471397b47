"""The fake forward pass: deterministic text at a configurable speed, with SGLang's spec counters.

Text comes from a fixed word list seeded by the prompt, so the same request always gives the same
answer. A useless draft (the DDTREE-without-patch case) yields token 0 (`!` in Qwen vocabularies)
at a crawl with accept length 1.0, which is what operators saw on the broken hosts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import threading
import time
import uuid
from collections.abc import Iterator

from sglang.srt.model_loader import LoadedModel
from sglang.srt.testengine_log import log

CORPUS = (
    "the model drafts a block of tokens and the target verifies them in one pass while the scheduler "
    "keeps the cache warm so every accepted token saves a step of decoding on the device"
)
WORDS = tuple(CORPUS.split())


def _env_float(name: str, default: float) -> float:
    value = os.environ.get(name, "")
    return float(value) if value else default


@dataclasses.dataclass
class Stats:
    """Cumulative counters behind /metrics and /get_server_info internal_states."""

    prompt_tokens: int = 0
    generation_tokens: int = 0
    requests: int = 0
    verify_ct: int = 0
    last_gen_throughput: float = 0.0


class Generator:
    """Serves generate calls one verify step at a time, sleeping to hit the configured speed."""

    def __init__(self, model: LoadedModel, num_draft_tokens: int | None) -> None:
        self.model = model
        self.num_draft_tokens = num_draft_tokens or 1
        self.stats = Stats()
        self._lock = threading.Lock()
        if model.draft_useful:
            self.tokens_per_second = _env_float("SGLANG_TESTENGINE_TOKENS_PER_SECOND", 100.0)
        else:
            self.tokens_per_second = _env_float("SGLANG_TESTENGINE_MISMATCH_TOKENS_PER_SECOND", 2.0)

    @property
    def speculative(self) -> bool:
        return self.model.accept_length is not None

    def generate(self, prompt: str, max_new_tokens: int, record: bool = True) -> dict[str, object]:
        """Return SGLang's /generate body for one prompt (finish_reason is always `length`).

        Health-check requests pass record=False: their single token comes from prefill, so upstream
        shows no verify step (and no avg_spec_accept_length) for them.
        """
        start = time.monotonic()
        count = max(1, max_new_tokens)
        output_ids, text = self._tokens(prompt, count)
        verify_ct = self._verify_count(count)
        time.sleep(count / self.tokens_per_second)
        latency = time.monotonic() - start
        prompt_tokens = max(1, len(prompt.split()))
        if record:
            self._record(prompt_tokens, count, verify_ct, latency)
        meta: dict[str, object] = {
            "id": uuid.uuid4().hex,
            "finish_reason": {"type": "length", "length": count},
            "prompt_tokens": prompt_tokens,
            "completion_tokens": count,
            "cached_tokens": 0,
            "weight_version": "default",
            "e2e_latency": latency,
        }
        if self.speculative:
            meta.update(self._spec_meta(count, verify_ct))
        return {"text": text, "output_ids": output_ids, "meta_info": meta}

    def stream(self, prompt: str, max_new_tokens: int) -> Iterator[dict[str, object]]:
        """The same answer as `generate`, one chunk per verify step (the tokens one step accepts), each with
        the text so far and meta_info so far, as SGLang's streaming /generate sends them."""
        start = time.monotonic()
        count = max(1, max_new_tokens)
        output_ids, _ = self._tokens(prompt, count)
        step = max(1, round(self.model.accept_length or 1.0))
        request_id = uuid.uuid4().hex
        done = 0
        while done < count:
            produced = min(step, count - done)
            time.sleep(produced / self.tokens_per_second)
            done += produced
            _, text = self._tokens(prompt, done)
            finished = {"type": "length", "length": count} if done == count else None
            meta = {
                "id": request_id,
                "finish_reason": finished,
                "prompt_tokens": max(1, len(prompt.split())),
                "completion_tokens": done,
                "cached_tokens": 0,
                "e2e_latency": time.monotonic() - start,
            }
            yield {"text": text, "output_ids": output_ids[:done], "meta_info": meta}
        self._record(max(1, len(prompt.split())), count, self._verify_count(count), time.monotonic() - start)

    def _tokens(self, prompt: str, count: int) -> tuple[list[int], str]:
        if not self.model.draft_useful:
            return [0] * count, "!" * count
        seed = int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:8], "little")
        ids = [(seed + 7919 * i) % len(WORDS) for i in range(count)]
        return [1000 + i for i in ids], " " + " ".join(WORDS[i] for i in ids)

    def _verify_count(self, count: int) -> int:
        accept = self.model.accept_length or 1.0
        return max(1, math.ceil(count / accept))

    def _spec_meta(self, count: int, verify_ct: int) -> dict[str, object]:
        accepted = count - verify_ct
        proposed = verify_ct * max(1, self.num_draft_tokens - 1)
        return {
            "spec_verify_ct": verify_ct,
            "spec_accept_length": count / verify_ct,
            "spec_accept_rate": accepted / proposed,
            "spec_accept_token_num": accepted,
            "spec_draft_token_num": proposed,
        }

    def _record(self, prompt_tokens: int, count: int, verify_ct: int, latency: float) -> None:
        with self._lock:
            self.stats.prompt_tokens += prompt_tokens
            self.stats.generation_tokens += count
            self.stats.requests += 1
            self.stats.verify_ct += verify_ct if self.speculative else 0
            self.stats.last_gen_throughput = count / latency if latency > 0 else 0.0
            throughput = self.stats.last_gen_throughput
        accept = f"accept len: {count / verify_ct:.2f}, " if self.speculative else ""
        log(
            f"Decode batch, #running-req: 1, #token: {prompt_tokens + count}, token usage: 0.00, {accept}"
            f"cuda graph: True, gen throughput (token/s): {throughput:.2f}, #queue-req: 0,"
        )

    def avg_accept_length(self) -> float | None:
        """Mean accept length so far; None before the first verify step, as upstream omits it."""
        with self._lock:
            if not self.speculative or self.stats.verify_ct == 0:
                return None
            return self.stats.generation_tokens / self.stats.verify_ct
