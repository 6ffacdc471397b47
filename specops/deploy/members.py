"""A deploy's members: each host, and each multi-node engine as ONE member (its ranks act together).

Why members: a group may hold engines and hosts side by side. The fleet's rules (canary, --parallel,
--max-fail-percent) count what an operator deploys: an engine is one canary, one unit of --parallel, one failure,
and one row in the summary; its ranks still deploy side by side and meet at the engine's points (engine_run.py).

Members come in inventory order; an engine stands where its rank 0's host stands.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from specops.config.engine_spec import refuse_engine_ranks
from specops.config.engine_targets import resolve_engine
from specops.config.inventory import HostSpec
from specops.config.loader import Config
from specops.deploy.engine_plan import rank_plans
from specops.deploy.plan import DeployPlan, HostPlan, plan_host, stage_for
from specops.errors import UsageError

_DONE = {"deploy": "deployed", "restart": "restarted", "roll back": "rolled back"}


@dataclass(frozen=True)
class Member:
    """One member of a deploy: a host (one plan) or a multi-node engine (its ranks' plans, rank 0 first)."""

    name: str
    hosts: list[HostPlan]
    engine: bool = False


def engines_in(config: Config, names: list[str]) -> list[str]:
    """The multi-node engines the names hold, named or inside groups, in inventory order."""
    inventory, found = config.inventory, set[str]()
    for name in names:
        if name in inventory.engines:
            found.add(name)
        elif name in inventory.groups:
            found.update(inventory.members(name))
    return [engine for engine in inventory.engines if engine in found]


def hosts_in(config: Config, names: list[str], engines: Collection[str], action: str = "deploy") -> list[HostSpec]:
    """The plain hosts the names hold (groups opened, the engines left out), in inventory order, each once.

    A host that is a rank of an engine the names also hold would be deployed twice (alone and as a rank): refused
    (exit 2) naming both. A rank named without its engine is refused as for a deploy of one rank. `action`:
    "deploy", "restart" or "roll back", as the refusals say it."""
    inventory, wanted = config.inventory, set[str]()
    for name in names:
        if name in inventory.groups:
            wanted.update(inventory.members(name) - set(inventory.engines))
        elif name not in inventory.engines:
            wanted.update(spec.name for spec in inventory.select([name]))  # an unknown name: select's error
    for engine in engines:
        spec = inventory.engines[engine]
        for rank, host in enumerate(spec.hosts):
            if host in wanted:
                raise UsageError(
                    f"host {host!r} is rank {rank} of engine {engine!r} ({', '.join(spec.hosts)}), which is named "
                    f"too: it would be {_DONE[action]} twice",
                    hint=f"name the engine {engine!r} alone; its ranks are {_DONE[action]} with it",
                )
    refuse_engine_ranks(inventory.engines, sorted(wanted), action)
    return [spec for name, spec in inventory.hosts.items() if name in wanted]


def make_member_plan(config: Config, names: list[str], profile: str | None, build: Path | None,
                     patches: list[Path] | None, workdir: Path,
                     address_of: Callable[[HostSpec], str]) -> tuple[DeployPlan, list[Member]]:  # fmt: skip
    """Every host and every engine's rank resolved, the build staged once for all, before any host is used."""
    engines = engines_in(config, names)
    specs = hosts_in(config, names, engines)
    targets = {engine: resolve_engine(config, engine, profile, address_of) for engine in engines}
    for spec in specs:
        config.resolve(spec.name, profile)  # configuration mistakes first, before the build is staged
    every = [*specs, *(target.host for ranks in targets.values() for target in ranks)]
    staged, choice, build_flags = stage_for(config, every, build, patches, workdir)
    members = [Member(spec.name, [plan_host(config, spec.name, profile, build_flags)]) for spec in specs]
    members += [Member(engine, rank_plans(config, ranks, staged, build_flags), engine=True)
                for engine, ranks in targets.items()]  # fmt: skip
    order = list(config.inventory.hosts)
    members.sort(key=lambda member: order.index(member.hosts[0].name))
    plan = DeployPlan(staged=staged, hosts=[host for member in members for host in member.hosts], build=choice)
    return plan, members
