"""`specops diagnose HOST [--release ID]`: was it the code, the configuration or the host?

Parses and presents only: the reads are specops/ops/forensics.py, the verdict specops/diagnose/verdict.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from specops.cli.options import check_release_option
from specops.cli.output import print_json, stdout_console
from specops.cli.state import state
from specops.errors import ExitCode

if TYPE_CHECKING:
    from specops.cli.state import AppState
    from specops.config.loader import Config
    from specops.diagnose.verdict import Verdict

KIND_STYLE = {"environment drift": "magenta", "code change": "red", "configuration change": "yellow",
              "nothing changed": "cyan", "no failure": "green", "environment": "magenta"}  # fmt: skip


def diagnose(
    ctx: typer.Context,
    host: Annotated[str, typer.Argument(metavar="HOST|ENGINE", help="Host or multi-node engine name.")],
    release: Annotated[
        str | None,
        typer.Option("--release", metavar="ID", help="Judge this release (default: the one `current` names)."),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Compare the failing state with the last verified release: one verdict, its evidence, the next steps.

    A multi-node engine: each rank's verdict, then the engine's (the failed ranks, the likely cause first)."""
    from specops.diagnose.case import build_case
    from specops.diagnose.verdict import decide
    from specops.ops.forensics import collect

    app_state = state(ctx)
    config = app_state.load_config()
    check_release_option("--release", release)
    if host in config.inventory.engines:
        _diagnose_engine(app_state, config, host, release, app_state.json or json_output)
    spec = config.host(host)
    with app_state.connect(spec) as connection:
        material = collect(connection, spec, release)
    verdict = decide(build_case(material))
    if app_state.json or json_output:
        print_json(verdict.to_json())
    else:
        _print(verdict)
    raise typer.Exit(int(ExitCode.OK if verdict.kind == "no failure" else ExitCode.CHECKS_FAILED))


def _print(verdict: Verdict) -> None:
    from rich.markup import escape

    from specops.diagnose.verdict import serving_line

    console = stdout_console()
    case = verdict.case
    judged = f"release {case.subject}" if case.subject else "no release"
    against = f"last verified {case.reference}" if case.reference else "no verified release to compare with"
    console.print(f"[bold]{escape(case.host)}[/]  {judged}, compared with {against}")
    now = serving_line(case)
    if now:
        console.print(escape(now), soft_wrap=True)
    style = KIND_STYLE.get(verdict.kind, "bold")
    console.print(f"[bold {style}]verdict: {escape(verdict.headline)}[/]", soft_wrap=True)
    for line in verdict.evidence:
        console.print(f"  • {escape(line)}", soft_wrap=True)
    for line in verdict.cleared:
        console.print(f"  [green]✓ {escape(line)}[/]", soft_wrap=True)
    if case.files.changes and verdict.kind != "code change":
        shown = ", ".join(change.text for change in case.files.changes[:5])
        console.print(f"  files changed since {case.reference}: {escape(shown)}", soft_wrap=True)
    if verdict.next_steps:
        console.print("[bold]next:[/]")
        for number, step in enumerate(verdict.next_steps, start=1):
            console.print(f"  {number}. {escape(step)}", soft_wrap=True)
    others = [f"{c.kind} ({c.score})" for c in verdict.ranking[1:]]
    if others:
        console.print(f"[dim]also considered: {escape(', '.join(others))}[/]")


def _diagnose_engine(app_state: AppState, config: Config, name: str, release: str | None, as_json: bool) -> NoReturn:
    from rich.markup import escape

    from specops.cli.engine_diagnose import diagnose_ranks, engine_verdict

    verdicts = diagnose_ranks(app_state, config, name, release)
    verdict = engine_verdict(name, verdicts)
    if as_json:
        print_json({**verdict, "rank_verdicts": [found.to_json() for found in verdicts]})
    else:
        for rank, found in enumerate(verdicts):
            stdout_console().print(f"[dim]rank {rank}[/]")
            _print(found)
        style = KIND_STYLE.get(str(verdict["verdict"]), "bold")
        stdout_console().print(f"[bold {style}]engine {escape(name)}: {escape(str(verdict['headline']))}[/]",
                               soft_wrap=True)  # fmt: skip
    raise typer.Exit(int(ExitCode.OK if verdict["verdict"] == "no failure" else ExitCode.CHECKS_FAILED))
