"""Interleaved rounds and their statistics: medians, ranges, and per-round ratios against the goals.

Why interleaved: the machine has 2 cores shared with other work, so load drifts during a run. Every case
runs once per round (the first case moves on by one each round), and a ratio is taken between cases of
the SAME round before its median, so a slow minute slows both sides instead of skewing the ratio.
"""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.cases import Case

Log = Callable[[str], None]


@dataclass(frozen=True)
class Summary:
    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Summary:
        return cls(statistics.median(values), min(values), max(values))


@dataclass(frozen=True)
class Ratio:
    """numerator/denominator per round, with the goal it is judged against (None: for reference only)."""

    label: str
    numerator: str
    denominator: str
    goal: float | None


@dataclass(frozen=True)
class RatioResult:
    ratio: Ratio
    summary: Summary

    @property
    def verdict(self) -> str:
        if self.ratio.goal is None:
            return "reference"
        return "met" if self.summary.median <= self.ratio.goal else "MISSED"


@dataclass
class Samples:
    """Per case key: wall seconds, operator CPU seconds (this process + its children), hosts' CPU seconds."""

    wall: dict[str, list[float]] = field(default_factory=dict)
    operator_cpu: dict[str, list[float]] = field(default_factory=dict)
    hosts_cpu: dict[str, list[float]] = field(default_factory=dict)

    def add(self, key: str, wall: float, operator_cpu: float, hosts_cpu: float) -> None:
        self.wall.setdefault(key, []).append(wall)
        self.operator_cpu.setdefault(key, []).append(operator_cpu)
        self.hosts_cpu.setdefault(key, []).append(hosts_cpu)


def operator_cpu_seconds() -> float:
    """CPU of this process (all threads: paramiko's transports too) and of its finished children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def hosts_cpu_seconds(cgroups: Sequence[Path]) -> float:
    """CPU used inside the test hosts (their cgroups' cpu.stat): sshd, the login shell, the probe, nvidia-smi."""
    return sum(cgroup_cpu_seconds(cgroup) for cgroup in cgroups)


def cgroup_cpu_seconds(cgroup: Path) -> float:
    """CPU seconds used inside one cgroup (v2) and its descendants: its cpu.stat's usage_usec."""
    for line in (cgroup / "cpu.stat").read_text().splitlines():
        if line.startswith("usage_usec "):
            return int(line.split()[1]) / 1e6
    return 0.0


class Measured:
    """Per case: wall seconds (what `timed` returns), and the CPU seconds of the operator (this process and its
    finished children) and of one test host (its cgroup), added together."""

    def __init__(self, cgroup: Path) -> None:
        self.cgroup = cgroup
        self.wall: dict[str, list[float]] = {}
        self.cpu: dict[str, list[float]] = {}

    def run(self, name: str, timed: Callable[[], float]) -> None:
        operator, host = operator_cpu_seconds(), hosts_cpu_seconds([self.cgroup])
        self.wall.setdefault(name, []).append(timed())
        spent = operator_cpu_seconds() - operator + hosts_cpu_seconds([self.cgroup]) - host
        self.cpu.setdefault(name, []).append(spent)


def measure_case(case: Case, cgroups: Sequence[Path], samples: Samples) -> None:
    cpu_before, hosts_before = operator_cpu_seconds(), hosts_cpu_seconds(cgroups)
    wall = case.run()
    cpu_after, hosts_after = operator_cpu_seconds(), hosts_cpu_seconds(cgroups)
    samples.add(case.key, wall, cpu_after - cpu_before, hosts_after - hosts_before)


RATIOS = (
    Ratio("doctor 1 host (in-process) / bare paramiko", "doc1_in", "bare", None),
    Ratio("doctor 1 host (console script) / bare paramiko", "doc1_cli", "bare", 1.2),
    Ratio(
        "doctor 1 host (console script) / bare paramiko as a script (both start Python)", "doc1_cli", "bare_cli", None
    ),
    Ratio("doctor 4 hosts / 1 host (in-process)", "doc4_in", "doc1_in", None),
    Ratio("doctor 4 hosts / 1 host (console script)", "doc4_cli", "doc1_cli", None),
    Ratio("doctor all hosts / 1 host (in-process)", "docN_in", "doc1_in", None),
    Ratio("doctor all hosts / 1 host (console script)", "docN_cli", "doc1_cli", 2.0),
    Ratio("bare paramiko all hosts / 1 host (this machine's own scaling)", "bareN", "bare", None),
    Ratio("OpenSSH client / bare paramiko", "openssh", "bare", None),
)


def run_rounds(cases: list[Case], rounds: int, cgroups: Sequence[Path], log: Log, warm_up: bool = True) -> Samples:
    """One untimed warm-up of every case (unless the caller did its own), then `rounds` timed rounds in
    rotating order."""
    if warm_up:
        for case in cases:
            case.run()
        log("warm-up done")
    samples = Samples()
    for number in range(rounds):
        shift = number % len(cases)
        for case in cases[shift:] + cases[:shift]:
            measure_case(case, cgroups, samples)
        walls = ", ".join(f"{case.key} {samples.wall[case.key][-1]:.3f}s" for case in cases)
        log(f"round {number + 1}/{rounds}: {walls}")
    return samples


def ratios(samples: Samples, wanted: Sequence[Ratio] = RATIOS) -> list[RatioResult]:
    """Per-round ratios of wall times (same round, same load), summarised."""
    results = []
    for ratio in wanted:
        if ratio.numerator not in samples.wall:
            continue  # a case this run did not have (the 4-host doctor with 4 hosts or fewer)
        tops, bottoms = samples.wall[ratio.numerator], samples.wall[ratio.denominator]
        per_round = [top / bottom for top, bottom in zip(tops, bottoms, strict=True)]
        results.append(RatioResult(ratio, Summary.of(per_round)))
    return results
