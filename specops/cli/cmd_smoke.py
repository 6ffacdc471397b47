"""`specops smoke HOST`: run the smoke gate against the service that is running now, and show every gate.

The same gate the deploy runs before it calls a release verified (specops.engine.smoke, docs/smoke.md), on demand:
after a driver update, when users complain, or to see the figures. Exit 0 pass, 1 a gate failed, 4 the host
is unreachable over SSH. The engine's port is reached through the SSH connection; it need not be open.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Annotated, Any

import typer

from specops.cli.fleet_view import ask_fleet, finish, one_host
from specops.cli.options import AllOpt, JsonOpt, TargetsArg
from specops.cli.output import print_json, stdout_console
from specops.cli.state import state
from specops.errors import ExitCode

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.loader import Config, Target
    from specops.engine.smoke import SmokeResult
    from specops.host.base import Host

_FIGURES = (
    ("tokens_per_s", "tokens/s"),
    ("accept_length", "accept length"),
    ("completion_tokens", "tokens"),
    ("e2e_latency", "latency (s)"),
    ("sampled_requests", "sampled"),
    ("ttft_p50_s", "TTFT p50"),
    ("ttft_p99_s", "TTFT p99"),
    ("sampled_tokens_per_s", "sampled tok/s"),
    ("speedup_vs_baseline", "speed-up"),
    ("speculative_algorithm", "algorithm"),
    ("server_version", "SGLang"),
    ("draft_model_path", "draft"),
    ("text_head", "text"),
)


def smoke(
    ctx: typer.Context,
    names: TargetsArg = None,
    all_hosts: AllOpt = False,
    profile: Annotated[
        str | None, typer.Option("--profile", "-p", metavar="NAME", help="Judge with this profile's gates.")
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """Generate with the profile's prompt and check tokens/s, accept length and the text against the gates.

    One host: every gate. A group, several hosts or --all: a row per host, smoked in parallel. A multi-node
    engine: through rank 0, the rank that serves HTTP (in a group or under --all: one row, named after it)."""
    from specops.ops.smoke_check import smoke_running

    app_state = state(ctx)
    as_json = app_state.wants_json(json_output)
    config = app_state.load_config()
    single = _single_target(config, names or [], all_hosts, profile)
    if single is not None:
        target, shown, engine = single
        with app_state.connect(target.host) as host:
            result = smoke_running(host, target.host, target.profile)
        if as_json:
            print_json({"host": target.host.name, "engine": engine, "profile": target.profile.name,
                        **result.to_json()})  # fmt: skip
        else:
            _print_result(shown, target.profile.name, result)
        raise typer.Exit(int(ExitCode.OK if result.passed else ExitCode.CHECKS_FAILED))

    rows = fleet_targets(config, names or [], all_hosts, profile)

    def ask(host: Host, spec: HostSpec) -> tuple[HostSmoke, ExitCode]:
        chosen = rows[spec.name][1].profile
        result = smoke_running(host, spec, chosen)
        return HostSmoke(chosen.name, result), ExitCode.OK if result.passed else ExitCode.CHECKS_FAILED

    readings = ask_fleet(app_state, [target.host for _, target in rows.values()], ask)
    named = {rows[host][0]: replace(reading, host=rows[host][0]) for host, reading in readings.items()}
    finish(named, as_json, HostSmoke.to_json, ("PROFILE", "RESULT", "TOK/S", "ACCEPT", "TTFT P50", "FAILED GATES"),
           HostSmoke.row, HostSmoke.notes)  # fmt: skip


def _single_target(config: Config, names: list[str], all_hosts: bool, profile: str | None
                   ) -> tuple[Target, str, str | None] | None:  # fmt: skip
    """(target, its name on screen, its engine) when one host or one engine was named; None for a fleet. A host
    that is a rank of a multi-node engine stands for its engine, smoked through rank 0 (a worker has no HTTP)."""
    host = one_host(config, names, all_hosts)
    engine = names[0] if len(names) == 1 and names[0] in config.inventory.engines else None
    if host is not None and (engine := config.inventory.engine_of(host)) is None:
        return config.resolve(host, profile), host, None
    if engine is None:
        return None
    target = _engine_rank0(config, engine, profile)
    shown = f"{engine} (rank 0: {target.host.name})"
    return target, shown + (f"; {host} is one of its ranks" if host not in (None, target.host.name) else ""), engine


def fleet_targets(
    config: Config, names: list[str], all_hosts: bool, profile: str | None
) -> dict[str, tuple[str, Target]]:
    """Each host to smoke -> (its row's name, its target): a plain host as itself; a multi-node engine (named, in a
    group, under --all, or one of its hosts named) through its rank 0 with the engine's profile, its row named
    after the engine; the workers, which serve no HTTP, are not smoked."""
    from specops.cli.engine_rows import select_with_engines

    selection = select_with_engines(config, names, all_hosts)
    engines = dict.fromkeys(selection.engines)
    for spec in selection.specs:  # a rank named by its host (or a group listing it): its engine, smoked once
        if (engine := config.inventory.engine_of(spec.name)) is not None:
            engines.setdefault(engine)
    ranks = {host for engine in engines for host in config.inventory.engines[engine].hosts}
    rows = {spec.name: (spec.name, config.resolve(spec.name, profile)) for spec in selection.specs
            if spec.name not in ranks}  # fmt: skip
    for engine in engines:
        first = _engine_rank0(config, engine, profile)
        rows[first.host.name] = (engine, first)
    return rows


def _engine_rank0(config: Config, engine: str, profile: str | None) -> Target:
    """A multi-node engine is smoked through rank 0, the only rank that serves HTTP, with the engine's profile."""
    from specops.cli.doctor_engine import engine_targets

    return engine_targets(config, engine, profile)[0]


@dataclass(frozen=True)
class HostSmoke:
    profile: str
    result: SmokeResult

    def to_json(self) -> dict[str, Any]:
        return {"profile": self.profile, **self.result.to_json()}

    def row(self) -> list[str]:
        figures = self.result.figures
        failed = [gate.id for gate in self.result.gates if not gate.ok]
        return [self.profile, "pass" if self.result.passed else "FAIL", _figure(figures.get("tokens_per_s")),
                _figure(figures.get("accept_length")), _ms(figures.get("ttft_p50_s")),
                ", ".join(failed) or "-"]  # fmt: skip

    def notes(self) -> list[str]:
        return [f"cause: {self.result.cause.summary}"] if self.result.cause is not None else []


def _ms(value: object) -> str:
    return f"{value * 1000:.0f} ms" if isinstance(value, int | float) else "-"


def _figure(value: object) -> str:
    return f"{value:.1f}" if isinstance(value, float) else ("-" if value is None else str(value))


def _print_result(name: str, profile: str, result: SmokeResult) -> None:
    from rich.markup import escape
    from rich.table import Table

    console = stdout_console()
    table = Table(title=f"smoke: {name} ({profile})", title_justify="left")
    for column in ("gate", "result", "observed", "expected", "detail"):
        table.add_column(column, overflow="fold")
    for gate in result.gates:
        mark = "[green]pass[/]" if gate.ok else "[red]FAIL[/]"
        if gate.ok and gate.detail.startswith("skipped"):
            mark = "[dim]skip[/]"
        elif gate.ok and gate.warn:
            mark = "[yellow]warn[/]"
        table.add_row(gate.id, mark, escape(gate.observed), escape(gate.expected), escape(gate.detail))
    console.print(table)
    for key, label in _FIGURES:
        value = result.figures.get(key)
        if value is not None:
            console.print(f"  {label + ':':<15} {escape(_shown(key, value, result))}")
    verdict = "[bold green]smoke passed[/]" if result.passed else "[bold red]smoke FAILED[/]"
    console.print(verdict)
    if result.cause is not None:
        console.print(f"[red]cause:[/] {escape(result.cause.summary)}")
        console.print(f"  [dim]journal:[/] {escape(result.cause.line.strip()[:200])}")
        if result.cause.signature.hint:
            console.print(f"[cyan]fix:[/] {escape(result.cause.signature.hint)}")


def _shown(key: str, value: object, result: SmokeResult) -> str:
    """A figure as the table shows it: TTFT in ms, the sampling settings next to the request count."""
    if key == "text_head":
        return repr(value)
    if key.startswith("ttft_") and isinstance(value, int | float):
        return f"{value * 1000:.0f} ms"
    if key == "sampled_requests":
        settings = (
            f"temperature {result.figures.get('sampled_temperature')}, top_p {result.figures.get('sampled_top_p')}"
        )
        return f"{value} concurrent at {settings}"
    if key == "speedup_vs_baseline" and isinstance(value, int | float):
        return f"{value:.2f}x release {result.figures.get('baseline_release')}"
    return str(value)
