"""`specops restart HOST|GROUP`: restart the current release's engine (or start a stopped one) under the host's
lock, through the deploy's drain and gates, audited (the core: specops.deploy.restart). Several hosts are
restarted in parallel, one summary row each."""

from __future__ import annotations

import shlex
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from specops.cli.fleet_view import ask_fleet, finish, selected
from specops.cli.options import AllOpt, JsonOpt, LockWaitOpt, ReapOpt, TargetsArg
from specops.cli.state import state
from specops.errors import ExitCode

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.deploy.restart import HostRestart
    from specops.deploy.steps import HostSteps
    from specops.host.base import Host

COLUMNS = ("OUTCOME", "SERVING", "ENGINE BEFORE", "TOK/S", "ACCEPT", "SECONDS")


def restart(
    ctx: typer.Context,
    names: TargetsArg = None,
    all_hosts: AllOpt = False,
    lock_wait: LockWaitOpt = 0.0,
    reap: ReapOpt = False,
    skip_check: Annotated[
        list[str] | None,
        typer.Option("--skip-check", metavar="ID[,ID]", help="An engine: leave out these dist port checks."),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan; change nothing.")] = False,
    json_output: JsonOpt = False,
) -> None:
    """Restart the current release (or start it when stopped): drain, restart, readiness and smoke gates.

    Under the host's lock, audited. A failure marks nothing bad: the release passed these gates before, so the
    host is the suspect; the outcome names the journal's cause. Several hosts: in parallel, one row each."""
    from specops.cli.cmd_deploy import check_ids, deploy_reporter, profile_resolver, ssh_hostname
    from specops.deploy.restart import HostRestart, RestartOptions, preview, restart_host

    app_state = state(ctx)
    as_json = app_state.wants_json(json_output)
    skip_checks = check_ids(skip_check)  # a misspelt id is the first error: nothing is read or connected yet
    config = app_state.load_config()
    from specops.config.engine_spec import refuse_engine_ranks
    from specops.deploy.engine_plan import engine_named
    from specops.deploy.engine_run import EngineRun

    engine = None if all_hosts else engine_named(config, names or [], "restarted")
    if engine is not None:  # every rank at once, rank 0 drained first and gated (deploy/engine_run.py)
        specs = [config.inventory.hosts[host] for host in config.inventory.engines[engine].hosts]
    else:
        specs = selected(config, names or [], all_hosts)
    refuse_engine_ranks(config.inventory.engines, [spec.name for spec in specs if engine is None], "restart")
    ranks = None
    if engine is not None:  # the dist port test reads rank 0's address as the units were rendered with it
        from specops.config.engine_targets import resolve_engine

        first = resolve_engine(config, engine, None, ssh_hostname)[0].rank
        ranks = EngineRun(engine, [spec.name for spec in specs], dist_init_addr=first.dist_init_addr if first else "")
    options = RestartOptions(lock_wait_s=lock_wait, reap=reap, command=shlex.join(["specops", *sys.argv[1:]]),
                             engine=ranks, skip_checks=skip_checks)  # fmt: skip
    if dry_run:
        from specops.cli.dry_run import show_readings

        def read(host: Host, spec: HostSpec) -> tuple[HostSteps, ExitCode]:
            return preview(host, spec, profile_resolver(config, spec.name, None), options), ExitCode.OK

        show_readings(ask_fleet(app_state, specs, read), as_json, lambda steps: steps.to_json())
        return
    with deploy_reporter(as_json, app_state.verbose) as reporter:

        def run(host: Host, spec: HostSpec) -> tuple[HostRestart, ExitCode]:
            done = restart_host(host, spec, profile_resolver(config, spec.name, None), reporter, options)
            return done, done.outcome.exit_code

        readings = ask_fleet(app_state, specs, run)
    finish(readings, as_json, HostRestart.to_json, COLUMNS, _row, _notes)


def _row(done: HostRestart) -> list[str]:
    outcome = done.outcome
    figures = outcome.gates.smoke.figures if outcome.gates and outcome.gates.smoke else {}
    return [str(outcome.outcome), outcome.release or "nothing", done.before.shown, _figure(figures.get("tokens_per_s")),
            _figure(figures.get("accept_length")), f"{sum(outcome.phases.values()):.1f}"]  # fmt: skip


def _notes(done: HostRestart) -> list[str]:
    outcome = done.outcome
    notes = [outcome.lock_taken_over] if outcome.lock_taken_over else []
    notes += [outcome.cause] if outcome.cause else []
    notes += [f"hint: {outcome.hint}"] if outcome.hint and not outcome.ok else []
    final = outcome.final_line()  # last: what serves now, as read from the host at the end
    return notes + ([final.removeprefix(f"{outcome.host}: ")] if final else [])


def _figure(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "-"
