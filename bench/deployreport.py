"""The deploy benchmark's markdown: machine, cases, goals, per-round ratios, exec count, what is excluded.

Written to stdout and, with `--write FILE`, between the deploy-bench markers (a "## Deploy" section at the end
when they are missing), so the figures in the docs are always a pasted run.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from bench import execcount
from bench.cases import Case
from bench.deploycases import ENGINE_EXIT, GOAL_CPU_HOST, GOAL_CPU_OPERATOR, Extras
from bench.report import RunInfo
from bench.rounds import Samples, Summary

BEGIN = "<!-- BEGIN deploy-bench -->"
END = "<!-- END deploy-bench -->"


@dataclass(frozen=True)
class Goal:
    label: str
    key: str
    limit: float


GOALS = (
    Goal("deploy overhead of a one-line change (console script, wall − gates − the old engine's exit)", "cli", 0.6),
    Goal("crash at start-up named on screen after its journal line", "crash", 1.0),
)


def goal_values(goal: Goal, samples: Samples, extras: Extras) -> list[float]:
    """The figures a goal is judged on: the engine's own time (its exit as well as its start) is not specops's."""
    values = list(samples.wall[goal.key])
    exits = extras.values.get(goal.key, {}).get(ENGINE_EXIT)
    return [value - exit for value, exit in zip(values, exits, strict=True)] if exits else values


def _range(values: Sequence[float], unit: str = "", digits: int = 3) -> tuple[str, str]:
    summary = Summary.of(values)
    return f"{summary.median:.{digits}f}{unit}", f"{summary.low:.{digits}f}–{summary.high:.{digits}f}{unit}"


def _per_round(tops: Sequence[float], bottoms: Sequence[float]) -> list[float]:
    return [top / bottom for top, bottom in zip(tops, bottoms, strict=True)]


def _load(load: tuple[float, float, float]) -> str:
    return " / ".join(f"{value:.2f}" for value in load)


def header(info: RunInfo) -> list[str]:
    return [
        f"Run `python -m bench.deploy_bench --rounds {info.rounds}` on {info.date}.",
        "",
        f"- machine: {info.machine}; {info.versions}",
        f"- load average (1/5/15 min): {_load(info.load_before)} before, {_load(info.load_after)} after",
        "- 1 test host (systemd + OpenSSH in namespaces on the same machine, veth network); 1 untimed warm-up, "
        f"then {info.rounds} interleaved rounds (the first case moves on by one each round); ratios are per "
        "round, then the median",
    ]


def case_table(cases: list[Case], samples: Samples) -> list[str]:
    lines = ["", "| case | median s | min s | max s | operator CPU s | host's CPU s |"]
    lines.append("|---|---:|---:|---:|---:|---:|")
    for case in cases:
        wall = Summary.of(samples.wall[case.key])
        cpu = Summary.of(samples.operator_cpu[case.key]).median
        host_cpu = Summary.of(samples.hosts_cpu[case.key]).median
        lines.append(f"| {case.label} | {wall.median:.3f} | {wall.low:.3f} | {wall.high:.3f} | {cpu:.2f} "
                     f"| {host_cpu:.2f} |")  # fmt: skip
    return lines


def goal_table(samples: Samples, extras: Extras) -> list[str]:
    wall, cpu = samples.wall, samples.operator_cpu
    lines = ["", "| goal | limit | median | min–max | verdict |", "|---|---:|---:|---:|---|"]
    for goal in GOALS:
        values = goal_values(goal, samples, extras)
        median, spread = _range(values, " s", 2)
        verdict = "met" if Summary.of(values).median <= goal.limit else "MISSED"
        lines.append(f"| {goal.label} | ≤ {goal.limit:g} s | {median} | {spread} | {verdict} |")
    references = [
        ("deploy overhead (console script, wall − gates: the old engine's exit included)", wall["cli"], " s"),
        ("deploy overhead in-process (no interpreter start-up, imports done), wall − gates − the old engine's exit",
         goal_values(Goal("", "in", 0), samples, extras), " s"),
        ("deploy overhead in-process, wall − gates", wall["in"], " s"),
        ("start-up share: console-script overhead − in-process overhead (same round)",
         [a - b for a, b in zip(wall["cli"], wall["in"], strict=True)], " s"),
        ("start-up share in operator CPU: console script − in-process (same round; steadier under load)",
         [a - b for a, b in zip(cpu["cli"], cpu["in"], strict=True)], " CPU-s"),
        ("specops overhead (console script) / by hand (same round)", _per_round(wall["cli"], wall["hand"]), "×"),
        ("specops overhead (in-process) / by hand (same round)", _per_round(wall["in"], wall["hand"]), "×"),
    ]  # fmt: skip
    for label, values, unit in references:
        median, spread = _range(values, unit, 2)
        lines.append(f"| {label} | — | {median} | {spread} | reference |")
    return lines


def floor_section(samples: Samples, extras: Extras, cores: int | None = None) -> list[str]:
    """The CPU floor under the goal's figure (bench/cpuwindows.py): the in-process run's CPU in the goal's
    windows (operator + host outside the engine), plus, for the console script, its start-up share of operator
    CPU (same round), spread over this machine's cores. A figure near its floor is work to cut; far above it,
    waiting (round trips, steps one after another)."""
    found = extras.values.get("in", {})
    if GOAL_CPU_OPERATOR not in found:
        return []
    cores = cores or os.cpu_count() or 1
    operator, host = found[GOAL_CPU_OPERATOR], found[GOAL_CPU_HOST]
    start_up = [a - b for a, b in zip(samples.operator_cpu["cli"], samples.operator_cpu["in"], strict=True)]
    in_floor = [(a + b) / cores for a, b in zip(operator, host, strict=True)]
    cli_floor = [floor + extra / cores for floor, extra in zip(in_floor, start_up, strict=True)]
    cli_figure = goal_values(GOALS[0], samples, extras)
    in_figure = goal_values(Goal("", "in", 0), samples, extras)
    rows = [
        ("in-process: operator CPU in the goal's windows", operator, " CPU-s"),
        ("in-process: the host's CPU outside the engine in the goal's windows", host, " CPU-s"),
        (f"floor of the in-process figure: (operator + host) / {cores} cores", in_floor, " s"),
        ("the in-process figure / its floor (same round)", _per_round(in_figure, in_floor), "×"),
        (f"floor of the goal's figure: the in-process floor + the console script's start-up share / {cores} cores",
         cli_floor, " s"),
        ("the goal's figure / its floor (same round)", _per_round(cli_figure, cli_floor), "×"),
    ]  # fmt: skip
    lines = ["", f"CPU under the goal's figure, on this machine's {cores} cores shared by the operator and the test "
             "host (windows: before the drain, and after the smoke's verdict):", "",
             "| figure | median | min–max |", "|---|---:|---:|"]  # fmt: skip
    for label, values, unit in rows:
        median, spread = _range(values, unit, 2)
        lines.append(f"| {label} | {median} | {spread} |")
    return lines


def figure_table(extras: Extras) -> list[str]:
    names = {"cli": "console script", "in": "in-process", "hand": "by hand", "crash": "crashing build"}
    lines = ["", "Parts of the cases (seconds unless said otherwise):", "", "| case | figure | median | min–max |",
             "|---|---|---:|---:|"]  # fmt: skip
    for key, figures in extras.values.items():
        for name, values in figures.items():
            median, spread = _range(values, digits=0 if name in ("execs", "tunnels", "connections", "requests") else 3)
            lines.append(f"| {names.get(key, key)} | {name} | {median} | {spread} |")
    return lines


def exec_section(extras: Extras) -> list[str]:
    count = extras.last_count
    if count is None:
        return []
    lines = ["", f"SSH execs of the last in-process deploy: {len(count.execs)} execs, {len(count.tunnels)} tunnel "
             f"channels (HTTP to the engine), {count.connections} connections; each exec under the last phase event "
             "before it opened:",
             "", "| phase | execs | commands |", "|---|---:|---|"]  # fmt: skip
    lines += [f"| {phase} | {number} | {shown} |" for phase, number, shown in execcount.phase_table(count)]
    lines += ["", f"Requests on the command conversation of the last in-process deploy: {len(count.requests)} round "
              "trips, each under the last phase event before it was sent (the readiness polls are in the gates, "
              "the drain's checks in the drain: both excluded from the goal's figure):",
              "", "| phase | requests | seconds in them | slowest |", "|---|---:|---:|---|"]  # fmt: skip
    lines += [f"| {phase} | {number} | {seconds:.3f} | {shown} |"
              for phase, number, seconds, shown in execcount.request_table(count)]  # fmt: skip
    return lines


def excluded(samples: Samples, extras: Extras) -> list[str]:
    gates, _ = _range(extras.values["cli"]["phase gates"], " s", 2)
    restart, _ = _range(extras.values["hand"]["restart"], " s", 2)
    exits, _ = _range(extras.values["cli"][ENGINE_EXIT], " s", 2)
    seen = extras.restart_in_gates
    inside = sum(1 for value in seen if value)
    where = (
        f"the exec that restarts the unit opened inside the gates phase in {inside} of {len(seen)} rounds"
        if any(value is not None for value in seen)
        else "the restart is a request on the deploy's command conversation, not an exec of its own"
    )
    return [
        "",
        f"Excluded: for specops, the `gates` phase as `--json` reports it (median {gates}: the engine's start-up, "
        f"readiness and the smoke generation; {where}), and for the goal also the old engine's exit (from SIGTERM "
        f"to its unit inactive, median {exits}: the engine's own time, like its start-up). By hand: everything "
        "after `systemctl restart` returned "
        f"(the engine's start-up, waited for untimed before the next case); the restart command itself (stopping "
        f"the old engine, starting the new process) is included, median {restart}.",
    ]


def render(info: RunInfo, cases: list[Case], samples: Samples, extras: Extras) -> str:
    lines = [*header(info), *case_table(cases, samples), *goal_table(samples, extras), *excluded(samples, extras)]
    lines += floor_section(samples, extras)
    lines += [*figure_table(extras), *exec_section(extras)]
    return "\n".join(lines) + "\n"
