"""The nvidia-smi test double prints each scenario in nvidia-smi's formats."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.testbed.gpu import NVIDIA_SMI, proc_version_text, scenario_names
from tests.testbed.gpu import scenario as scenario_spec

pytestmark = pytest.mark.testbed  # the test bed's own test: outside the fast suite (pytest -m 'not testbed')

GPU_QUERY = "--query-gpu=index,name,driver_version,compute_cap,memory.total,memory.used"


def smi(
    *args: str, scenario: str | None = None, scenario_file: Path | None = None, holders: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "SPECOPS_NVIDIA_SMI_HOLDERS": str(holders or "/nonexistent")}
    if scenario:
        env["SPECOPS_NVIDIA_SMI_SCENARIO"] = scenario
    if scenario_file:
        env["SPECOPS_NVIDIA_SMI_SCENARIO_FILE"] = str(scenario_file)
    return subprocess.run([str(NVIDIA_SMI), *args], capture_output=True, text=True, env=env, timeout=10)


def test_is_marked_as_a_test_double() -> None:
    assert "TEST DOUBLE" in NVIDIA_SMI.read_text().splitlines()[2]
    assert os.access(NVIDIA_SMI, os.X_OK)


def _answers_every_call(name: str) -> bool:
    """Scenarios whose every call prints a table or rows (not the failures: no driver, mismatch, a lost GPU)."""
    spec = scenario_spec(name)
    return not (spec.get("fail") or spec.get("error") or "lost_gpu" in spec)


@pytest.mark.parametrize("scenario", [s for s in scenario_names() if _answers_every_call(s)])
def test_table_header_and_query_agree(scenario: str) -> None:
    table = smi(scenario=scenario)
    assert table.returncode == 0
    header = re.search(r"Driver Version: (.*?) .*CUDA Version: (\S+)", table.stdout)
    assert header
    rows = smi(GPU_QUERY, "--format=csv,noheader,nounits", scenario=scenario).stdout.splitlines()
    assert rows and all(row.split(", ")[2] == header.group(1) for row in rows)
    assert len(smi("-L", scenario=scenario).stdout.splitlines()) == len(rows)
    assert all(len(line) == 91 for line in table.stdout.splitlines() if line.startswith(("|", "+")))
    proc = proc_version_text(scenario)
    assert proc and f"Kernel Module  {header.group(1)}  " in proc


def test_driver_570_reports_cuda_12_8_and_580_cuda_13_0() -> None:
    assert "Driver Version: 570.124.06     CUDA Version: 12.8 " in smi(scenario="h100x8-570").stdout
    assert "Driver Version: 580.65.06      CUDA Version: 13.0 " in smi(scenario="h100x8-580").stdout


def test_query_gpu_csv_exact_lines() -> None:
    out = smi(GPU_QUERY, "--format=csv,noheader,nounits", scenario="h200x2-580").stdout
    assert out == "0, NVIDIA H200, 580.82.07, 9.0, 143771, 0\n1, NVIDIA H200, 580.82.07, 9.0, 143771, 0\n"
    with_header = smi("--query-gpu=index,memory.used", "--format=csv", scenario="h200x2-580").stdout
    assert with_header.splitlines()[:2] == ["index, memory.used [MiB]", "0, 0 MiB"]


def test_busy_gpu_shows_the_holder() -> None:
    apps = smi(
        "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader,nounits", scenario="h100x2-570-busy"
    )
    assert apps.stdout == "48213, /opt/other-team/venv/bin/python3, 61442\n"
    used = smi("--query-gpu=index,memory.used", "--format=csv,noheader,nounits", scenario="h100x2-570-busy")
    assert used.stdout == "0, 61442\n1, 0\n"
    assert "61442MiB /  81559MiB" in smi(scenario="h100x2-570-busy").stdout
    idle = smi(
        "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader,nounits", scenario="h100x8-570"
    )
    assert (idle.returncode, idle.stdout) == (0, "")


def test_list_gpus_and_bad_field() -> None:
    listing = smi("-L", scenario="h100x8-580").stdout.splitlines()
    assert len(listing) == 8
    assert re.fullmatch(r"GPU 7: NVIDIA H100 80GB HBM3 \(UUID: GPU-[0-9a-f-]+\)", listing[7])
    bad = smi("--query-gpu=bogus", "--format=csv", scenario="h100x8-580")
    assert bad.returncode == 2 and 'Field "bogus" is not a valid field to query.' in bad.stdout


def test_scenario_file_and_no_driver(tmp_path: Path) -> None:
    chosen = tmp_path / "nvidia-smi.scenario"
    chosen.write_text("v100x1-580\n")
    out = smi("--query-gpu=name,compute_cap", "--format=csv,noheader", scenario_file=chosen).stdout
    assert out == "Tesla V100-SXM2-32GB, 7.0\n"
    failed = smi(scenario="no-driver")
    assert failed.returncode == 9
    assert "couldn't communicate with the NVIDIA driver" in failed.stdout
    assert proc_version_text("no-driver") is None


def _holder(folder: Path, pid: int, start: str, gpus: list[int], mib: int) -> None:
    folder.mkdir(exist_ok=True)
    record = {"pid": pid, "start": start, "gpus": gpus, "used_memory": mib, "name": "/venv/bin/python3"}
    (folder / f"{pid}.json").write_text(json.dumps(record))


def test_a_live_holder_shows_on_its_gpus_and_a_dead_or_reused_pid_does_not(tmp_path: Path) -> None:
    holders = tmp_path / "holders"
    alive = subprocess.Popen(["sleep", "30"])
    try:
        start = (Path(f"/proc/{alive.pid}/stat").read_text().rsplit(")", 1)[1].split())[19]
        _holder(holders, alive.pid, start, [1], 60000)
        _holder(holders, os.getpid(), "1", [0], 5000)  # this pid, but another start time: a reused pid
        query = ("--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits")
        assert smi(*query, scenario="h200x2-580", holders=holders).stdout == f"{alive.pid}, 60000\n"
        used = smi("--query-gpu=index,memory.used", "--format=csv,noheader,nounits", scenario="h200x2-580",
                   holders=holders)  # fmt: skip
        assert used.stdout == "0, 0\n1, 60000\n"
    finally:
        alive.kill()
        alive.wait()
    assert smi(*query, scenario="h200x2-580", holders=holders).stdout == ""
