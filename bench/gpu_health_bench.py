"""What the GPU health checks add to a doctor of an 8-GPU host: the probe's nvidia part and the checks, with
the health query and without it, interleaved in the same run; the figure is the median of per-round differences.

Method: the nvidia-smi test double plays an 8 × H200 NVSwitch host (driver 590, tests/testbed/gpu) on PATH; the probe's
own gather_nvidia runs it (the calls side by side, as on a host) with the field list already cached, as on
every doctor after the first. "without" is the same probe with the health query, `nvidia-smi -L` and the
fabric manager's `systemctl is-active` left out, and without the ten health checks; both parse with
parse_nvidia and run the GPU checks. The SSH round trip is the same in both (the probe is one exec either
way), so it is not part of the difference.

    .venv/bin/python -m bench.gpu_health_bench                 # 15 rounds, report on stdout (~20 s)
    .venv/bin/python -m bench.gpu_health_bench --write docs/performance.md
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

from bench.report import write_section
from specops.doctor.model import CheckContext, Status
from specops.doctor.registry import all_checks, run_checks
from specops.probe.facts import HostFacts, PythonFacts
from specops.probe.parse import parse_nvidia
from specops.remote.probe import gpu as probe_gpu
from tests.testbed import gpu

SCENARIO = "h200x8-590-nvswitch"
HEALTH_IDS = ("gpu.nvml", "gpu.count", "gpu.fabric", "gpu.ecc", "gpu.recovery_action", "gpu.mig",
              "gpu.compute_mode", "gpu.persistence", "gpu.clocks", "gpu.pcie")  # fmt: skip
BEGIN, END = "<!-- BEGIN gpu-health-bench -->", "<!-- END gpu-health-bench -->"
HEALTH_ONLY = (["nvidia-smi", "-L"], ["systemctl", "is-active", probe_gpu.FABRIC_MANAGER_UNIT])


def _without_health(run: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """run_command that does not run the calls only the health checks need."""

    def skip(argv: list[str], *args: Any, **kwargs: Any) -> dict[str, Any]:
        if argv in HEALTH_ONLY:
            return {"found": True, "rc": 0, "out": "", "err": "", "timed_out": False}
        return run(argv, *args, **kwargs)

    return skip


def doctor_gpu_part(with_health: bool) -> tuple[float, list[str]]:
    """Seconds for the probe's nvidia part + parse + the GPU checks, and the ids that did not PASS."""
    request = {"proc_driver_version_path": str(gpu.PROC_VERSION_DIR / SCENARIO)}
    started = time.perf_counter()
    if with_health:
        raw = probe_gpu.gather_nvidia(request)
    else:
        with (mock.patch.object(probe_gpu, "health_fields", lambda known: []),
              mock.patch.object(probe_gpu, "run_command", _without_health(probe_gpu.run_command))):  # fmt: skip
            raw = probe_gpu.gather_nvidia(request)
    python = PythonFacts(executable="/usr/bin/python3", version="3.11.2", prefix="/usr")
    facts = HostFacts(probe_version=1, python=python, nvidia=parse_nvidia(raw))
    specs = [s for s in all_checks() if s.id.startswith("gpu.") and (with_health or s.id not in HEALTH_IDS)]
    results = run_checks(CheckContext(host=None, facts=facts), specs)
    seconds = time.perf_counter() - started
    return seconds, [r.id for r in results if r.status is not Status.PASS]


def measure(rounds: int) -> dict[str, list[float]]:
    """Interleaved rounds (the first case alternates) after one untimed warm-up that fills the field cache."""
    samples: dict[str, list[float]] = {"with": [], "without": [], "added": []}
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        (base / "bin").mkdir()
        (base / "bin" / "nvidia-smi").symlink_to(gpu.NVIDIA_SMI)
        env = {"PATH": f"{base / 'bin'}:{os.environ['PATH']}", "HOME": str(base),
               "SPECOPS_NVIDIA_SMI_SCENARIO": SCENARIO, "SPECOPS_NVIDIA_SMI_HOLDERS": str(base / "none")}  # fmt: skip
        with mock.patch.dict(os.environ, env):
            for with_health in (True, False):
                _, problems = doctor_gpu_part(with_health)
                if problems != ["gpu.arch_vs_cuda"] and problems != []:
                    raise SystemExit(f"the healthy 8-GPU host did not pass: {problems}")
            for index in range(rounds):
                order = (True, False) if index % 2 == 0 else (False, True)
                times = {case: doctor_gpu_part(case)[0] for case in order}
                samples["with"].append(times[True])
                samples["without"].append(times[False])
                samples["added"].append(times[True] - times[False])
    return samples


def report(samples: dict[str, list[float]], load_before: tuple[float, ...]) -> str:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = " / ".join(f"{value:.2f}" for value in load_before)
    after = " / ".join(f"{value:.2f}" for value in os.getloadavg())
    lines = [
        f"Run `python -m bench.gpu_health_bench --rounds {len(samples['added'])}` on {now}.",
        "",
        f"- machine: {platform.node()}: {os.cpu_count()} cores, Python {platform.python_version()}",
        f"- load average (1/5/15 min): {load} before, {after} after",
        "",
        "| case (8 × H200 NVSwitch, driver 590, nvidia-smi test double) | median ms | min ms | max ms |",
        "|---|---:|---:|---:|",
    ]
    labels = {"with": "probe nvidia part + parse + GPU checks, with the health query",
              "without": "the same without the health query, `-L`, the fabric manager and the ten health checks",
              "added": "**added by the GPU health checks** (per-round difference)"}  # fmt: skip
    for key, label in labels.items():
        values = samples[key]
        lines.append(f"| {label} | {statistics.median(values) * 1000:.0f} | {min(values) * 1000:.0f} | "
                     f"{max(values) * 1000:.0f} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--write", type=Path, help="replace the gpu-health-bench block of this file")
    options = parser.parse_args()
    load_before = os.getloadavg()
    body = report(measure(options.rounds), load_before)
    print(body, end="")
    if options.write:
        write_section(options.write, body, BEGIN, END)


if __name__ == "__main__":
    main()
