"""`specops deploy` and `specops rollback`: health-gated releases with automatic rollback."""

from __future__ import annotations

import shlex
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from specops.cli.output import print_json
from specops.cli.state import state
from specops.host import ssh_opener

if TYPE_CHECKING:
    from specops.config.loader import Config
    from specops.config.profile import Profile
    from specops.deploy.execute import HostOutcome
    from specops.deploy.plan import HostPlan
    from specops.events import Reporter


def deploy(
    ctx: typer.Context,
    names: Annotated[list[str], typer.Argument(help="Hosts or groups.")],
    build: Annotated[Path, typer.Option("--build", help="sglang python/ folder, a folder holding sglang, or a .whl")],
    patch: Annotated[list[Path] | None, typer.Option("--patch", help="A patch to apply (repeatable).")] = None,
    profile: Annotated[str | None, typer.Option("--profile", "-p", help="Profile (default: each host's).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Deploy even when preflight checks fail (audited).")] = False,
    no_rollback: Annotated[bool, typer.Option("--no-rollback", help="Leave a failed release running.")] = False,
    lock_wait: Annotated[float, typer.Option("--lock-wait", help="Seconds to wait for a held lock.")] = 0.0,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan; change nothing.")] = False,
    canary: Annotated[int, typer.Option("--canary", help="Deploy this many hosts first, one by one.")] = 0,
    parallel: Annotated[int, typer.Option("--parallel", help="Hosts at a time after the canary.")] = 1,
    max_fail_percent: Annotated[float, typer.Option("--max-fail-percent", help="Stop above this.")] = 0.0,
    json_output: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Deploy a build (with patches) to hosts: push, preflight, switch, prove generation, or roll back."""
    from specops.deploy.execute import deploy_host
    from specops.deploy.fleet import FleetOptions, fleet_exit_code, run_fleet
    from specops.deploy.plan import DeployOptions, make_plan

    app_state = state(ctx)
    as_json = app_state.json or json_output
    config = app_state.load_config()
    with tempfile.TemporaryDirectory(prefix="specops-stage-") as workdir:
        plan = make_plan(config, names, profile, build, list(patch or []), Path(workdir))
        command = shlex.join(["specops", *sys.argv[1:]])
        cancel = threading.Event()
        options = DeployOptions(force=force, no_rollback=no_rollback, lock_wait_s=lock_wait, command=command,
                                cancel=cancel)  # fmt: skip
        if dry_run:
            from specops.cli.dry_run import show_plan

            show_plan(plan, ssh_opener, options, as_json)
            return
        fleet = FleetOptions(canary=canary, parallel=parallel, max_fail_percent=max_fail_percent)
        with _reporter(as_json, app_state.verbose) as reporter:

            def run_host(host_plan: HostPlan) -> HostOutcome:
                spec = host_plan.target.host
                profile_for = _profile_for(config, spec.name, profile)
                return deploy_host(plan, host_plan, options, reporter, ssh_opener(spec), profile_for)

            results = run_fleet(plan.hosts, run_host, fleet, cancel)
    _report(results, as_json)
    raise typer.Exit(int(fleet_exit_code(results)))


def rollback(
    ctx: typer.Context,
    host: Annotated[str, typer.Argument(help="Host name.")],
    to: Annotated[str | None, typer.Option("--to", help="Release id (default: the last verified one).")] = None,
    lock_wait: Annotated[float, typer.Option("--lock-wait", help="Seconds to wait for a held lock.")] = 0.0,
    json_output: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Put a verified release back, restart, and prove it with the readiness and smoke gates."""
    from specops.deploy.rollback import rollback_host
    from specops.errors import ExitCode
    from specops.ops import audit, lock

    app_state = state(ctx)
    as_json = app_state.json or json_output
    config = app_state.load_config()
    spec = config.host(host)
    holder = lock.LockHolder.current()
    with (
        _reporter(as_json, app_state.verbose) as reporter,
        ssh_opener(spec)() as connection,
        lock.acquire(connection, holder, wait_s=lock_wait),
    ):
        result = rollback_host(connection, spec, _profile_for(config, host, None), to, "specops rollback", reporter)
        gates = result.gates.to_json() if result.gates else {}
        outcome = "verified" if result.ok else "failed"
        entry = audit.new_entry(
            "rollback", outcome=outcome, from_release=result.from_release, to_release=result.to_release,
            gates=gates, message=result.summary,
        )  # fmt: skip
        audit.record(connection, spec, entry)
    if as_json:
        print_json(result.to_json())
    else:
        typer.echo(result.summary)
    raise typer.Exit(int(ExitCode.OK if result.ok else ExitCode.CHECKS_FAILED))


def _profile_for(config: Config, host: str, default: str | None) -> Callable[[str | None], Profile]:
    """The profile a release ran with (from its manifest), with this host's overrides; else the deploy's."""

    def profile_for(name: str | None) -> Profile:
        if name and name in config.profiles:
            return config.resolve(host, name).profile
        return config.resolve(host, default).profile

    return profile_for


@contextmanager
def _reporter(as_json: bool, verbose: int) -> Iterator[Reporter]:
    """The live view is stopped when the block ends, however it ends (Ctrl-C, errors), so the summary or the
    error message prints on a clean terminal, not into the spinner rows."""
    if as_json:
        from specops.events import NullReporter

        yield NullReporter()
        return
    from specops.cli.deploy_view import LiveReporter

    with LiveReporter(verbose) as reporter:
        yield reporter


def _report(results: dict[str, HostOutcome], as_json: bool) -> None:
    from specops.cli.deploy_view import print_summary

    if as_json:
        print_json({"hosts": {name: outcome.to_json() for name, outcome in results.items()}})
    else:
        print_summary(results)
