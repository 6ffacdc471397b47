"""How many requests an SGLang engine is working on, read from its Prometheus `/metrics` text.

SGLang's scheduler exports two gauges (sglang/srt/metrics/collector.py): `sglang:num_running_reqs` (requests
being decoded) and `sglang:num_queue_reqs` (requests waiting for a slot). Each sample carries labels
(`model_name`, and in newer builds `engine_type`, `tp_rank`, `pp_rank`, `dp_rank`): the ranks of one
data-parallel group report the same requests, so a group counts once (its highest sample) and the groups
add up. A drain is over when both reach 0.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

RUNNING = "sglang:num_running_reqs"
QUEUED = "sglang:num_queue_reqs"
_SAMPLE = re.compile(
    r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)"
    r"(?:\{(?P<labels>(?:[^\"}]|\"(?:[^\"\\]|\\.)*\")*)\})?"
    r"\s+(?P<value>\S+)(?:\s+-?\d+)?\s*$"
)
_LABEL = re.compile(r'(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*"(?P<value>(?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class RequestGauges:
    """Requests in the engine now; None where the engine does not export that gauge."""

    running: int | None
    queued: int | None

    @property
    def known(self) -> bool:
        return self.running is not None or self.queued is not None

    @property
    def in_flight(self) -> int:
        """Running plus queued: the requests a stop now would cut (an unknown gauge counts 0)."""
        return (self.running or 0) + (self.queued or 0)

    def describe(self) -> str:
        if not self.known:
            return "request counts unknown (no sglang:num_running_reqs in /metrics)"
        shown = [f"{value} {word}" for value, word in ((self.running, "running"), (self.queued, "queued"))
                 if value is not None]  # fmt: skip
        return ", ".join(shown)


def parse_request_gauges(text: str) -> RequestGauges:
    """The two gauges from a /metrics page (comments, other metrics and malformed lines are skipped)."""
    groups: dict[str, dict[str, float]] = {RUNNING: {}, QUEUED: {}}
    for line in text.splitlines():
        found = _SAMPLE.match(line.strip())
        if found is None or found.group("name") not in groups:
            continue
        value = _number(found.group("value"))
        if value is None:
            continue
        labels = {m.group("key"): m.group("value") for m in _LABEL.finditer(found.group("labels") or "")}
        group = labels.get("dp_rank", "")
        samples = groups[found.group("name")]
        samples[group] = max(samples.get(group, 0.0), value)
    return RequestGauges(running=_total(groups[RUNNING]), queued=_total(groups[QUEUED]))


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _total(samples: dict[str, float]) -> int | None:
    return round(sum(samples.values())) if samples else None
