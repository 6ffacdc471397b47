"""A trial's candidate against production, on the same prompts, in the same run: greedy agreement and speed.

Why agreement says something: speculative decoding is lossless, so at temperature 0 a correct candidate
writes what a correct target writes; the common prefix of the two answers, in tokens, measures it (numeric
noise may flip one choice late in a long answer; a broken draft path disagrees from the first tokens).
Speed, accept length and time to first token are ratios against production measured minutes apart, on the
same host, so that the host's load and clocks cancel out.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean
from typing import TYPE_CHECKING

from specops.engine.degenerate import degenerate_reason
from specops.engine.smoke_types import finite

if TYPE_CHECKING:
    from specops.engine.client import EngineClient

HEAD_CHARS = 48


@dataclass(frozen=True)
class Answer:
    """One greedy answer as the caller saw it (streamed: its time to first token is measured here)."""

    text: str
    tokens: tuple[int, ...]
    ttft_s: float | None
    tokens_per_s: float
    accept_length: float | None
    error: str | None = None


def measure(client: EngineClient, prompts: tuple[str, ...], max_new_tokens: int) -> list[Answer]:
    """Each prompt once, greedy, streamed, one after the other (the two engines never compete for the host)."""
    answers = []
    for prompt in prompts:
        params = {"temperature": 0.0, "max_new_tokens": max_new_tokens, "ignore_eos": True}
        streamed = client.generate_stream(prompt, params)
        tokens = streamed.completion_tokens
        rate = tokens / streamed.elapsed_s if streamed.elapsed_s > 0 else 0.0
        accept = finite(streamed.meta_info.get("spec_accept_length"))
        answers.append(Answer(streamed.text, tuple(streamed.output_ids), streamed.ttft_s, round(rate, 2),
                              None if accept is None else float(accept), streamed.error))  # fmt: skip
    return answers


@dataclass(frozen=True)
class PromptAgreement:
    """One prompt: how many of production's tokens the candidate wrote alike, from the start."""

    prompt: str
    agreed: int
    total: int
    candidate_head: str
    production_head: str
    degenerate: str = ""

    @property
    def ratio(self) -> float:
        return self.agreed / self.total if self.total else 0.0

    def to_json(self) -> dict[str, object]:
        return {"prompt": self.prompt, "agreed_tokens": self.agreed, "production_tokens": self.total,
                "agreement": round(self.ratio, 4), "candidate": self.candidate_head,
                "production": self.production_head, "degenerate": self.degenerate or None}  # fmt: skip


@dataclass(frozen=True)
class Comparison:
    prompts: list[PromptAgreement]
    candidate: dict[str, float | None]
    production: dict[str, float | None]

    @property
    def agreement(self) -> float:
        total = sum(prompt.total for prompt in self.prompts)
        return sum(prompt.agreed for prompt in self.prompts) / total if total else 0.0

    def ratio(self, figure: str) -> float | None:
        now, before = self.candidate.get(figure), self.production.get(figure)
        return round(now / before, 3) if now is not None and before else None

    def to_json(self) -> dict[str, object]:
        figures = ("tokens_per_s", "accept_length", "ttft_s")
        return {"agreement": round(self.agreement, 4), "prompts": [prompt.to_json() for prompt in self.prompts],
                "candidate": self.candidate, "production": self.production,
                "ratios": {figure: self.ratio(figure) for figure in figures}}  # fmt: skip


def compare(prompts: tuple[str, ...], production: list[Answer], candidate: list[Answer]) -> Comparison:
    rows = []
    for prompt, base, trial in zip(prompts, production, candidate, strict=True):
        total = len(base.tokens) or len(base.text)
        agreed = _common_prefix(base.tokens, trial.tokens) if base.tokens else _common_prefix(base.text, trial.text)
        degenerate = trial.error or degenerate_reason(trial.text, list(trial.tokens), loops=False)
        rows.append(PromptAgreement(prompt, agreed, total, trial.text[:HEAD_CHARS], base.text[:HEAD_CHARS],
                                    degenerate))  # fmt: skip
    return Comparison(rows, _figures(candidate), _figures(production))


def _common_prefix(left: tuple[int, ...] | str, right: tuple[int, ...] | str) -> int:
    count = 0
    for a, b in zip(left, right, strict=False):
        if a != b:
            break
        count += 1
    return count


def _figures(answers: list[Answer]) -> dict[str, float | None]:
    def average(values: list[float | None]) -> float | None:
        known = [value for value in values if value is not None]
        return round(mean(known), 4) if known else None

    return {"tokens_per_s": average([answer.tokens_per_s for answer in answers]),
            "accept_length": average([answer.accept_length for answer in answers]),
            "ttft_s": average([answer.ttft_s for answer in answers])}  # fmt: skip


def verdict(comparison: Comparison, min_agreement: float, min_speedup: float | None) -> list[str]:
    """Why the candidate fails against production (empty: it passes): degenerate answers, disagreement (with
    the first prompts that disagree, both answers' heads), or a speed below `min_speedup` times production's."""
    causes = []
    degenerate = [row for row in comparison.prompts if row.degenerate]
    if degenerate:
        first = degenerate[0]
        causes.append(f"degenerate output on {len(degenerate)} of {len(comparison.prompts)} prompt(s): "
                      f"{first.degenerate} ({first.candidate_head!r})")  # fmt: skip
    if comparison.agreement < min_agreement:
        worst = sorted(comparison.prompts, key=lambda row: row.ratio)[:2]
        examples = "; ".join(f"{row.prompt[:40]!r}: candidate {row.candidate_head!r}, production "
                             f"{row.production_head!r}" for row in worst)  # fmt: skip
        causes.append(f"disagrees with production: {comparison.agreement:.0%} of greedy tokens agree (want "
                      f">= {min_agreement:.0%}); {examples}")  # fmt: skip
    speed = comparison.ratio("tokens_per_s")
    if min_speedup is not None and (speed is None or speed < min_speedup):
        shown = "unknown" if speed is None else f"{speed:.2f}x"
        causes.append(f"slower than --min-speedup: {shown} production's tokens/s (want >= {min_speedup:g}x)")
    return causes
