"""`specops doctor`: verdicts and fixes for what stops SGLang from serving, one round trip per host."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from specops.cli.options import AllOpt, JsonOpt
from specops.cli.output import print_json
from specops.cli.state import AppState, state
from specops.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from specops.config.loader import Config
    from specops.diagnose.compare import Comparison
    from specops.doctor.model import CheckSpec
    from specops.doctor.runner import DoctorTarget, HostReport


def doctor(
    ctx: typer.Context,
    names: Annotated[
        list[str] | None, typer.Argument(metavar="HOST|GROUP|ENGINE", help="Hosts, groups or engines to examine.")
    ] = None,
    all_hosts: AllOpt = False,
    local: Annotated[bool, typer.Option("--local", help="This machine, with this Python (no config needed).")] = False,
    profile: Annotated[
        str | None, typer.Option("--profile", "-p", metavar="NAME", help="Check for this profile.")
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Warnings fail too (exit 1).")] = False,
    deep: Annotated[bool, typer.Option("--deep", help="Also import torch/torchcodec for real.")] = False,
    only: Annotated[
        str | None, typer.Option("--only", metavar="ID[,ID]", help="Comma-separated check ids or prefixes.")
    ] = None,
    list_checks: Annotated[bool, typer.Option("--list", help="List the checks and exit.")] = False,
    since_verified: Annotated[
        bool, typer.Option("--since-verified", help="Also show what drifted since the last verified deploy.")
    ] = False,
    json_output: JsonOpt = False,
) -> None:
    """Check hosts before a deploy: native libraries, CUDA, the SGLang build, the models, the system."""
    app_state = state(ctx)
    as_json = app_state.wants_json(json_output)
    if list_checks:
        from specops.cli.doctor_view import print_check_list
        from specops.doctor.engine_checks import ENGINE_CHECK_DESCRIPTIONS
        from specops.doctor.registry import all_checks

        print_check_list(all_checks(), as_json, ENGINE_CHECK_DESCRIPTIONS)
        return
    if since_verified and local:
        raise UsageError("--since-verified compares a host with its releases; it does not go with --local")
    chosen, engine_only = _chosen_checks(only)
    targets = [_local_target(app_state.load_config() if profile else None, profile)] if local else []
    engines: list[str] = []
    if not local:
        engines, names = _engine_names(app_state, names or [])
        targets = _inventory_targets(app_state, names, all_hosts, profile, engines)
    engine_reports: dict[str, HostReport] = {}
    if engines:
        from specops.cli.doctor_engine import examine_engines

        config = app_state.load_config()
        reports, engine_reports = examine_engines(
            app_state, config, engines, targets, profile, (chosen, engine_only, deep)
        )
        targets += [t for name in engines for t in _rank_targets(app_state, config, name, profile, targets)]
    else:
        reports = _examine(app_state, targets, chosen, deep, as_json)
    drift = _drift_since_verified(app_state, targets, reports) if since_verified else {}
    if as_json:
        document: dict[str, object] = {"hosts": {name: _report_json(r, drift.get(name)) for name, r in reports.items()}}
        if engine_reports:
            document["engines"] = {name: _engine_json(report) for name, report in engine_reports.items()}
        print_json(document)
    else:
        from specops.cli.doctor_view import print_reports

        shown = {**reports, **{f"{name} (engine)": report for name, report in engine_reports.items()}}
        print_reports(shown, verbose=app_state.verbose)
        _print_drift(drift)
    raise typer.Exit(int(_exit_code({**reports, **engine_reports}, strict)))


def _engine_json(report: HostReport) -> dict[str, object]:
    return {"checks": [result.to_json() for result in report.results], "seconds": round(report.seconds, 3)}


def _chosen_checks(only: str | None) -> tuple[list[CheckSpec] | None, set[str] | None]:
    """The host checks and the engine checks `--only` names, checked before the config is read (a misspelt id
    is the first error, as it always was); None for all of them (the host checks are loaded later, while the
    hosts answer). `engine` names every engine check."""
    if only is None:
        return None, None
    from specops.doctor.registry import select

    wanted = [name.strip() for name in only.split(",")]
    engine = {name for name in wanted if name == "engine" or name.startswith("engine.")}
    if engine:
        from specops.doctor.engine_checks import ENGINE_CHECK_IDS

        unknown = sorted(engine - {"engine", *ENGINE_CHECK_IDS})
        if unknown:
            raise UsageError(f"unknown check(s): {', '.join(unknown)}", hint="`specops doctor --list` lists the checks")
    rest = [name for name in wanted if name not in engine]
    return (select(rest) if rest or not engine else []), engine


def _examine(
    app_state: AppState, targets: list[DoctorTarget], chosen: list[CheckSpec] | None, deep: bool, as_json: bool
) -> dict[str, HostReport]:
    """Connect first (or take the connections the console script started), load the rest while the hosts run
    the probe: Python's imports then cost the operator nothing they would not wait for anyway (the probe takes
    longer on the host than they do here)."""
    from specops.doctor.runner import Examination

    early = app_state.head_start.claim_examination(targets, deep)
    with early or Examination(targets, deep) as examination:
        examination.wait_connected()
        from specops.doctor.registry import select

        checks = chosen if chosen is not None else select(None)
        if not as_json:
            from specops.cli.doctor_view import load_renderer

            load_renderer()
        return examination.reports(checks)


def _drift_since_verified(
    app_state: AppState, targets: list[DoctorTarget], reports: dict[str, HostReport]
) -> dict[str, Comparison]:
    """Each reachable host now against its newest verified release's recorded fingerprint and files."""
    from specops.cli.cmd_diff import host_material
    from specops.diagnose.compare import compare_release

    found = {}
    for target in targets:
        if target.spec is not None and not reports[target.name].unreachable:
            material = host_material(app_state, target.spec, "last-verified")
            found[target.name] = compare_release(material, material.reference or "last-verified")
    return found


def _print_drift(drift: dict[str, Comparison]) -> None:
    from specops.cli.cmd_diff import print_comparison

    for name, comparison in drift.items():
        typer.echo(f"\n{name}: since the last verified release")
        print_comparison(comparison)


def _engine_names(app_state: AppState, names: list[str]) -> tuple[list[str], list[str]]:
    """(engines, other names): an engine's ranks are examined together, with the engine's checks."""
    if not names:
        return [], names
    from specops.cli.doctor_engine import split_names

    return split_names(app_state.load_config(), names)


def _rank_targets(
    app_state: AppState, config: Config, name: str, profile: str | None, known: list[DoctorTarget]
) -> list[DoctorTarget]:
    """The engine's ranks not already among `known` (for --since-verified)."""
    from specops.cli.doctor_engine import doctor_targets, engine_targets

    seen = {target.name for target in known}
    return [t for t in doctor_targets(app_state, engine_targets(config, name, profile)) if t.name not in seen]


def _inventory_targets(
    app_state: AppState, names: list[str], all_hosts: bool, profile: str | None, engines: list[str] | None = None
) -> list[DoctorTarget]:
    from specops.doctor.runner import inventory_targets

    config = app_state.load_config()
    if engines:  # the hosts named besides the engines (or every host with --all)
        return inventory_targets(config, names, all_hosts, profile, app_state.opener) if names or all_hosts else []
    if not names and not all_hosts:  # the only host, or a usage error that lists the choices
        names = [config.default_host("name hosts or groups, or pass --all for every host", groups=True)]
    return inventory_targets(config, names, all_hosts, profile, app_state.opener)


def _local_target(config: Config | None, profile: str | None) -> DoctorTarget:
    from specops.doctor.runner import DoctorTarget
    from specops.host.local import LocalHost

    chosen = None
    if profile is not None:
        if config is None or profile not in config.profiles:
            raise UsageError(f"unknown profile {profile!r}")
        chosen = config.profiles[profile].profile
    return DoctorTarget(
        name="local", spec=None, profile=chosen, open_host=LocalHost, python=sys.executable, gpu_host=False
    )


def _report_json(report: HostReport, drift: Comparison | None) -> dict[str, object]:
    return {
        "since_verified": drift.to_json() if drift is not None else None,
        "checks": [result.to_json() for result in report.results],
        "facts": report.facts.model_dump(mode="json") if report.facts else None,
        "deep": report.deep.model_dump(mode="json") if report.deep else None,
        "unreachable": report.unreachable,
        "seconds": round(report.seconds, 3),
    }


def _exit_code(reports: dict[str, HostReport], strict: bool) -> ExitCode:
    from specops.doctor.model import Status

    if any(report.unreachable for report in reports.values()):
        return ExitCode.UNREACHABLE
    bad = (Status.FAIL, Status.ERROR, Status.WARN) if strict else (Status.FAIL, Status.ERROR)
    if any(report.count(*bad) for report in reports.values()):
        return ExitCode.CHECKS_FAILED
    return ExitCode.OK
