"""`specops rollback ENGINE [--to ID]`: every rank of a multi-node engine put back on the same verified release.

Why plan every rank first: ranks on different releases hang at the rendezvous or compute garbage. Rank 0's target
is chosen (`--to`, else its last verified release), then every other rank must have that very release, verified;
one refusal stops the rollback with nothing changed on any rank. Then the ranks roll back side by side
(deploy/engine_run.py): locked in rank order, each drains its engine, none restarts before all have stopped,
and rank 0's readiness and smoke prove the engine.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import typer

from specops.cli.cmd_deploy import deploy_reporter, profile_resolver
from specops.cli.output import print_json, print_raw
from specops.errors import ExitCode, SpecopsError

if TYPE_CHECKING:
    from specops.cli.state import AppState
    from specops.config.inventory import HostSpec
    from specops.deploy.rollback import RollbackResult
    from specops.deploy.rollback_plan import RollbackPlan


def rollback_engine(app_state: AppState, name: str, to: str | None, force: bool, dry_run: bool,
                    lock: tuple[float, bool], as_json: bool) -> None:  # fmt: skip
    """`lock`: (--lock-wait seconds, --reap). Exit 0 when the engine's rollback was verified on every rank."""
    config = app_state.load_config()
    specs = [config.inventory.hosts[host] for host in config.inventory.engines[name].hosts]
    plans = plan_ranks(app_state, specs, to, force)
    if dry_run:
        _show(name, plans, as_json)
        return
    results = roll_back_ranks(app_state, name, specs, plans, (*lock, force), as_json)
    if as_json:
        print_json({"engine": name, "hosts": {host: result.to_json() for host, result in results.items()}})
    else:
        print_raw("".join(f"{host}: {result.summary}\n" for host, result in results.items()))
    failed = any(result.failed_after_stop for result in results.values())
    code = ExitCode.OK if all(r.ok for r in results.values()) else ExitCode.ROLLBACK_FAILED if failed else 1
    raise typer.Exit(int(code))


def roll_back_ranks(app_state: AppState, name: str, specs: list[HostSpec], plans: dict[str, RollbackPlan],
               options: tuple[float, bool, bool], as_json: bool) -> dict[str, RollbackResult]:  # fmt: skip
    """`options`: (--lock-wait seconds, --reap, --force)."""
    from specops.deploy.engine_run import EngineRun
    from specops.deploy.manual_rollback import manual_rollback
    from specops.deploy.rollback import RollbackResult

    config, (lock_wait, reap, force) = app_state.load_config(), options
    run = EngineRun(name, [spec.name for spec in specs])

    with deploy_reporter(as_json, app_state.verbose) as reporter:

        def one(spec: HostSpec) -> RollbackResult:
            try:
                with app_state.connect(spec) as connection:
                    return manual_rollback(connection, spec, profile_resolver(config, spec.name, None),
                                           plans[spec.name].to_release, reporter, lock_wait_s=lock_wait,
                                           force=force, reap=reap, engine=run)  # fmt: skip
            except SpecopsError as error:
                return RollbackResult(False, plans[spec.name].from_release, error=f"{error.message} ({error.hint})")
            finally:
                run.leave(run.rank(spec.name), "its rollback ended")

        with ThreadPoolExecutor(max_workers=len(specs)) as pool:
            done = list(pool.map(one, specs))
    return {spec.name: result for spec, result in zip(specs, done, strict=True)}


def plan_ranks(app_state: AppState, specs: list[HostSpec], to: str | None, force: bool) -> dict[str, RollbackPlan]:
    """Rank 0's plan, then every other rank's to the same release id; the first refusal (naming its host)
    propagates before any rank was changed."""
    from specops.deploy.manual_rollback import plan_manual_rollback

    config = app_state.load_config()
    plans: dict[str, RollbackPlan] = {}
    for spec in specs:
        target = to if not plans else next(iter(plans.values())).to_release
        with app_state.connect(spec) as connection:
            plans[spec.name] = plan_manual_rollback(connection, spec, profile_resolver(config, spec.name, None),
                                                    target, force)  # fmt: skip
    return plans


def _show(name: str, plans: dict[str, RollbackPlan], as_json: bool) -> None:
    if as_json:
        print_json({"dry_run": True, "engine": name, "hosts": {host: plan.to_json() for host, plan in plans.items()}})
        return
    ranks = ", ".join(f"rank {rank}: {host}" for rank, host in enumerate(plans))
    print_raw(f"engine {name}: {len(plans)} ranks ({ranks}), every rank to the same release\n")
    print_raw("".join(f"{line}\n" for plan in plans.values() for line in plan.lines()))
    print_raw("dry run: nothing was changed, no lock was taken\n")
