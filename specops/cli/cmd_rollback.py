"""`specops rollback HOST [--to ID]`: put a verified release back and prove it (the core holds the lock and
writes the audit line: specops.deploy.manual_rollback)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from specops.cli.cmd_deploy import deploy_reporter, profile_resolver
from specops.cli.options import JsonOpt, LockWaitOpt, OptionalHostArg, ReapOpt, check_release_option
from specops.cli.output import print_json, print_raw
from specops.cli.state import state
from specops.errors import ExitCode

if TYPE_CHECKING:
    from specops.deploy.rollback_plan import RollbackPlan


def rollback(
    ctx: typer.Context,
    host: OptionalHostArg = None,
    to: Annotated[
        str | None, typer.Option("--to", metavar="ID", help="Release or build id (default: the last verified one).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Allow a --to release that is marked bad.")] = False,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the plan (from -> to, why, drain, gates); take no lock, change nothing."),
    ] = False,
    lock_wait: LockWaitOpt = 0.0,
    reap: ReapOpt = False,
    json_output: JsonOpt = False,
) -> None:
    """Put a verified release back, restart, and prove it with the readiness and smoke gates.

    A group: every host's target is chosen first (one refusal changes nothing anywhere), then the hosts are
    rolled back one after another; `--to BUILD` is each host's newest verified release of that build.

    The target is chosen and checked before anything changes: a rollback that cannot happen is refused with the
    engine still serving. The release it leaves is marked bad (never a rollback target again;
    `releases HOST --unmark-bad ID`)."""
    from specops.deploy.manual_rollback import manual_rollback, plan_manual_rollback

    app_state = state(ctx)
    as_json = app_state.wants_json(json_output)
    config = app_state.load_config()
    host = host or config.default_host("name the host: specops rollback HOST")
    if to is not None:
        check_release_option("--to", to)  # before connecting or locking anything
    if host in config.inventory.engines:  # every rank to the same release (cli/rollback_engine.py)
        from specops.cli.rollback_engine import rollback_engine

        rollback_engine(app_state, host, to, force, dry_run, (lock_wait, reap), as_json)
        return
    from specops.deploy.members import engines_in

    if host in config.inventory.groups and engines_in(config, [host]):  # engines and hosts: each engine as one
        from specops.cli.rollback_members import rollback_members

        rollback_members(app_state, host, to, force, dry_run, (lock_wait, reap), as_json)
        return
    from specops.config.engine_spec import refuse_engine_ranks

    specs = config.inventory.select([host]) if host in config.inventory.groups else [config.host(host)]
    refuse_engine_ranks(config.inventory.engines, [spec.name for spec in specs], "roll back")
    if host in config.inventory.groups:
        from specops.cli.rollback_group import rollback_group

        rollback_group(app_state, specs, to, force, dry_run, (lock_wait, reap), as_json)
        return
    (spec,) = specs
    if dry_run:
        with app_state.connect(spec) as connection:
            _show_plan(plan_manual_rollback(connection, spec, profile_resolver(config, host, None), to, force), as_json)
        return
    with deploy_reporter(as_json, app_state.verbose) as reporter, app_state.connect(spec) as connection:
        result = manual_rollback(connection, spec, profile_resolver(config, host, None), to, reporter,
                                 lock_wait_s=lock_wait, force=force, reap=reap)  # fmt: skip
    final = result.final_line(host)
    if as_json:
        print_json({**result.to_json(), "now": final or None})
    else:
        typer.echo(result.summary)
        if final:
            typer.echo(final)
    failed = ExitCode.ROLLBACK_FAILED if result.failed_after_stop else ExitCode.CHECKS_FAILED
    raise typer.Exit(int(ExitCode.OK if result.ok else failed))


def _show_plan(plan: RollbackPlan, as_json: bool) -> None:
    if as_json:
        print_json({"dry_run": True, **plan.to_json()})
    else:
        print_raw("".join(f"{line}\n" for line in plan.lines()))
        print_raw("dry run: nothing was changed, no lock was taken\n")
