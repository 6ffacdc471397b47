"""Start-up benchmark: `specops --help` against a bare two-command typer app's `--help`, as new processes.

    python -m bench.help_bench [--rounds N] [--write docs/performance.md]

Goal: `specops --help` ≤ 0.7× the bare typer app (the floor of any typer CLI: the interpreter, typer and the
help screen). Both run from this venv's interpreter, interleaved round by round; `python -c pass` and
`specops deploy --help` are timed beside them for reference. Needs no root and no test host. Not a test: it
asserts nothing about timings; it exits 1 only when a command did not print its help (no figure then).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.cases import Case, CaseFailed, compile_bytecode, console_script
from bench.report import write_section
from bench.rounds import Ratio, RatioResult, Samples, Summary, ratios, run_rounds

BEGIN = "<!-- BEGIN help-bench -->"
END = "<!-- END help-bench -->"
TYPER_APP = '''\
import typer

app = typer.Typer()


@app.command()
def deploy(host: str, build: str = typer.Option(..., help="The build to deploy.")) -> None:
    """Deploy a build to a host."""


@app.command()
def doctor(host: str) -> None:
    """Check a host."""


if __name__ == "__main__":
    app()
'''
HELP_RATIOS = (
    Ratio("`specops --help` / bare two-command typer app `--help`", "specops_help", "typer_help", 0.7),
    Ratio("`specops deploy --help` / bare typer app `--help`", "deploy_help", "typer_help", None),
)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def timed(argv: list[str], expect: tuple[str, ...]) -> float:
    """Wall seconds of `argv` as a new process; it must exit 0 and print every word of `expect`."""
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "COLUMNS": "100"})  # fmt: skip
    elapsed = time.perf_counter() - started
    missing = [word for word in expect if word not in done.stdout]
    if done.returncode != 0 or missing:
        raise CaseFailed(f"`{' '.join(argv)}` exited {done.returncode}, missing {missing}: {done.stderr[-400:]}")
    return elapsed


def all_cases(app: Path) -> list[Case]:
    python, specops = sys.executable, str(console_script())
    return [
        Case("python", "`python -c pass` (reference)", lambda: timed([python, "-c", "pass"], ())),
        Case("typer_help", "bare two-command typer app `--help`",
             lambda: timed([python, str(app), "--help"], ("deploy", "doctor"))),
        Case("specops_help", "`specops --help` (console script)",
             lambda: timed([specops, "--help"], ("deploy", "doctor", "rollback"))),
        Case("deploy_help", "`specops deploy --help` (reference)",
             lambda: timed([specops, "deploy", "--help"], ("--build", "--patch"))),
    ]  # fmt: skip


def render(rounds: int, load_before: tuple[float, ...], cases: list[Case], samples: Samples,
           results: list[RatioResult]) -> str:  # fmt: skip
    import typer

    load_after = os.getloadavg()
    lines = [
        f"Run `python -m bench.help_bench --rounds {rounds}` on "
        f"{datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}.",
        "",
        f"- machine: {os.cpu_count()} cores, {platform.system()} {platform.release()}; Python "
        f"{platform.python_version()}, typer {typer.__version__}",
        f"- load average (1/5/15 min): {' / '.join(f'{v:.2f}' for v in load_before)} before, "
        f"{' / '.join(f'{v:.2f}' for v in load_after)} after",
        f"- 1 untimed warm-up, then {rounds} interleaved rounds; ratios are per round, then the median",
        "",
        "| case | median s | min s | max s | CPU s |",
        "|---|---:|---:|---:|---:|",
    ]
    for case in cases:
        wall, cpu = Summary.of(samples.wall[case.key]), Summary.of(samples.operator_cpu[case.key]).median
        lines.append(f"| {case.label} | {wall.median:.3f} | {wall.low:.3f} | {wall.high:.3f} | {cpu:.2f} |")
    lines += ["", "| ratio | goal | median | min–max | verdict |", "|---|---:|---:|---:|---|"]
    for result in results:
        goal = f"≤ {result.ratio.goal:g}×" if result.ratio.goal is not None else "—"
        low, high = result.summary.low, result.summary.high
        lines.append(f"| {result.ratio.label} | {goal} | {result.summary.median:.2f}× | {low:.2f}–{high:.2f}× "
                     f"| {result.verdict} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.help_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds per case (default 15)")
    parser.add_argument("--write", type=Path, help="also put the report between the help-bench markers here")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    load_before = os.getloadavg()
    try:
        compile_bytecode(log)
        with tempfile.TemporaryDirectory(prefix="specops-help-bench-") as scratch:
            app = Path(scratch) / "app.py"
            app.write_text(TYPER_APP)
            cases = all_cases(app)
            samples = run_rounds(cases, args.rounds, [], log)
    except CaseFailed as error:
        log(f"a case failed, no figures: {error}")
        return 1
    report = render(args.rounds, load_before, cases, samples, ratios(samples, HELP_RATIOS))
    print(report, end="")
    if args.write:
        write_section(args.write, report, BEGIN, END, heading="Start-up")
        log(f"wrote the report into {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
