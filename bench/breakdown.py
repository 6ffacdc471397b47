"""Where a doctor run's time goes: its phases timed one by one with specops's own functions.

Why: a ratio that misses its goal says nothing about the fix. The doctor is config load -> connect ->
ONE probe exec (host-side Python that also runs the nvidia-smi double) -> pure checks; the console
script adds Python start-up and imports; every SSH exec pays the login shell's ~/.bashrc. Each phase is
timed here in isolation (medians over the same number of rounds), for 1 host and for all hosts at once.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING

from bench.fleet import Fleet

if TYPE_CHECKING:
    from specops.config.loader import Config
    from specops.host.ssh.channels import SshHost

GPU_QUERY = ["nvidia-smi", "--query-gpu=index,name,driver_version,memory.total", "--format=csv,noheader,nounits"]
DOCTOR_IMPORTS = (
    "import specops.cli.main, specops.cli.doctor_view, specops.doctor.runner, specops.doctor.registry, "
    "specops.host.ssh.connection, specops.probe.run, specops.config.loader; specops.doctor.registry.all_checks()"
)
CLI_IMPORT = "import specops.cli.main"
# what a plain `doctor HOST` loads before its connection starts (specops/cli/early/doctor.py): the rest loads
# meanwhile; the first time (validating the config), and again with the plan that first run kept
# (specops/cli/early/plan.py)
BEFORE_CONNECT_IMPORTS = (
    "import specops.cli.early.doctor, specops.config.loader, specops.doctor.runner, specops.probe.run, "
    "specops.host.ssh.connection"
)
BEFORE_CONNECT_FROM_PLAN = (
    "import specops.cli.early.doctor, specops.cli.early.plan, specops.doctor.runner, specops.probe.run, "
    "specops.host.ssh.connection"
)
BASHRC = "/root/.bashrc"

Phases = dict[str, list[float]]


@contextmanager
def _timed(phases: Phases, key: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    phases.setdefault(key, []).append(time.perf_counter() - started)


def _config(fleet: Fleet) -> Config:
    from specops.config.loader import load

    return load(fleet.config)


def _connect(fleet: Fleet, config: Config, name: str) -> SshHost:
    from specops.host.ssh.connection import connect

    return connect(config.inventory.hosts[name], ssh_config=fleet.ssh_config)


def one_host_round(fleet: Fleet, phases: Phases) -> None:
    """One doctor run on the first host, phase by phase, plus the bare execs that bound each phase."""
    from specops.doctor.model import CheckContext
    from specops.doctor.registry import all_checks, run_checks
    from specops.probe.run import probe

    name = fleet.hosts[0].name
    with _timed(phases, "config load + profile resolve"):
        config = _config(fleet)
        spec = config.inventory.hosts[name]
        profile = config.resolve(name, spec.profile).profile if spec.profile else None
    with _timed(phases, "connect (TCP + kex + auth, strict known_hosts)"):
        host = _connect(fleet, config, name)
    with host:
        with _timed(phases, "exec `true` on the open connection (session + ~/.bashrc)"):
            host.run(["true"], check=True)
        with _timed(phases, "exec `<venv python> -c pass` on the open connection"):
            host.run([spec.python, "-c", "pass"], check=True)
        with _timed(phases, "exec one nvidia-smi double query on the open connection"):
            host.run(GPU_QUERY, check=True)
        with _timed(phases, "probe exec (one round trip, parse included)"):
            facts = probe(host, spec, profile, python=spec.python)
        phases.setdefault("  of which the probe script on the host", []).append(facts.probe_seconds)
        context = CheckContext(host=spec, facts=facts, profile=profile)
        with _timed(phases, "checks (pure, all registered)"):
            run_checks(context, all_checks())
        with _timed(phases, "close"):
            host.close()


def all_hosts_round(fleet: Fleet, phases: Phases) -> None:
    """The same network phases for every host at once in threads (what `doctor GROUP` does)."""
    from specops.probe.run import probe

    config = _config(fleet)
    names = fleet.names
    with ExitStack() as stack, ThreadPoolExecutor(max_workers=len(names)) as pool:
        with _timed(phases, f"connect x{len(names)} in parallel"):
            hosts = list(pool.map(lambda name: _connect(fleet, config, name), names))
        for host in hosts:
            stack.enter_context(host)
        specs = [config.inventory.hosts[name] for name in names]
        with _timed(phases, f"exec `true` x{len(names)} in parallel"):
            list(pool.map(lambda host: host.run(["true"], check=True), hosts))
        with _timed(phases, f"probe x{len(names)} in parallel (no profile)"):
            facts = list(pool.map(lambda host, spec: probe(host, spec, python=spec.python), hosts, specs))
        phases.setdefault("  slowest probe script on a host", []).append(max(f.probe_seconds for f in facts))


def _run_seconds(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, timeout=60)
    return time.perf_counter() - started


def process_round(phases: Phases) -> None:
    """Operator-side process costs: interpreter start, the doctor's imports, and the shared ~/.bashrc."""
    python = sys.executable
    steps: list[tuple[str, Callable[[], float]]] = [
        ("local: `python -c pass`", lambda: _run_seconds([python, "-c", "pass"])),
        ("local: python + import the CLI (the `--help` set)", lambda: _run_seconds([python, "-c", CLI_IMPORT])),
        ("local: python + import everything doctor uses", lambda: _run_seconds([python, "-c", DOCTOR_IMPORTS])),
        ("local: python + import what doctor loads before connecting (first run: config validated)",
         lambda: _run_seconds([python, "-c", BEFORE_CONNECT_IMPORTS])),
        ("local: python + import what doctor loads before connecting (again: from the remembered plan)",
         lambda: _run_seconds([python, "-c", BEFORE_CONNECT_FROM_PLAN])),
        ("local: `bash -c true`", lambda: _run_seconds(["env", "-i", "HOME=/root", "bash", "-c", "true"])),
        (f"local: bash sourcing {BASHRC} (every SSH exec pays it)",
         lambda: _run_seconds(["env", "-i", "HOME=/root", "bash", "-c", f". {BASHRC}"])),
    ]  # fmt: skip
    for key, step in steps:
        phases.setdefault(key, []).append(step())


def measure(fleet: Fleet, rounds: int) -> dict[str, float]:
    """Median seconds per phase over `rounds` rounds (after one untimed warm-up of each part)."""
    parts = [lambda p: one_host_round(fleet, p), lambda p: all_hosts_round(fleet, p), process_round]
    for part in parts:
        part({})
    phases: Phases = {}
    for _ in range(rounds):
        for part in parts:
            part(phases)
    return {key: statistics.median(values) for key, values in phases.items()}
