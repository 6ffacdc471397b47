"""`specops deploy --dry-run`: the plan a deploy would execute on each host, printed; nothing is changed.

It connects to read the host's releases and installed unit (no lock, no writes), then prints the plan that
`specops deploy` itself makes and executes (specops/deploy/plan.py): each step with the host commands it runs,
both branches after the gates, and the unit diff. `--json` prints the same plan as a document.

All hosts are read in parallel (deploy/survey.py), so a silent host costs one connect timeout, not one per
host, and never hides the others: each host that cannot be read gets its own line, and the command then exits
with the most severe code of those hosts (4 when they were unreachable).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from specops.cli.output import print_json, print_raw, unprefixed
from specops.errors import ExitCode

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.deploy.plan import DeployOptions, DeployPlan
    from specops.deploy.steps import HostCommand, HostSteps, Step
    from specops.deploy.survey import Reading
    from specops.host.base import Host

Opener = Callable[["HostSpec"], Callable[[], AbstractContextManager["Host"]]]
BRANCH = {"gates-pass": " (if the gates pass)", "gates-fail": " (if the gates fail)"}


def show_plan(plan: DeployPlan, opener: Opener, options: DeployOptions, as_json: bool) -> None:
    """Print every host's plan (or why it has none); raise typer.Exit with the worst host's code if any failed."""
    from specops.deploy.survey import survey

    readings = survey([host_plan.target.host for host_plan in plan.hosts], opener, _previewer(plan, options))
    build = plan.build
    head = {"build": build.to_json() if build is not None else None}
    from specops.deploy.engine_plan import engine_lines

    lines = [*(build.lines() if build else []), *engine_lines(plan)]
    show_readings(readings, as_json, lambda steps: _json(steps, plan), head, lines)


def show_readings(readings: dict[str, Reading[HostSteps]], as_json: bool,
                  to_json: Callable[[HostSteps], dict[str, Any]], head: dict[str, Any] | None = None,
                  head_lines: list[str] | None = None) -> None:  # fmt: skip
    """Print the plans read (a deploy's or a restart's); raise typer.Exit with the worst host's code if any failed.
    `head`: what the JSON document holds beside the hosts (a deploy's build); `head_lines`: the same, as text."""
    from specops.deploy.survey import survey_exit_code

    if as_json:
        hosts = [_json_reading(reading, to_json) for reading in readings.values()]
        print_json({"dry_run": True, **(head or {}), "hosts": hosts})
    else:
        print_raw("".join(f"{line}\n" for line in head_lines or []))
        for reading in readings.values():
            print_raw("".join(_text(reading.value) if reading.value else _failed_lines(reading)))
        failed = sum(reading.value is None for reading in readings.values())
        tail = f" ({failed} of {len(readings)} hosts could not be read)" if failed else ""
        print_raw(f"dry run: nothing was changed{tail}\n")
    code = survey_exit_code(readings)
    if code != ExitCode.OK:
        import typer

        raise typer.Exit(int(code))


def _previewer(plan: DeployPlan, options: DeployOptions) -> Callable[[Host, HostSpec], tuple[HostSteps, ExitCode]]:
    from specops.deploy.host_state import preview

    by_name = {host_plan.target.host.name: host_plan for host_plan in plan.hosts}

    def read_host(host: Host, spec: HostSpec) -> tuple[HostSteps, ExitCode]:
        return preview(host, plan.staged, by_name[spec.name], options), ExitCode.OK

    return read_host


def _failed_lines(reading: Reading[HostSteps]) -> list[str]:
    what = "unreachable" if reading.unreachable else "cannot plan"
    lines = [f"{reading.host}: {what} (exit {int(reading.exit_code)}): {unprefixed(reading.host, reading.error)}\n"]
    return [*lines, f"  hint: {reading.hint}\n"] if reading.hint else lines


def _json_reading(reading: Reading[HostSteps], to_json: Callable[[HostSteps], dict[str, Any]]) -> dict[str, Any]:
    if reading.value is not None:
        return to_json(reading.value)
    failure = {"message": reading.error, "hint": reading.hint, "exit_code": int(reading.exit_code)}
    return {"host": reading.host, "action": "unreachable" if reading.unreachable else "error", "error": failure}


def _json(steps: HostSteps, plan: DeployPlan) -> dict[str, Any]:
    files = steps.push.send_files if steps.push else 0
    return {**steps.to_json(), "tree_hash": plan.staged.tree_hash, "files_to_send": files}


def _text(steps: HostSteps) -> list[str]:
    current = steps.current or "none"
    if steps.action == "unchanged":
        lines = [f"{steps.host}: unchanged: {steps.reason}\n"]
    elif steps.action in ("start", "restart"):
        lines = [f"{steps.host}: would {steps.action} {steps.release} (profile {steps.profile}): {steps.reason}\n",
                 "  if the gates fail: nothing serves; the release stays verified, not marked bad (the host is the "
                 "suspect)\n"]  # fmt: skip
    else:
        lines = [f"{steps.host}: would deploy {steps.release} (profile {steps.profile}), current {current}: "
                 f"{steps.reason}\n", *_config_lines(steps), f"  {_rollback_line(steps)}\n"]  # fmt: skip
    for number, step in enumerate(steps.steps, start=1):
        lines += _step_lines(number, step)
    if steps.action not in ("unchanged", "restart"):
        lines.append(steps.unit_diff or "  unit: unchanged\n")
    return lines


def _config_lines(steps: HostSteps) -> list[str]:
    """`configuration changed: env (KEYS), unit`, then each env key old -> new (secret values as ***)."""
    if not steps.config.changed:
        return []
    return [f"  {steps.config.summary()}\n", *(f"    env {line}\n" for line in steps.config.env)]


def _rollback_line(steps: HostSteps) -> str:
    if steps.guard:
        return f"if the gates fail: roll back to {steps.rollback_to} (the guard covers the host meanwhile)"
    if steps.rollback_to:
        return f"if the gates fail: leave the release running (--no-rollback; {steps.rollback_to} stays on the host)"
    return "if the gates fail: leave the release running (no verified release to roll back to: no guard)"


def _step_lines(number: int, step: Step) -> list[str]:
    lines = [f"  {number}. {step.name}{BRANCH.get(str(step.when), '')}: {step.summary}\n"]
    for command in step.commands:
        lines += _command_lines(command)
    return lines


def _command_lines(command: HostCommand) -> list[str]:
    lines = [f"       $ {command.shown}\n"]
    if command.kind == "put":
        lines.append(f"         writes {command.path} (mode {command.mode or 0:04o}): {command.stdin}\n")
    elif command.stdin:
        lines.append(f"         stdin: {command.stdin}\n")
    detail = [str(command.times)] if command.times != "once" else []
    detail += [command.note] if command.note else []
    if detail:
        lines.append(f"         ({': '.join(detail)})\n")
    return lines
