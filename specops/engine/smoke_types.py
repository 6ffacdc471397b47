"""What a smoke gate is and what it measures, shared by the greedy check (smoke.py), the sampled requests
(sampled.py) and the comparisons with earlier releases (smoke_compare.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict


class SmokeFigures(TypedDict, total=False):
    """What one smoke measured; recorded in the release manifest (`gates.smoke.figures`) as this JSON object,
    and read back as the next smoke's regression baseline. Times are seconds."""

    server_version: str | None
    speculative_algorithm: str | None
    draft_model_path: str | None
    num_draft_tokens: int | None
    avg_spec_accept_length: float | None
    served_models: list[str]
    completion_tokens: int
    e2e_latency: float
    tokens_per_s: float
    accept_length: float | None
    spec_verify_ct: int | None
    finish_reason: str | None
    text_head: str
    # the sampled requests (temperature > 0, streamed, concurrent)
    sampled_requests: int
    sampled_temperature: float
    sampled_top_p: float
    sampled_completion_tokens: int
    sampled_wall_s: float
    sampled_tokens_per_s: float
    ttft_p50_s: float | None
    ttft_p99_s: float | None
    # against the profile's baseline_release (e.g. the same model without speculation)
    baseline_release: str
    speedup_vs_baseline: float | None
    sampled_speedup_vs_baseline: float | None


@dataclass(frozen=True)
class Gate:
    """One check of the smoke test; `observed`/`expected` are short texts for the table. A gate that passes
    with `warn` set drew attention without failing (a noisy figure such as the TTFT p99)."""

    id: str
    ok: bool
    observed: str
    expected: str
    detail: str = ""
    warn: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "ok": self.ok,
            "observed": self.observed,
            "expected": self.expected,
            "detail": self.detail,
            "warn": self.warn,
        }


def finite(value: object) -> float | None:
    """A number the engine reported, or None for anything else (a string, a list, NaN, infinity): an engine
    that answers the wrong type must fail a gate, not crash the gate."""
    import math

    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None
