"""`specops smoke HOST`: run the smoke gate against the service that is running now, and show every gate.

The same gate the deploy runs before it calls a release verified (specops.engine.smoke, docs/smoke.md), on demand:
after a driver update, when users complain, or to see the figures. Exit 0 pass, 1 a gate failed, 4 the host
is unreachable over SSH. The engine's port is reached through the SSH connection; it need not be open.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from specops.cli.output import print_json, stdout_console
from specops.cli.state import state
from specops.errors import ExitCode

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.engine.smoke import SmokeResult
    from specops.host.base import Host

_FIGURES = (
    ("tokens_per_s", "tokens/s"),
    ("accept_length", "accept length"),
    ("completion_tokens", "tokens"),
    ("e2e_latency", "latency (s)"),
    ("speculative_algorithm", "algorithm"),
    ("server_version", "SGLang"),
    ("draft_model_path", "draft"),
    ("text_head", "text"),
)


def smoke(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The host whose running service to test.")],
    profile: Annotated[str | None, typer.Option("--profile", "-p", help="Judge with this profile's gates.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Generate with the profile's prompt and check tokens/s, accept length and the text against the gates."""
    from specops.engine.client import EngineClient
    from specops.engine.readiness import unit_problems
    from specops.engine.smoke import run_smoke, with_cause
    from specops.host.ssh import connect

    app_state = state(ctx)
    target = app_state.load_config().resolve(name, profile)
    spec = target.host
    with connect(spec) as host, EngineClient(host, spec) as client:
        baseline = _recorded_figures(host, spec)
        result = run_smoke(client, target.profile, spec, baseline)
        if not result.passed:  # only then is the journal worth a round trip: it names the cause
            result = with_cause(result, unit_problems(host, spec))
    if app_state.json or json_output:
        print_json({"host": name, "profile": target.profile.name, **result.to_json()})
    else:
        _print_result(name, target.profile.name, result)
    raise typer.Exit(int(ExitCode.OK if result.passed else ExitCode.CHECKS_FAILED))


def _recorded_figures(host: Host, spec: HostSpec) -> dict[str, Any] | None:
    """The figures the deploy recorded for the current release (manifest gates.smoke.figures), if any."""
    result = host.run(["cat", "--", f"{spec.current_dir}/manifest.json"], timeout=30, check=False)  # no release
    if not result.ok:
        return None
    try:
        manifest = json.loads(result.stdout)
        figures = manifest["gates"]["smoke"]["figures"]
    except (ValueError, KeyError, TypeError):
        return None
    return figures if isinstance(figures, dict) else None


def _print_result(name: str, profile: str, result: SmokeResult) -> None:
    from rich.markup import escape
    from rich.table import Table

    console = stdout_console()
    table = Table(title=f"smoke: {name} ({profile})", title_justify="left")
    for column in ("gate", "result", "observed", "expected", "detail"):
        table.add_column(column, overflow="fold")
    for gate in result.gates:
        mark = "[green]pass[/]" if gate.ok else "[red]FAIL[/]"
        if gate.ok and gate.detail == "skipped":
            mark = "[dim]skip[/]"
        table.add_row(gate.id, mark, escape(gate.observed), escape(gate.expected), escape(gate.detail))
    console.print(table)
    for key, label in _FIGURES:
        value = result.figures.get(key)
        if value is not None:
            console.print(f"  {label + ':':<15} {escape(repr(value) if key == 'text_head' else str(value))}")
    verdict = "[bold green]smoke passed[/]" if result.passed else "[bold red]smoke FAILED[/]"
    console.print(verdict)
    if result.cause is not None:
        console.print(f"[red]cause:[/] {escape(result.cause.summary)}")
        console.print(f"  [dim]journal:[/] {escape(result.cause.line.strip()[:200])}")
        if result.cause.signature.hint:
            console.print(f"[cyan]fix:[/] {escape(result.cause.signature.hint)}")
