"""`specops restart HOST|GROUP`: restart the current release's engine (or start a stopped one) under the host's
lock, through the deploy's drain and gates, audited (the core: specops.deploy.restart). Several hosts are
restarted in parallel, one summary row each."""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated

import typer

from specops.cli.fleet_view import finish, selected
from specops.cli.options import AllOpt, JsonOpt, LockWaitOpt, ReapOpt, TargetsArg
from specops.cli.state import state
from specops.errors import ExitCode

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.loader import Config, Target
    from specops.deploy.engine_run import EngineRun
    from specops.deploy.member_survey import Batch
    from specops.deploy.restart import HostRestart
    from specops.deploy.steps import HostSteps
    from specops.deploy.survey import Question
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
    from specops.cli.cmd_deploy import check_ids, deploy_reporter, profile_resolver
    from specops.deploy.member_survey import ask_members
    from specops.deploy.restart import HostRestart, RestartOptions, preview, restart_host

    app_state = state(ctx)
    as_json = app_state.wants_json(json_output)
    skip_checks = check_ids(skip_check)  # a misspelt id is the first error: nothing is read or connected yet
    config = app_state.load_config()
    batches = _batches(config, names or [], all_hosts)
    options = RestartOptions(lock_wait_s=lock_wait, reap=reap, command=shlex.join(["specops", *sys.argv[1:]]),
                             skip_checks=skip_checks)  # fmt: skip
    order = list(config.inventory.hosts)
    if dry_run:
        from specops.cli.dry_run import show_readings

        def read_for(run: EngineRun | None) -> Question[HostSteps]:
            def read(host: Host, spec: HostSpec) -> tuple[HostSteps, ExitCode]:
                steps = preview(host, spec, profile_resolver(config, spec.name, None), replace(options, engine=run))
                return steps, ExitCode.OK

            return read

        show_readings(ask_members(batches, app_state.opener, read_for, order), as_json, lambda s: s.to_json())
        return
    with deploy_reporter(as_json, app_state.verbose) as reporter:

        def run_for(engine: EngineRun | None) -> Question[HostRestart]:
            def run(host: Host, spec: HostSpec) -> tuple[HostRestart, ExitCode]:
                done = restart_host(host, spec, profile_resolver(config, spec.name, None), reporter,
                                    replace(options, engine=engine))  # fmt: skip
                return done, done.outcome.exit_code

            return run

        readings = ask_members(batches, app_state.opener, run_for, order)
    finish(readings, as_json, HostRestart.to_json, COLUMNS, _row, _notes)


def _batches(config: Config, names: list[str], all_hosts: bool) -> list[Batch]:
    """The plain hosts, and each multi-node engine's ranks with its run (named, in a group, or `--all`): every
    engine restarts as one, rank 0 drained first and gated (deploy/engine_run.py). A rank named alone, or with
    its own engine, is refused (exit 2)."""
    from specops.deploy.engine_run import EngineRun
    from specops.deploy.members import engines_in, hosts_in

    inventory = config.inventory
    if all_hosts:
        selected(config, names, all_hosts)  # no hosts at all: its error
        ranks = {host for engine in inventory.engines.values() for host in engine.hosts}
        names = [*inventory.engines, *(name for name in inventory.hosts if name not in ranks)]
    elif not names:
        selected(config, names, all_hosts)  # its usage error
    engines = engines_in(config, names)
    hosts = hosts_in(config, names, engines, "restart")
    runs = [EngineRun.of(name, _ranks(config, name)) for name in engines]
    return [(hosts, None), *(([inventory.hosts[host] for host in run.hosts], run) for run in runs)]


def _ranks(config: Config, engine: str) -> list[Target]:
    """The engine's ranks as its units were rendered: rank 0's ADDR:PORT is what the dist port test reads."""
    from specops.cli.cmd_deploy import ssh_hostname
    from specops.config.engine_targets import resolve_engine

    return resolve_engine(config, engine, None, ssh_hostname)


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
