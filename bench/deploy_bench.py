"""Deploy benchmark: specops's own time for a one-line change vs the same change by hand, and crash latency.

    python -m bench.deploy_bench [--rounds N] [--write docs/performance.md]

Goals: the deploy overhead of a one-line change (`specops --json deploy`, wall time minus the `gates` phase)
≤ 1.5 s; a crash at start-up named on screen ≤ 1 s after its journal line. Starts ONE test host (root,
Linux) dressed as a GPU host, deploys the test build, then measures every case in interleaved rounds: the
console script, the same in-process (with every SSH channel counted), `rsync -a` + `ssh systemctl restart`,
and a crashing build. Prints a markdown report and ALWAYS stops the host (try/finally, Ctrl-C included).
Not a test: it asserts nothing about timings; it exits 1 with no figures when a case did not do its job.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

from bench.cases import CaseFailed, compile_bytecode
from bench.deploycases import Extras, all_cases, initial_deploy, rsync_untimed
from bench.deployreport import BEGIN, END, render
from bench.deployscene import SceneError, prepare_manual, start_scene
from bench.execcount import ExecCount
from bench.fleet import stop_hosts
from bench.report import machine_info, write_section
from bench.rounds import run_rounds
from tests.testbed.testhost import TestHost
from tests.testbed.testhost.layout import cgroup_dir

TOOLS = ("rsync", "ssh")


def log(message: str) -> None:
    print(f"[deploy-bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.deploy_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per case (default 5)")
    parser.add_argument("--write", type=Path, help="also put the report between the deploy-bench markers here")
    parser.add_argument("--trace", type=Path, help="also write every request of the last in-process deploy here")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if os.geteuid() != 0:
        print("the deploy benchmark starts a test host: run it as root", file=sys.stderr)
        return 2
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        print(f"the deploy benchmark needs {', '.join(missing)} on PATH (the by-hand case runs them)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _interrupt)  # `kill PID` stops the host too, like Ctrl-C
    compile_bytecode(log)
    load_before = os.getloadavg()
    started: list[TestHost] = []
    try:
        report = _run(args.rounds, load_before, started, args.trace)
    except (CaseFailed, SceneError) as error:
        log(f"a case failed, no figures: {error}")
        return 1
    except KeyboardInterrupt:
        log("interrupted: the test host was stopped, no figures")
        return 130
    print(report, end="")
    if args.write:
        write_section(args.write, report, BEGIN, END, heading="Deploy")
        log(f"wrote the report into {args.write}")
    return 0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _run(rounds: int, load_before: tuple[float, float, float], started: list[TestHost], trace: Path | None) -> str:
    try:
        with tempfile.TemporaryDirectory(prefix="specops-deploy-bench-") as scratch:
            scene = start_scene(Path(scratch), started, log)
            log(f"first deploy of the test build: release {initial_deploy(scene)} verified")
            prepare_manual(scene, lambda: rsync_untimed(scene))
            extras = Extras()
            cases = all_cases(scene, extras)
            for case in cases:
                log(f"warm-up: {case.key} {case.run():.3f} s")
            extras.drop_warmup()
            samples = run_rounds(cases, rounds, [cgroup_dir(scene.host.name)], log, warm_up=False)
            info = machine_info(rounds, 1, load_before)
            if trace is not None and extras.last_count is not None:
                trace.write_text(_trace(extras.last_count))
    finally:
        stop_hosts(started, log)
    return render(info, cases, samples, extras)


def _trace(count: ExecCount) -> str:
    """One line per request on the deploy's command conversation, in order: its phase, its ms, its command."""
    return "".join(f"{r.phase}\t{r.seconds * 1000:.0f} ms\t{r.command}\n" for r in count.requests)


if __name__ == "__main__":
    sys.exit(main())
