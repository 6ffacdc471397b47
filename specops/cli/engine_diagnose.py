"""`specops diagnose ENGINE`: every rank's verdict (read in parallel), then the engine's.

Why per rank: a multi-node engine fails as one (a dead worker takes rank 0 down with it), but the cause lives
on one rank: its build, its configuration or its host. The engine's verdict names the ranks that failed and
puts first the rank whose verdict is not merely the others' consequence (a code, configuration or environment
change there); the ranks that did not fail are cleared.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specops.cli.state import AppState
    from specops.config.loader import Config
    from specops.diagnose.verdict import Verdict

QUIET = ("no failure",)


def diagnose_ranks(app_state: AppState, config: Config, name: str, release: str | None) -> list[Verdict]:
    """Each rank's verdict, rank 0 first."""
    from specops.diagnose.case import build_case
    from specops.diagnose.verdict import decide
    from specops.ops.forensics import collect

    specs = [config.inventory.hosts[host] for host in config.inventory.engines[name].hosts]

    def one(spec: Any) -> Verdict:
        with app_state.connect(spec) as connection:
            return decide(build_case(collect(connection, spec, release)))

    with ThreadPoolExecutor(max_workers=len(specs)) as pool:
        return list(pool.map(one, specs))


def engine_verdict(name: str, verdicts: list[Verdict]) -> dict[str, Any]:
    """The engine's verdict: no failure when no rank failed; else the failed ranks, the likely cause first."""
    failed = [(rank, verdict) for rank, verdict in enumerate(verdicts) if verdict.kind not in QUIET]
    if not failed:
        return {"engine": name, "verdict": "no failure", "headline": f"no rank of {name} failed", "ranks": []}
    causes = [(rank, v) for rank, v in failed if v.kind in ("code change", "configuration change", "environment drift",
                                                             "environment")]  # fmt: skip
    rank, first = (causes or failed)[0]
    names = ", ".join(f"rank {r} ({v.case.host})" for r, v in failed)
    headline = f"{names} failed; likely cause on rank {rank} ({first.case.host}): {first.headline}"
    return {"engine": name, "verdict": first.kind, "ranks": [r for r, _ in failed], "headline": headline}
