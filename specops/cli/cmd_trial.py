"""`specops trial HOST`: run a candidate build beside the serving engine and compare it with production.

Exit 0: the candidate passed its smoke and agrees with production; 1: it failed (the report says why), or the
trial was refused before anything started (GPUs, port or memory taken); 2: a bad option; 4: unreachable.
docs/trial.md tells the whole story.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from specops.cli.options import HostArg, JsonOpt
from specops.cli.output import print_json
from specops.cli.state import state
from specops.errors import ExitCode

if TYPE_CHECKING:
    from specops.deploy.trial import TrialReport


def trial(
    ctx: typer.Context,
    name: HostArg,
    build: Annotated[
        Path, typer.Option("--build", metavar="PATH", help="sglang python/ folder, a folder holding sglang, or a .whl.")
    ],
    gpus: Annotated[str, typer.Option("--gpus", metavar="LIST", help="GPUs for the candidate, e.g. 1 or 2,3.")],
    port: Annotated[int, typer.Option("--port", metavar="N", min=1, max=65535, help="The candidate's HTTP port.")],
    profile: Annotated[
        str, typer.Option("--profile", "-p", metavar="NAME", help="The candidate's profile (e.g. ddtree).")
    ],
    patch: Annotated[
        list[Path] | None, typer.Option("--patch", metavar="PATH", help="A patch to apply (repeatable).")
    ] = None,
    duration: Annotated[
        str, typer.Option("--duration", metavar="DURATION", help="The host stops the trial after this (30m, 2h).")
    ] = "30m",
    prompts: Annotated[
        Path | None, typer.Option("--prompts", metavar="FILE", help="Prompts to compare on, one per line.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Run even when preflight checks fail.")] = False,
    min_speedup: Annotated[
        float | None,
        typer.Option("--min-speedup", metavar="X", min=0.01, max=100, help="Fail below X times production's tok/s."),
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """Try a build beside production on spare GPUs: smoke it, compare it with production, then remove it."""
    from specops.build.server_flags import speculative_flags
    from specops.build.stage import stage_build
    from specops.deploy.notify_events import send_trial_event
    from specops.deploy.plan import plan_host
    from specops.deploy.trial import run_trial
    from specops.deploy.trial_plan import TrialOptions, parse_duration, parse_gpus, read_prompts

    app_state = state(ctx)
    as_json = app_state.wants_json(json_output)
    options = TrialOptions(gpus=parse_gpus(gpus), port=port, duration_s=parse_duration(duration),
                           prompts=read_prompts(prompts) if prompts is not None else (), force=force,
                           min_speedup=min_speedup)  # fmt: skip
    config = app_state.load_config()
    config.host(name)  # an unknown host is a usage error naming the known ones
    production = config.resolve(name, None)
    config.resolve(name, profile)  # a profile mistake before the build is staged
    with tempfile.TemporaryDirectory(prefix="specops-stage-") as workdir:
        staged = stage_build(build, list(patch or []), Path(workdir))
        host_plan = plan_host(config, name, profile, speculative_flags(staged.root))
        say = (lambda _line: None) if as_json else (lambda line: typer.echo(f"{name}: {line}", err=True))
        with app_state.connect(host_plan.target.host) as host:
            report = run_trial(host, staged, host_plan, production, options, say)
    send_trial_event(report)
    if as_json:
        print_json(report.to_json())
    else:
        _print(report)
    raise typer.Exit(int(ExitCode.OK if report.ok else ExitCode.CHECKS_FAILED))


FIGURES = (("tokens_per_s", "tokens/s", 1.0, ""), ("accept_length", "accept length", 1.0, ""),
           ("ttft_s", "TTFT", 1000.0, " ms"))  # fmt: skip


def _figure(value: float | None, scale: float, unit: str) -> str:
    return "n/a" if value is None else f"{value * scale:.1f}{unit}" if scale != 1.0 or value >= 10 else f"{value:.2f}"


def _print(report: TrialReport) -> None:
    """The report: the smoke, agreement per prompt, the ratios against production, then the verdict."""
    head = (
        f"{report.host}: trial of {report.release} ({report.profile}) beside production ({report.production_profile})"
    )
    typer.echo(head)
    if report.smoke is not None:
        typer.echo(f"  smoke: {report.smoke.reason}")
    comparison = report.comparison
    if comparison is not None:
        typer.echo(f"  agreement with production: {comparison.agreement:.0%} of greedy tokens")
        for number, row in enumerate(comparison.prompts, 1):
            typer.echo(f"    prompt {number}: {row.agreed}/{row.total} tokens agree ({row.ratio:.0%})"
                       f"{'; ' + row.degenerate if row.degenerate else ''}")  # fmt: skip
        for figure, label, scale, unit in FIGURES:
            ratio = comparison.ratio(figure)
            shown = "n/a" if ratio is None else f"{ratio:.2f}x"
            now, before = (
                _figure(values.get(figure), scale, unit) for values in (comparison.candidate, comparison.production)
            )
            typer.echo(f"  {label}: {now} vs {before} (production): {shown}")
    verdict = "AGREES with production" if report.ok else "FAILED: " + "; ".join(report.causes)
    typer.echo(f"  {verdict}")
    if report.unit:
        typer.echo(f"  trial unit {report.unit}: {'stopped and removed' if report.removed else 'NOT removed'}")
    typer.echo(f"  {report.production_line}")
