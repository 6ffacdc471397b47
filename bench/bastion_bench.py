"""Bastion benchmark: `doctor` through one jump host vs the same host directly, and how many connections
the jump host gets when a whole group is behind it.

    python -m bench.bastion_bench [--hosts N] [--rounds R] [--write docs/performance.md]

Goals: `doctor HOST` through the bastion ≤ 1.5× the same host directly; `doctor GROUP` of N hosts behind one
bastion opens ONE connection to it. Starts N prepared test hosts (bench/fleet.py) and a bastion, moves the hosts'
networks into the bastion's namespace (tests/testbed/testhost/bastion.py), then times `doctor` in-process in
two driver processes: one in this namespace, through the bastion (ProxyJump), and one inside the bastion's
network namespace (`nsenter -n`), reaching the host directly: same host, same code, only the path differs.
The bastion connection is opened anew in every timed run (the shared connection is closed between runs).
Connections are counted from the bastion sshd's journal ("Accepted publickey ... from <this machine>").
ALWAYS stops the hosts. Not a test: exits 1 only when a run did not reach every host.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from bench.fleet import GROUP, build_fleet, stop_hosts
from tests.testbed.testhost import TestHost, start_host
from tests.testbed.testhost.bastion import accepted_logins, hide_behind

BEGIN, END = "<!-- BEGIN bastion-bench -->", "<!-- END bastion-bench -->"
RUNS_PER_DRIVER = 3


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def drive(config: str, targets: list[str], runs: int, warm_up: bool = True) -> list[float]:
    """In-process `specops doctor TARGETS --json`, `runs` times (after one untimed warm-up unless told not to);
    raises if a host was missed."""
    from specops.cli.main import main
    from specops.host.ssh.connection import shared_hops

    times = []
    first_timed = 1 if warm_up else 0
    for index in range(runs + first_timed):
        shared_hops.close_all()
        out = io.StringIO()
        started = time.perf_counter()
        with redirect_stdout(out), redirect_stderr(io.StringIO()):
            code = main(["--config", config, "doctor", *targets, "--json"])
        elapsed = time.perf_counter() - started
        if code not in (0, 1) or any(out.getvalue().count(f'"{name}"') == 0 for name in targets if name != GROUP):
            raise SystemExit(f"doctor {' '.join(targets)} exited {code}: {out.getvalue()[:2000]}")
        if index >= first_timed:
            times.append(elapsed)
    shared_hops.close_all()
    return times


def _driver(
    home: Path, config: Path, targets: list[str], runs: int, netns_pid: int | None = None, warm_up: bool = True
) -> list[float]:
    mode = "--driver" if warm_up else "--driver-cold"
    argv = [sys.executable, "-m", "bench.bastion_bench", mode, str(config), str(runs), *targets]
    if netns_pid is not None:
        argv = ["nsenter", "-t", str(netns_pid), "-n", *argv]
    env = {**os.environ, "HOME": str(home)}
    env.pop("SSH_AUTH_SOCK", None)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"driver failed: {done.stderr.strip()[-2000:]}")
    return [float(value) for value in json.loads(done.stdout)]


def _homes(scratch: Path, hosts: list[TestHost], bastion: TestHost, direct_config: Path) -> Path:
    """A HOME whose ~/.ssh/config reaches every host through the bastion (the direct one is the fleet's)."""
    home = scratch / "via-home"
    (home / ".ssh").mkdir(parents=True)
    blocks = direct_config.read_text().replace(
        "    IdentitiesOnly yes\n", "    IdentitiesOnly yes\n    ProxyJump jump\n"
    )
    (home / ".ssh" / "config").write_text(bastion.ssh_config_block("jump") + "\n" + blocks)
    return home


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] in (["--driver"], ["--driver-cold"]):
        print(json.dumps(drive(args[1], args[3:], int(args[2]), warm_up=args[0] == "--driver")))
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench.bastion_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--write", type=Path)
    options = parser.parse_args(args)
    started: list[TestHost] = []
    try:
        with tempfile.TemporaryDirectory(prefix="specops-bastion-bench-") as scratch:
            report = _run(options, Path(scratch), started)
    finally:
        stop_hosts(started, log)
    print(report, end="")
    if options.write:
        _write(options.write, report)
    return 0


def _run(options: argparse.Namespace, scratch: Path, started: list[TestHost]) -> str:
    load_before = os.getloadavg()
    fleet = build_fleet(options.hosts, scratch, started, log)
    bastion = start_host("benchjump")
    started.append(bastion)
    for host in fleet.hosts:
        hide_behind(host, bastion)
    via_home = _homes(scratch, fleet.hosts, bastion, fleet.ssh_config)
    first = fleet.hosts[0].name
    ratios, via_all, direct_all = [], [], []
    for round_number in range(options.rounds):
        order = ["via", "direct"] if round_number % 2 == 0 else ["direct", "via"]
        measured = {}
        for path in order:
            home, pid = (via_home, None) if path == "via" else (fleet.home, bastion.systemd_pid)
            measured[path] = statistics.median(_driver(home, fleet.config, [first], RUNS_PER_DRIVER, pid))
        ratios.append(measured["via"] / measured["direct"])
        via_all.append(measured["via"])
        direct_all.append(measured["direct"])
        log(f"round {round_number + 1}: via {measured['via']:.3f}s direct {measured['direct']:.3f}s")
    before = accepted_logins(bastion, bastion.outer_ip)
    group_via = _driver(via_home, fleet.config, [GROUP], 1, warm_up=False)[0]  # exactly one run: count its logins
    logins = accepted_logins(bastion, bastion.outer_ip) - before
    group_direct = _driver(fleet.home, fleet.config, [GROUP], 1, bastion.systemd_pid)[0]
    return _render(options, load_before, ratios, via_all, direct_all, logins, group_via, group_direct)


def _render(
    options: argparse.Namespace, load_before: tuple[float, ...], ratios: list[float], via: list[float],
    direct: list[float], logins: int, group_via: float, group_direct: float,
) -> str:  # fmt: skip
    def spread(values: list[float]) -> str:
        return f"{statistics.median(values):.3f} s ({min(values):.3f}–{max(values):.3f})"

    ratio = statistics.median(ratios)
    return "\n".join(
        [
            f"Run {time.strftime('%Y-%m-%d')}: {options.hosts} prepared test hosts behind one bastion, "
            f"{options.rounds} rounds × {RUNS_PER_DRIVER} runs per path, load average before "
            f"{load_before[0]:.2f}, after {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs).",
            "",
            "| case | figure | goal |",
            "|---|---|---|",
            f"| `doctor HOST` directly (from the bastion's network namespace) | {spread(direct)} | |",
            f"| `doctor HOST` through the bastion (ProxyJump, bastion connection included) | {spread(via)} | |",
            f"| ratio through / direct, median of rounds (min–max) | {ratio:.2f}× "
            f"({min(ratios):.2f}–{max(ratios):.2f}) | ≤ 1.5× {'met' if ratio <= 1.5 else 'NOT met'} |",
            f"| connections to the bastion during `doctor {GROUP}` ({options.hosts} hosts) | {logins} | 1 "
            f"{'met' if logins == 1 else 'NOT met'} |",
            f"| `doctor {GROUP}`: through the bastion / directly | {group_via:.3f} s / {group_direct:.3f} s | |",
            "",
        ]
    )


def _write(path: Path, report: str) -> None:
    text = path.read_text(encoding="utf-8")
    block = f"{BEGIN}\n{report}{END}"
    if BEGIN in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + f"\n\n## Bastion\n\n{block}\n"
    path.write_text(text, encoding="utf-8")
    log(f"wrote the report into {path}")


if __name__ == "__main__":
    sys.exit(main())
