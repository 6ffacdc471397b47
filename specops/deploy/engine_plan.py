"""Planning the deploy of a multi-node engine: one HostPlan per rank, every rank with the same release id.

Why one id: the ranks' units differ in `--node-rank`, so each host's own id (derived from its unit) would differ,
and a rollback or `releases` could no longer say "the engine runs release R". The engine's id is derived from
every rank's unit and env file together: a change on any rank is a new release of the whole engine.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace
from pathlib import Path

from specops.build.stage import StagedBuild
from specops.config.engine_targets import resolve_engine
from specops.config.inventory import HostSpec
from specops.config.loader import Config, Target
from specops.deploy.plan import DeployPlan, HostPlan, plan_target, stage_for


def make_engine_plan(config: Config, name: str, profile: str | None, build: Path | None, patches: list[Path] | None,
                     workdir: Path, address_of: Callable[[HostSpec], str]) -> DeployPlan:  # fmt: skip
    """Every rank resolved (the engine's rules checked) and the build staged once, before any host is used."""
    targets = resolve_engine(config, name, profile, address_of)
    specs = [target.host for target in targets]
    staged, choice, build_flags = stage_for(config, specs, build, patches, workdir)
    return DeployPlan(staged=staged, hosts=rank_plans(config, targets, staged, build_flags), build=choice)


def rank_plans(config: Config, targets: list[Target], staged: StagedBuild,
               build_flags: Collection[str] | None) -> list[HostPlan]:  # fmt: skip
    """Each rank's plan, all with the engine's one release id (derived from every rank's unit and env)."""
    ranks = [plan_target(config, target, build_flags) for target in targets]
    release_id = staged.release_id(ranks[0].target.profile.name, "".join(r.unit_text for r in ranks),
                                   "".join(r.env_shown for r in ranks))  # fmt: skip
    return [replace(r, release_id=release_id) for r in ranks]


def engine_lines(plan: DeployPlan) -> list[str]:
    """What a dry run says of each engine before the plans: its ranks, and the order they act in."""
    engines: dict[str, list[HostPlan]] = {}
    for host_plan in plan.hosts:
        if host_plan.target.rank is not None:
            engines.setdefault(host_plan.target.rank.engine, []).append(host_plan)
    lines = []
    for name, ranks in engines.items():
        hosts = ", ".join(f"rank {i}: {h.name}" for i, h in enumerate(ranks))
        lines.append(f"engine {name}: {len(ranks)} ranks ({hosts}), release {ranks[0].release_id} on every rank")
    return [*lines, *ORDER] if lines else []


ORDER = [
    "  order: lock every rank (rank order); push and preflight on every rank in parallel; if any rank fails,",
    "  no rank is stopped; drain rank 0, then the workers; start every rank; readiness and smoke on rank 0;",
    "  a failed gate rolls every rank back to the same release",
]
