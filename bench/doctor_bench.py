"""Doctor benchmark: `specops doctor` wall time vs a bare paramiko exec, and 8 hosts vs 1.

    python -m bench.doctor_bench [--rounds N] [--hosts N] [--no-breakdown] [--write docs/performance.md]

Goals: doctor on one host, as the console script, ≤ 1.2× one bare paramiko connect + exec + close
in-process; doctor of 16 hosts ≤ 2× one (where the hosts have the CPU). For reference, the same bare connect +
exec as a new Python process (interpreter start and `import paramiko` included), which the console script pays
too.
Starts N test hosts (root, Linux), prepares them like SGLang hosts, measures every case in interleaved
rounds, prints a markdown report, and ALWAYS stops the hosts (try/finally). Not a test: it asserts nothing
about timings; it exits 1 only if a case failed to do its job (then no figure is printed).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from bench import breakdown
from bench.cases import CaseFailed, all_cases, compile_bytecode
from bench.fleet import build_fleet, stop_hosts
from bench.report import machine_info, render, write_section
from bench.rounds import ratios, run_rounds
from tests.testbed.testhost import TestHost


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.doctor_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per case (default 5)")
    parser.add_argument("--hosts", type=int, default=8, help="test hosts for the group case (default 8)")
    parser.add_argument("--no-breakdown", action="store_true", help="skip the phase-by-phase profile")
    parser.add_argument("--write", type=Path, help="also put the report between the doctor-bench markers here")
    args = parser.parse_args(argv)
    if args.rounds < 1 or not 1 <= args.hosts <= 20:
        parser.error("--rounds must be >= 1 and --hosts between 1 and 20")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if os.geteuid() != 0:
        print("the doctor benchmark starts test hosts: run it as root", file=sys.stderr)
        return 2
    load_before = os.getloadavg()
    started: list[TestHost] = []
    try:
        compile_bytecode(log)
        return _run(args, load_before, started)
    except CaseFailed as error:
        log(f"a case failed, no figures: {error}")
        return 1


def _run(args: argparse.Namespace, load_before: tuple[float, float, float], started: list[TestHost]) -> int:
    try:
        with tempfile.TemporaryDirectory(prefix="specops-bench-") as scratch:
            fleet = build_fleet(args.hosts, Path(scratch), started, log)
            cases = all_cases(fleet)
            samples = run_rounds(cases, args.rounds, fleet.cgroups, log)
            phases = None if args.no_breakdown else breakdown.measure(fleet, args.rounds)
            info = machine_info(args.rounds, len(fleet.hosts), load_before)
    finally:
        stop_hosts(started, log)
    report = render(info, cases, samples, ratios(samples), phases)
    print(report, end="")
    if args.write:
        write_section(args.write, report)
        log(f"wrote the report into {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
