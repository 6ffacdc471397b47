"""The smoke's comparisons with earlier releases: greedy throughput regression (fail), the concurrent figures
(sampled tok/s, TTFT p50 and p99: warnings) with their noise floor, and the speed-up over a baseline release."""

from __future__ import annotations

import re
from typing import Any

import pytest

from specops.config.profile import Profile, Smoke
from specops.engine.smoke_compare import regression_gate, speedup_gate, ttft_gate
from specops.engine.smoke_types import SmokeFigures

NOW: SmokeFigures = {"tokens_per_s": 400.0, "accept_length": 3.2, "sampled_tokens_per_s": 1200.0,
                     "ttft_p50_s": 0.2, "ttft_p99_s": 0.3}  # fmt: skip


def _profile(**smoke: Any) -> Profile:
    return Profile(name="ddtree", algorithm="DDTREE", smoke=Smoke(**smoke))


def test_a_sampled_throughput_drop_warns_and_a_greedy_one_fails() -> None:
    previous = {"tokens_per_s": 400.0, "accept_length": 3.2, "sampled_tokens_per_s": 2000.0}
    gate = regression_gate(NOW, _profile(), previous)
    assert (gate.ok, gate.warn, gate.detail) == (True, True, "warning: sampled_tokens_per_s dropped 40%")
    assert "1200 sampled tok/s vs 2000 (-40%)" in gate.observed
    slower = regression_gate({**NOW, "tokens_per_s": 200.0}, _profile(), previous)
    assert (slower.ok, slower.detail) == (False, "tokens_per_s dropped 50%; sampled_tokens_per_s dropped 40%")


@pytest.mark.parametrize(
    ("before", "detail"),
    [
        pytest.param({"ttft_p50_s": 0.1, "ttft_p99_s": 0.3}, "warning: p50 rose 100% (100 ms -> 200 ms)",
                     id="p50-slower"),
        pytest.param({"ttft_p50_s": 0.15, "ttft_p99_s": 0.3}, "", id="within-50pct"),
        pytest.param({"ttft_p50_s": 0.2, "ttft_p99_s": 0.1}, "warning: p99 rose 200% (100 ms -> 300 ms)",
                     id="p99-slower"),
    ],
)  # fmt: skip
def test_ttft_beyond_the_threshold_warns_and_never_fails(before: dict[str, float], detail: str) -> None:
    gate = ttft_gate(NOW, _profile(), before)
    assert gate is not None and (gate.ok, gate.detail) == (True, detail)
    assert gate.warn is detail.startswith("warning")
    assert gate.expected == "p50 and p99 within +50% or +50 ms of the previous release"


def test_a_ttft_rise_inside_the_noise_floor_never_fails() -> None:
    fast: SmokeFigures = {"ttft_p50_s": 0.04, "ttft_p99_s": 0.05}
    gate = ttft_gate(fast, _profile(), {"ttft_p50_s": 0.01, "ttft_p99_s": 0.01})  # +300%, but 30 ms
    assert gate is not None and gate.ok and not gate.warn


@pytest.mark.parametrize("allowed_pct", [10.0, 50.0, 150.0])
def test_the_ttft_threshold_printed_is_the_one_applied(allowed_pct: float) -> None:
    """The gate's `expected` names the percentage and the floor it applies, to p50 and to p99: a rise past both
    warns, a rise past only one of them does not."""
    before = {"ttft_p50_s": 0.2, "ttft_p99_s": 0.4}
    printed = ttft_gate(NOW, _profile(max_ttft_regression_pct=allowed_pct), before)
    assert printed is not None
    found = re.fullmatch(r"p50 and p99 within \+([0-9.]+)% or \+([0-9]+) ms of the previous release", printed.expected)
    assert found is not None, printed.expected
    pct, floor_s = float(found[1]), int(found[2]) / 1000
    assert pct == allowed_pct
    for name, was in (("p50", 0.2), ("p99", 0.4)):
        smaller, larger = sorted((was * pct / 100, floor_s))
        assert larger - smaller > 0.005  # each case below lies clearly past one bound and short of the other
        for rise, warns in ((larger + 0.002, True), (smaller + 0.002, False), (smaller - 0.002, False)):
            figures: SmokeFigures = {**before, f"ttft_{name}_s": was + rise}
            gate = ttft_gate(figures, _profile(max_ttft_regression_pct=allowed_pct), before)
            assert gate is not None and gate.ok and gate.warn is warns, (name, rise, gate.detail)
            assert gate.expected == printed.expected


def test_the_ttft_threshold_is_the_profiles() -> None:
    gate = ttft_gate(NOW, _profile(max_ttft_regression_pct=150), {"ttft_p50_s": 0.1, "ttft_p99_s": 0.3})
    assert gate is not None and gate.ok and not gate.warn


def test_ttft_without_a_previous_release_or_without_sampled_requests() -> None:
    skipped = ttft_gate(NOW, _profile(), None)
    assert skipped is not None and skipped.ok
    assert skipped.detail == "skipped: no previous verified release with TTFT figures"
    assert skipped.observed == "p50 200 ms, p99 300 ms"
    assert ttft_gate({"tokens_per_s": 400.0}, _profile(), {"ttft_p50_s": 0.1}) is None


def test_speedup_is_reported_against_the_baseline_release_and_recorded() -> None:
    figures = NOW.copy()
    gate = speedup_gate(figures, _profile(baseline_release="r-nospec"),
                        {"tokens_per_s": 160.0, "sampled_tokens_per_s": 600.0})  # fmt: skip
    assert gate is not None and gate.ok
    assert gate.observed == "2.50x tok/s (400.0 vs 160.0); sampled 2.00x"
    assert gate.expected == "reported against release r-nospec"
    assert (figures["speedup_vs_baseline"], figures["sampled_speedup_vs_baseline"]) == (2.5, 2.0)
    assert figures["baseline_release"] == "r-nospec"


def test_a_speculative_build_slower_than_the_baseline_fails_with_min_speedup() -> None:
    profile = _profile(baseline_release="r-nospec", min_speedup=1.2)
    gate = speedup_gate(NOW.copy(), profile, {"tokens_per_s": 450.0})
    assert gate is not None and not gate.ok
    assert gate.detail == "slower than 1.2x the baseline: speculation does not pay off on this host"


@pytest.mark.parametrize(("minimum", "ok", "warn"), [(None, True, True), (1.2, False, False)])
def test_a_baseline_without_figures(minimum: float | None, ok: bool, warn: bool) -> None:
    gate = speedup_gate(NOW.copy(), _profile(baseline_release="r0", min_speedup=minimum), None)
    assert gate is not None and (gate.ok, gate.warn) == (ok, warn)
    assert gate.detail == "release r0 has no recorded smoke tokens/s on this host"


def test_no_speedup_gate_without_a_baseline_release() -> None:
    assert speedup_gate(NOW.copy(), _profile(), {"tokens_per_s": 1.0}) is None
