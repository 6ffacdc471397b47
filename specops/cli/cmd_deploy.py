"""`specops deploy`: health-gated releases with automatic rollback (and the reporter `rollback` shares)."""

from __future__ import annotations

import shlex
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from specops.cli.options import JsonOpt, LockWaitOpt, ProfileOpt, ReapOpt
from specops.cli.output import print_json
from specops.cli.state import state

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.loader import Config
    from specops.config.profile import Profile
    from specops.deploy.execute import HostOutcome
    from specops.deploy.plan import DeployPlan, HostPlan
    from specops.events import Reporter


def deploy(
    ctx: typer.Context,
    names: Annotated[list[str], typer.Argument(metavar="HOST|GROUP", help="Hosts, groups and multi-node engines.")],
    build: Annotated[
        Path | None,
        typer.Option(
            "--build",
            metavar="PATH",
            help="sglang python/ folder, a folder holding sglang, or a .whl (default: build in specops.toml).",
        ),
    ] = None,
    patch: Annotated[
        list[Path] | None,
        typer.Option(
            "--patch", metavar="PATH", help="A patch to apply (repeatable; replaces the patches in specops.toml)."
        ),
    ] = None,
    profile: ProfileOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Deploy even when preflight checks fail (audited).")] = False,
    skip_check: Annotated[
        list[str] | None,
        typer.Option("--skip-check", metavar="ID[,ID]", help="Waive these preflight checks (repeatable)."),
    ] = None,
    no_rollback: Annotated[bool, typer.Option("--no-rollback", help="Leave a failed release running.")] = False,
    lock_wait: LockWaitOpt = 0.0,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan; change nothing.")] = False,
    canary: Annotated[
        int, typer.Option("--canary", metavar="N", min=0, help="Deploy this many hosts first, one by one.")
    ] = 0,
    parallel: Annotated[
        int, typer.Option("--parallel", metavar="N", min=1, max=256, help="Hosts at a time after the canary.")
    ] = 1,
    max_fail_percent: Annotated[
        float,
        typer.Option(
            "--max-fail-percent", metavar="PERCENT", min=0, max=100, help="Stop when more hosts than this fail."
        ),
    ] = 0.0,
    reap: ReapOpt = False,
    json_output: JsonOpt = False,
) -> None:
    """Deploy a build (with patches) to hosts: push, preflight, switch, prove generation, or roll back."""
    from specops.deploy.connections import connect_all
    from specops.deploy.engine_plan import make_engine_plan
    from specops.deploy.engine_run import EngineRun
    from specops.deploy.execute import deploy_host
    from specops.deploy.fleet import FleetOptions, fleet_exit_code, run_fleet
    from specops.deploy.fleet_members import MemberFleet
    from specops.deploy.members import Member, engines_in, make_member_plan
    from specops.deploy.notify_events import send_deploy_events
    from specops.deploy.plan import DeployOptions, make_plan

    app_state = state(ctx)
    as_json = app_state.wants_json(json_output)
    skip_checks = check_ids(skip_check)  # a misspelt id is the first error: nothing is read or connected yet
    config = app_state.load_config()
    engines = engines_in(config, names)
    engine = engines[0] if names == engines[:1] else None  # one engine alone: its ranks' rows, as before
    members: list[Member] | None = None  # engines with hosts: each engine one member (deploy/members.py)
    with tempfile.TemporaryDirectory(prefix="specops-stage-") as workdir:
        if engine is not None:
            plan = make_engine_plan(config, engine, profile, build, patch, Path(workdir), ssh_hostname)
        elif engines:
            plan, members = make_member_plan(config, names, profile, build, patch, Path(workdir), ssh_hostname)
        else:
            plan = make_plan(config, names, profile, build, patch, Path(workdir))
        command = shlex.join(["specops", *sys.argv[1:]])
        cancel = threading.Event()
        ranks = EngineRun.of(engine, [h.target for h in plan.hosts], cancel) if engine is not None else None
        options = DeployOptions(force=force, no_rollback=no_rollback, lock_wait_s=lock_wait, command=command,
                                cancel=cancel, reap=reap, skip_checks=skip_checks, engine=ranks)  # fmt: skip
        if dry_run:
            from specops.cli.dry_run import show_plan

            show_plan(plan, app_state.opener, options, as_json)
            return
        if plan.build is not None and plan.build.note and not as_json:
            typer.echo(f"note: {plan.build.note}", err=True)
        for line in _marked_bad(plan):
            typer.echo(f"warning: {line}", err=True)
        fleet = FleetOptions(canary=canary, parallel=parallel, max_fail_percent=max_fail_percent)
        if ranks is not None:  # every rank at once: they meet at the engine's points (deploy/engine_run.py)
            fleet = FleetOptions(parallel=len(plan.hosts), max_fail_percent=100.0)
        specs = [host_plan.target.host for host_plan in plan.hosts]
        asks_password = app_state.become_password is not None
        early = app_state.head_start.claim_connections(specs, asks_password, plan.staged.total_bytes, config)
        with (
            _summary_when_interrupted(len(plan.hosts) > 1 and not as_json),  # printed once the live view is gone
            deploy_reporter(as_json, app_state.verbose) as reporter,
            connect_all(specs, app_state.opener, early) as opened,
        ):

            def run_host(host_plan: HostPlan, engine_run: EngineRun | None = ranks) -> HostOutcome:
                spec = host_plan.target.host
                profile_for = profile_resolver(config, spec.name, profile)
                open_host = opened.opener(spec, app_state.opener(spec))
                return deploy_host(plan, host_plan, replace(options, engine=engine_run), reporter, open_host,
                                   profile_for)  # fmt: skip

            if members is None:
                results, rows = run_fleet(plan.hosts, run_host, fleet, cancel, opened.not_connected), None
            else:
                member_fleet = MemberFleet(members, run_host, cancel)
                results = member_fleet.run(fleet, opened.not_connected)
                rows = member_fleet.members
    _report(results, as_json, rows, member_fleet.engines() if members is not None else {})
    send_deploy_events(results, {host_plan.name: host_plan.target.profile.name for host_plan in plan.hosts})
    raise typer.Exit(int(fleet_exit_code(results)))


def ssh_hostname(spec: HostSpec) -> str:
    """A host's ssh HostName (~/.ssh/config applied): rank 0's address when its engine sets no dist_addr."""
    from specops.host.ssh.resolve import resolve_ssh_target

    return resolve_ssh_target(spec.ssh, jump=spec.jump).hostname


def _marked_bad(plan: DeployPlan) -> list[str]:
    """The deploy's build, as this machine's audit log knows it marked bad on any host of the deploy."""
    import os

    from specops.build.stage import build_id
    from specops.cli.complete_releases import bad_builds

    builds = {build_id(plan.staged.tree_hash, host_plan.target.profile.name) for host_plan in plan.hosts}
    return bad_builds([host_plan.name for host_plan in plan.hosts], builds, os.environ)


def check_ids(values: list[str] | None) -> tuple[str, ...]:
    """The `--skip-check` ids (repeatable, comma-separated), each a known check: a typo would waive nothing."""
    from specops.config.waivers import CHECK_IDS, LIST_HINT, unknown_check_message
    from specops.deploy.engine_commands import DIST_CHECKS
    from specops.errors import UsageError

    ids = [word.strip() for value in values or () for word in value.split(",")]
    if values and not any(ids):
        raise UsageError("--skip-check names no check", hint=LIST_HINT)
    for check_id in ids:
        if check_id and check_id not in (*CHECK_IDS, *DIST_CHECKS):  # an engine's deploy runs its dist port test
            raise UsageError(f"--skip-check: {unknown_check_message(check_id)}",
                             hint=f"known checks: {', '.join((*CHECK_IDS, *DIST_CHECKS))}; {LIST_HINT}")  # fmt: skip
    return tuple(dict.fromkeys(check_id for check_id in ids if check_id))


def profile_resolver(config: Config, host: str, default: str | None) -> Callable[[str | None], Profile]:
    """The profile a release ran with (from its manifest), with this host's overrides; else the deploy's."""

    def profile_for(name: str | None) -> Profile:
        if name and name in config.profiles:
            return config.resolve(host, name).profile
        return config.resolve(host, default).profile

    return profile_for


@contextmanager
def deploy_reporter(as_json: bool, verbose: int) -> Iterator[Reporter]:
    """The live view is stopped when the block ends, however it ends (Ctrl-C, errors), so the summary or the
    error message prints on a clean terminal, not into the spinner rows."""
    if as_json:
        from specops.events import NullReporter

        yield NullReporter()
        return
    from specops.cli.deploy_view import LiveReporter

    with LiveReporter(verbose) as reporter:
        yield reporter


@contextmanager
def _summary_when_interrupted(fleet: bool) -> Iterator[None]:
    """A fleet deploy interrupted (SIGINT, SIGTERM, SIGHUP) prints its summary first: each host's outcome so far
    and what serves or what its guard will do; then the interruption ends the command with its own exit code."""
    try:
        yield
    except KeyboardInterrupt as interruption:
        from specops.deploy.fleet import FLEET_OUTCOMES
        from specops.ops.interrupts import shielded

        so_far = getattr(interruption, FLEET_OUTCOMES, None)
        if fleet and isinstance(so_far, dict):
            with shielded(), suppress(OSError, ValueError):  # after SIGHUP the terminal may be gone
                _report(so_far, as_json=False)
        raise


def _report(results: dict[str, HostOutcome], as_json: bool, rows: dict[str, HostOutcome] | None = None,
            engines: dict[str, list[str]] | None = None) -> None:  # fmt: skip
    """`rows`: the summary's rows when they are not the hosts' (an engine deployed as one member of a group);
    `engines`: each such engine's ranks' hosts, rank 0 first."""
    from specops.cli.deploy_view import print_summary

    if as_json:
        document: dict[str, object] = {"hosts": {name: outcome.to_json() for name, outcome in results.items()}}
        if engines and rows is not None:
            document["engines"] = {name: {**rows[name].to_json(), "ranks": hosts} for name, hosts in engines.items()}
        print_json(document)
    else:
        print_summary(results, rows)
