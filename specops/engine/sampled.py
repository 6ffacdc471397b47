"""The smoke's production-like part: N concurrent streamed requests at the profile's sampling settings.

Why: the greedy request (temperature 0) cannot see bugs that only sampling exercises. A speculative build
whose verification silently decoded greedily at temperature > 0 wrote repetition loops for every user while
its greedy smoke passed. So besides the greedy request, the smoke sends `smoke.sampled_requests` requests at
once, at `sampled_temperature`/`sampled_top_p`, without ignore_eos (they end as a user's would), each
streamed so the time to the first token is measured, and judges every answer (specops.engine.degenerate).

Figures: TTFT p50/p99 (nearest rank over the requests: with a handful of requests p99 is the slowest one),
and throughput = all completion tokens / wall time from the first request sent to the last answer done.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from specops.engine.degenerate import degenerate_reason
from specops.engine.smoke_types import Gate, SmokeFigures
from specops.errors import SpecopsError

if TYPE_CHECKING:
    from specops.config.profile import Smoke
    from specops.engine.client import EngineClient
    from specops.engine.stream import StreamedAnswer

TEXT_HEAD_CHARS = 80
PROMPT_HEAD_CHARS = 40


@dataclass(frozen=True)
class SampledAnswer:
    """One sampled request: its answer, or why there is none (`problem`), and why its text is not language."""

    index: int
    prompt: str
    answer: StreamedAnswer | None
    problem: str = ""
    degenerate: str = ""

    @property
    def label(self) -> str:
        return f"request {self.index} ({_head(self.prompt, PROMPT_HEAD_CHARS)!r})"

    def to_json(self) -> dict[str, Any]:
        answer = self.answer
        return {
            "request": self.index,
            "prompt": _head(self.prompt, PROMPT_HEAD_CHARS),
            "ttft_s": None if answer is None or answer.ttft_s is None else round(answer.ttft_s, 4),
            "elapsed_s": None if answer is None else round(answer.elapsed_s, 4),
            "completion_tokens": None if answer is None else answer.completion_tokens,
            "finish_reason": None if answer is None else answer.finish_reason,
            "text_head": "" if answer is None else answer.text[:TEXT_HEAD_CHARS],
            "problem": self.problem,
            "degenerate": self.degenerate,
        }


@dataclass(frozen=True)
class SampledRun:
    answers: list[SampledAnswer]
    wall_s: float

    def figures(self, smoke: Smoke) -> SmokeFigures:
        done = [item.answer for item in self.answers if item.answer is not None and not item.problem]
        tokens = sum(answer.completion_tokens for answer in done)
        ttfts = sorted(answer.ttft_s for answer in done if answer.ttft_s is not None)
        return SmokeFigures(
            sampled_requests=len(self.answers),
            sampled_temperature=smoke.sampled_temperature,
            sampled_top_p=smoke.sampled_top_p,
            sampled_completion_tokens=tokens,
            sampled_wall_s=round(self.wall_s, 4),
            sampled_tokens_per_s=round(tokens / self.wall_s, 2) if self.wall_s > 0 else 0.0,
            ttft_p50_s=_percentile(ttfts, 0.50),
            ttft_p99_s=_percentile(ttfts, 0.99),
        )

    def gates(self, smoke: Smoke) -> list[Gate]:
        count = len(self.answers)
        failed = [item for item in self.answers if item.problem]
        looping = [item for item in self.answers if item.degenerate]
        settings = f"temperature {smoke.sampled_temperature:g}, top_p {smoke.sampled_top_p:g}"
        return [
            Gate("sampled-requests", not failed, f"{count - len(failed)}/{count} answered",
                 f"{count} concurrent streams complete", "; ".join(f"{i.label}: {i.problem}" for i in failed)),
            Gate("sampled-output", not looping,
                 f"{len(looping)} of {count} degenerate" if looping else f"{count - len(failed)} real texts",
                 f"real text at {settings}", "; ".join(f"{i.label}: {i.degenerate}" for i in looping)),
        ]  # fmt: skip


def run_sampled(client: EngineClient, smoke: Smoke, *, incremental: bool = False) -> SampledRun:
    """Send the sampled requests at once (a thread and a client each) and wait for every answer."""
    count = smoke.sampled_requests
    params = {
        "temperature": smoke.sampled_temperature,
        "top_p": smoke.sampled_top_p,
        "max_new_tokens": smoke.sampled_max_new_tokens,
    }
    prompts = [smoke.sampled_prompts[index % len(smoke.sampled_prompts)] for index in range(count)]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=count, thread_name_prefix="smoke-sampled") as pool:
        futures = [
            pool.submit(_one, client, index + 1, prompt, params, incremental) for index, prompt in enumerate(prompts)
        ]
        answers = [future.result() for future in futures]
    return SampledRun(answers, time.monotonic() - started)


def skipped_gates(reason: str) -> list[Gate]:
    """The sampled gates when they were not run (the greedy request already failed)."""
    return [Gate("sampled-output", True, "not run", "real text at temperature > 0", f"skipped: {reason}")]


def _one(client: EngineClient, index: int, prompt: str, params: dict[str, Any], incremental: bool) -> SampledAnswer:
    own = client.fork()
    try:
        answer = own.generate_stream(prompt, params, incremental=incremental)
    except SpecopsError as error:
        return SampledAnswer(index, prompt, None, error.message)
    finally:
        own.close()
    problem = answer.error or ""
    if not problem and not answer.done:
        problem = "the stream ended before [DONE]"
    if not problem and answer.finish_reason == "abort":
        problem = "the engine aborted the request"
    return SampledAnswer(
        index, prompt, answer, problem, "" if problem else degenerate_reason(answer.text, answer.output_ids)
    )


def _percentile(values: list[float], quantile: float) -> float | None:
    """Nearest rank: the smallest value with at least `quantile` of the values at or below it."""
    if not values:
        return None
    rank = max(1, math.ceil(quantile * len(values)))
    return round(values[rank - 1], 4)


def _head(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
