"""The smoke's figures against earlier releases: the last verified release of the same profile on the host
(regression and latency gates), and optionally a named baseline release (the speed-up).

Why relative gates besides the absolute floors: a speculative build slower than no speculation at all still
clears a fixed tok/s floor; only "slower than what this host did last time with this profile" or "slower
than the same model without speculation" shows it. Thresholds (docs/smoke.md, "Compared with earlier
releases"):
  regression  greedy tokens/s and accept length may drop at most smoke.max_regression_pct       -> fail
              the sampled requests' tokens/s, the same rule                                         -> warning
  ttft        the sampled requests' TTFT p50 and p99 may rise at most smoke.max_ttft_regression_pct,
              and only a rise of more than TTFT_NOISE_S counts (tunnel and scheduling jitter)       -> warning
The concurrent figures warn and never fail: they measure the engine's batching under whatever else reaches
it (production traffic comes back as soon as the health check passes; a busy host slows its CPU-side
scheduler), so a drop says "look", not "this build is broken". Greedy decoding alone on an idle engine is
what the regression gate can hold to a threshold.
  speedup     tokens/s over the baseline release's; reported, and a gate only with smoke.min_speedup
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from specops.commands.manifest import Figures
from specops.engine.smoke_types import Gate, SmokeFigures, finite

if TYPE_CHECKING:
    from specops.config.profile import Profile

TTFT_NOISE_S = 0.05  # a rise smaller than 50 ms never fails the TTFT gate, whatever its percentage
_THROUGHPUTS = (("tokens_per_s", "tok/s"), ("accept_length", "accept"), ("sampled_tokens_per_s", "sampled tok/s"))
_WARN_ONLY = ("sampled_tokens_per_s",)


def regression_gate(figures: SmokeFigures, profile: Profile, previous: Figures | None) -> Gate:
    """Greedy tokens/s and accept length may drop at most max_regression_pct below the previous verified release;
    a larger drop of the sampled requests' tokens/s is a warning."""
    allowed = profile.smoke.max_regression_pct
    expected = f"within {allowed:g}% of the previous release"
    if not previous:
        return Gate("regression", True, "no previous verified release", expected, "skipped")
    drops: list[str] = []
    warnings: list[str] = []
    observed: list[str] = []
    for key, unit in _THROUGHPUTS:
        before, now = finite(previous.get(key)), finite(figures.get(key))
        if before is None or before <= 0 or now is None:
            continue
        drop = (before - now) / before * 100
        observed.append(f"{now:g} {unit} vs {before:g} ({-drop:+.0f}%)")
        if drop > allowed:
            (warnings if key in _WARN_ONLY else drops).append(f"{key} dropped {drop:.0f}%")
    if not observed:
        return Gate("regression", True, "no comparable figures", expected, "skipped")
    if drops:
        return Gate("regression", False, "; ".join(observed), expected, "; ".join(drops + warnings))
    detail = "warning: " + "; ".join(warnings) if warnings else ""
    return Gate("regression", True, "; ".join(observed), expected, detail, warn=bool(warnings))


def ttft_gate(figures: SmokeFigures, profile: Profile, previous: Figures | None) -> Gate | None:
    """TTFT p50 and p99 against the previous verified release (a warning beyond the threshold); None without
    sampled requests. `expected` states the rule `_slower` applies: both figures, the percentage and the floor."""
    p50, p99 = finite(figures.get("ttft_p50_s")), finite(figures.get("ttft_p99_s"))
    if p50 is None or p99 is None:
        return None
    allowed = profile.smoke.max_ttft_regression_pct
    expected = f"p50 and p99 within +{allowed:g}% or +{TTFT_NOISE_S * 1000:.0f} ms of the previous release"
    observed = f"p50 {_ms(p50)}, p99 {_ms(p99)}"
    before50 = finite(previous.get("ttft_p50_s")) if previous else None
    before99 = finite(previous.get("ttft_p99_s")) if previous else None
    if before50 is None or before50 <= 0:
        return Gate("ttft", True, observed, expected, "skipped: no previous verified release with TTFT figures")
    observed = f"p50 {_ms(p50)} vs {_ms(before50)}, p99 {_ms(p99)} vs {_ms(before99)}"
    rises = (("p50", _slower(p50, before50, allowed)), ("p99", _slower(p99, before99, allowed) if before99 else ""))
    slower = [f"{name} {rise}" for name, rise in rises if rise]
    return Gate("ttft", True, observed, expected, "warning: " + "; ".join(slower) if slower else "", warn=bool(slower))


def speedup_gate(figures: SmokeFigures, profile: Profile, baseline: Figures | None) -> Gate | None:
    """Tokens/s over the baseline release's (recorded in `figures`); None when the profile names no baseline."""
    release, minimum = profile.smoke.baseline_release, profile.smoke.min_speedup
    if release is None:
        return None
    expected = f">= {minimum:g}x release {release}" if minimum is not None else f"reported against release {release}"
    figures["baseline_release"] = release
    greedy = _ratio(figures.get("tokens_per_s"), baseline.get("tokens_per_s") if baseline else None)
    sampled = _ratio(figures.get("sampled_tokens_per_s"), baseline.get("sampled_tokens_per_s") if baseline else None)
    figures["speedup_vs_baseline"], figures["sampled_speedup_vs_baseline"] = greedy, sampled
    if greedy is None:
        detail = f"release {release} has no recorded smoke tokens/s on this host"
        return Gate("speedup", minimum is None, "not measurable", expected, detail, warn=minimum is None)
    assert baseline is not None
    observed = f"{greedy:.2f}x tok/s ({figures.get('tokens_per_s')} vs {baseline.get('tokens_per_s')})"
    if sampled is not None:
        observed += f"; sampled {sampled:.2f}x"
    ok = minimum is None or greedy >= minimum
    detail = "" if ok else f"slower than {minimum:g}x the baseline: speculation does not pay off on this host"
    return Gate("speedup", ok, observed, expected, detail)


def _slower(now: float, before: float | None, allowed_pct: float) -> str:
    """ "" when `now` is within the allowance, else how much slower it is."""
    if before is None or before <= 0:
        return ""
    rise = (now - before) / before * 100
    if rise <= allowed_pct or now - before <= TTFT_NOISE_S:
        return ""
    return f"rose {rise:.0f}% ({_ms(before)} -> {_ms(now)})"


def _ratio(now: object, before: object) -> float | None:
    top, bottom = finite(now), finite(before)
    if top is None or bottom is None or bottom <= 0:
        return None
    return round(top / bottom, 3)


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f} ms"
