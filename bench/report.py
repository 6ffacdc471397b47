"""The benchmark's markdown: machine facts, case table, ratios against the goals, phase breakdown.

The same text goes to stdout and, with `--write FILE`, between the markers below in FILE (created as a
"## Doctor" section at the end when the markers are missing), so figures in the docs are always a pasted
run, never typed by hand.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

import paramiko

from bench.cases import Case
from bench.rounds import RatioResult, Samples, Summary

BEGIN = "<!-- BEGIN doctor-bench -->"
END = "<!-- END doctor-bench -->"


@dataclass(frozen=True)
class RunInfo:
    """What the reader needs to judge the figures: when, where, how loaded, how many rounds."""

    date: str
    machine: str
    versions: str
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    rounds: int
    hosts: int


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def _openssh_version() -> str:
    done = subprocess.run(["ssh", "-V"], capture_output=True, text=True, check=False)
    return (done.stderr or done.stdout).strip().split(",")[0]


def machine_info(rounds: int, hosts: int, load_before: tuple[float, float, float]) -> RunInfo:
    memory_kib = int(Path("/proc/meminfo").read_text().split()[1])
    return RunInfo(
        date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        machine=f"{platform.node()}: {os.cpu_count()} cores ({_cpu_model()}), {memory_kib / 2**20:.0f} GiB, "
        f"{platform.system()} {platform.release()}",
        versions=f"Python {platform.python_version()}, paramiko {paramiko.__version__}, {_openssh_version()}",
        load_before=load_before,
        load_after=os.getloadavg(),
        rounds=rounds,
        hosts=hosts,
    )


def _load(load: tuple[float, float, float]) -> str:
    return " / ".join(f"{value:.2f}" for value in load)


def render(
    info: RunInfo, cases: list[Case], samples: Samples, results: list[RatioResult],
    phases: dict[str, float] | None,
) -> str:  # fmt: skip
    lines = [
        f"Run `python -m bench.doctor_bench --rounds {info.rounds}` on {info.date}.",
        "",
        f"- machine: {info.machine}; {info.versions}",
        f"- load average (1/5/15 min): {_load(info.load_before)} before, {_load(info.load_after)} after",
        f"- {info.hosts} test hosts (systemd + OpenSSH in namespaces on the same machine, veth network); "
        f"1 untimed warm-up, then {info.rounds} interleaved rounds; ratios are per round, then the median",
        "",
        "| case | median s | min s | max s | operator CPU s | hosts' CPU s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for case in cases:
        wall = Summary.of(samples.wall[case.key])
        cpu = Summary.of(samples.operator_cpu[case.key]).median
        hosts_cpu = Summary.of(samples.hosts_cpu[case.key]).median
        lines.append(
            f"| {case.label} | {wall.median:.3f} | {wall.low:.3f} | {wall.high:.3f} | {cpu:.2f} | {hosts_cpu:.2f} |"
        )
    lines += ["", "| ratio | goal | median | min–max | verdict |", "|---|---:|---:|---:|---|"]
    for result in results:
        goal = f"≤ {result.ratio.goal:g}×" if result.ratio.goal is not None else "—"
        summary = result.summary
        lines.append(
            f"| {result.ratio.label} | {goal} | {summary.median:.2f}× | {summary.low:.2f}–{summary.high:.2f}× "
            f"| {result.verdict} |"
        )
    lines += scaling_table(info, samples)
    if phases:
        lines += ["", "Where the time goes (medians, each phase timed alone):", ""]
        lines += ["| phase | median s |", "|---|---:|"]
        lines += [f"| {key} | {value:.3f} |" for key, value in phases.items()]
    return "\n".join(lines) + "\n"


SCALING = (("doc1_cli", 1), ("doc4_cli", 4), ("docN_cli", 0))  # 0: every host of the run


def scaling_table(info: RunInfo, samples: Samples) -> list[str]:
    """How the console script's wall time grows with hosts, beside the CPU the run needed: the test hosts share
    this machine's cores, so N hosts' own work (sshd, the login shell, the probe, the nvidia-smi double) divided by
    the cores is a floor on the wall time that no client can beat here; a real fleet brings its own CPUs."""
    cores = os.cpu_count() or 1
    lines = ["", f"How the doctor's wall time grows with hosts (console script, medians; the hosts run on this "
             f"machine's {cores} cores, so their CPU over {cores} cores is a floor on the wall time here):", "",
             "| hosts | wall s | × 1 host | hosts' CPU s | operator CPU s | CPU floor s (all CPU / cores) | "
             "wall / floor |", "|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    one = Summary.of(samples.wall["doc1_cli"]).median if "doc1_cli" in samples.wall else None
    for key, hosts in SCALING:
        if key not in samples.wall or (key == "docN_cli" and info.hosts <= 1):
            continue
        wall = Summary.of(samples.wall[key]).median
        hosts_cpu = Summary.of(samples.hosts_cpu[key]).median
        operator = Summary.of(samples.operator_cpu[key]).median
        floor = (hosts_cpu + operator) / cores
        times = f"{wall / one:.2f}×" if one else "—"
        lines.append(f"| {hosts or info.hosts} | {wall:.3f} | {times} | {hosts_cpu:.2f} | {operator:.2f} | "
                     f"{floor:.3f} | {wall / floor:.2f}× |")  # fmt: skip
    return lines


def write_section(path: Path, body: str, begin: str = BEGIN, end: str = END, heading: str = "Doctor") -> None:
    """Replace the text between the markers in `path`; append a `## {heading}` section holding them if absent."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Performance\n"
    block = f"{begin}\n{body}{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1]
        text = head + block + tail
    else:
        text = text.rstrip("\n") + f"\n\n## {heading}\n\n{block}\n"
    path.write_text(text, encoding="utf-8")
