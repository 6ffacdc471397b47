"""`specops rollback GROUP [--to BUILD]`: one build put back on every host of a group.

Why plan every host first: a fleet rollback that can only happen on some hosts would leave the fleet split
between two builds; each host's target is chosen and checked (read-only, no lock) before any host changes, and
one refusal stops it with nothing changed anywhere. Then the hosts go one after another, each under its own
lock, so at most one host is out of service at a time. `--to BUILD` is a build id (the BUILD column of
`specops status GROUP`): each host resolves it to its own newest verified release of that build.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from specops.cli.cmd_deploy import deploy_reporter, profile_resolver
from specops.cli.output import print_json, print_raw
from specops.errors import ExitCode

if TYPE_CHECKING:
    from specops.cli.state import AppState
    from specops.config.inventory import HostSpec
    from specops.deploy.rollback import RollbackResult
    from specops.deploy.rollback_plan import RollbackPlan


def rollback_group(app_state: AppState, specs: list[HostSpec], to: str | None, force: bool, dry_run: bool,
                   lock: tuple[float, bool], as_json: bool) -> None:  # fmt: skip
    """`lock`: (--lock-wait seconds, --reap). Exit 0 when every host's rollback was verified, else 1."""
    plans = plan_hosts(app_state, specs, to, force)
    if dry_run:
        _show(plans, as_json)
        return
    results = roll_back_hosts(app_state, specs, plans, (*lock, force), as_json)
    if as_json:
        print_json({"hosts": {name: result.to_json() for name, result in results.items()}})
    else:
        print_raw("".join(f"{name}: {result.summary}\n" for name, result in results.items()))
    raise typer.Exit(int(ExitCode.OK if all(r.ok for r in results.values()) else ExitCode.CHECKS_FAILED))


def roll_back_hosts(app_state: AppState, specs: list[HostSpec], plans: dict[str, RollbackPlan],
                    options: tuple[float, bool, bool], as_json: bool) -> dict[str, RollbackResult]:  # fmt: skip
    """The hosts one after another, each to its plan's release; `options`: (--lock-wait, --reap, --force)."""
    from specops.deploy.manual_rollback import manual_rollback

    config, (lock_wait, reap, force) = app_state.load_config(), options
    results: dict[str, RollbackResult] = {}
    with deploy_reporter(as_json, app_state.verbose) as reporter:
        for spec in specs:
            target = plans[spec.name].to_release  # the release the plan resolved, by its id on this host
            with app_state.connect(spec) as connection:
                results[spec.name] = manual_rollback(connection, spec, profile_resolver(config, spec.name, None),
                                                     target, reporter, lock_wait_s=lock_wait, force=force,
                                                     reap=reap)  # fmt: skip
    return results


def plan_hosts(app_state: AppState, specs: list[HostSpec], to: str | None, force: bool) -> dict[str, RollbackPlan]:
    """Every host's plan, read without a lock; the first refusal (RollbackRefused, naming its host) propagates
    before any host was changed."""
    from specops.deploy.manual_rollback import plan_manual_rollback

    config = app_state.load_config()
    plans: dict[str, RollbackPlan] = {}
    for spec in specs:
        with app_state.connect(spec) as connection:
            plans[spec.name] = plan_manual_rollback(connection, spec, profile_resolver(config, spec.name, None), to,
                                                    force)  # fmt: skip
    return plans


def _show(plans: dict[str, RollbackPlan], as_json: bool) -> None:
    if as_json:
        print_json({"dry_run": True, "hosts": {name: plan.to_json() for name, plan in plans.items()}})
        return
    print_raw("".join(f"{line}\n" for plan in plans.values() for line in plan.lines()))
    print_raw("dry run: nothing was changed, no lock was taken\n")
