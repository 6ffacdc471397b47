"""`specops rollback GROUP [--to ID]` for a group that holds multi-node engines and hosts.

Why every plan first: as for a group of hosts (cli/rollback_group.py), a rollback that can only happen on some
members would leave the group split; every host's target and every engine's (rank 0's, then the same release on
every other rank: cli/rollback_engine.py) is chosen and checked before anything changes, and one refusal stops
it with nothing changed anywhere. Then the members go one after another, in inventory order (an engine where
its rank 0's host stands), so at most one member is out of service at a time; an engine's ranks roll back
together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from specops.cli.output import print_json, print_raw
from specops.errors import ExitCode

if TYPE_CHECKING:
    from specops.cli.state import AppState
    from specops.config.inventory import HostSpec
    from specops.deploy.rollback import RollbackResult
    from specops.deploy.rollback_plan import RollbackPlan


def rollback_members(app_state: AppState, group: str, to: str | None, force: bool, dry_run: bool,
                     lock: tuple[float, bool], as_json: bool) -> None:  # fmt: skip
    """`lock`: (--lock-wait seconds, --reap). Exit 0 when every member's rollback was verified; 7 when one failed
    after stopping its engine; else 1."""
    from specops.cli.rollback_engine import plan_ranks, roll_back_ranks
    from specops.cli.rollback_group import plan_hosts, roll_back_hosts
    from specops.deploy.members import engines_in, hosts_in

    config = app_state.load_config()
    engines = engines_in(config, [group])
    members = _members(app_state, hosts_in(config, [group], engines, "roll back"), engines)
    plans: dict[str, RollbackPlan] = {}
    for name, specs in members:  # every plan before anything changes: one refusal stops it here
        plan = plan_ranks if name in engines else plan_hosts
        plans.update(plan(app_state, specs, to, force))
    if dry_run:
        _show(plans, engines, as_json)
        return
    results: dict[str, RollbackResult] = {}
    for name, specs in members:
        if name in engines:
            results.update(roll_back_ranks(app_state, name, specs, plans, (*lock, force), as_json))
        else:
            results.update(roll_back_hosts(app_state, specs, plans, (*lock, force), as_json))
    if as_json:
        ranks = {name: {"ranks": list(config.inventory.engines[name].hosts)} for name in engines}
        print_json({"hosts": {host: result.to_json() for host, result in results.items()}, "engines": ranks})
    else:
        print_raw("".join(f"{host}: {result.summary}\n" for host, result in results.items()))
    failed = any(result.failed_after_stop for result in results.values())
    code = ExitCode.OK if all(r.ok for r in results.values()) else ExitCode.ROLLBACK_FAILED if failed else 1
    raise typer.Exit(int(code))


def _members(app_state: AppState, hosts: list[HostSpec], engines: list[str]) -> list[tuple[str, list[HostSpec]]]:
    """(name, hosts) per member in inventory order: a host alone, an engine with its ranks, rank 0 first."""
    inventory = app_state.load_config().inventory
    members = [(spec.name, [spec]) for spec in hosts]
    members += [(name, [inventory.hosts[host] for host in inventory.engines[name].hosts]) for name in engines]
    order = list(inventory.hosts)
    return sorted(members, key=lambda member: order.index(member[1][0].name))


def _show(plans: dict[str, RollbackPlan], engines: list[str], as_json: bool) -> None:
    if as_json:
        print_json({"dry_run": True, "hosts": {name: plan.to_json() for name, plan in plans.items()},
                    "engines": engines})  # fmt: skip
        return
    print_raw("".join(f"engine {name}: its ranks roll back together, every rank to the same release\n"
                      for name in engines))  # fmt: skip
    print_raw("".join(f"{line}\n" for plan in plans.values() for line in plan.lines()))
    print_raw("dry run: nothing was changed, no lock was taken\n")
