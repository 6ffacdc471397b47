"""The nvidia-smi double replays real recorded outputs byte for byte, and each recording names its source."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from specops.remote.probe import gpu as probe_gpu
from tests.testbed import gpu

pytestmark = pytest.mark.testbed  # the test bed's own test: outside the fast suite (pytest -m 'not testbed')

FIRST_SCENARIOS = {"h100x8-570", "h100x8-580", "h200x2-580", "h100x2-570-busy", "v100x1-580", "no-driver"}
HELP_HEADER = 'List of valid properties to query for the switch "--query-gpu":'
NEW_SCENARIOS = sorted(set(gpu.scenario_names()) - FIRST_SCENARIOS)


def smi(scenario: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "SPECOPS_NVIDIA_SMI_SCENARIO": scenario,
        "SPECOPS_NVIDIA_SMI_HOLDERS": "/nonexistent",
    }
    return subprocess.run([str(gpu.NVIDIA_SMI), *args], capture_output=True, text=True, env=env, timeout=10)


def recorded_query(file_name: str) -> tuple[list[str], list[str]]:
    """The argv a recorded --query-* excerpt was taken with (its last header line) and its rows."""
    header = [
        line for line in (gpu.RECORDED_DIR / file_name).read_text().splitlines() if line.startswith("# nvidia-smi")
    ]
    return header[-1][len("# nvidia-smi ") :].split(), gpu.recorded_body(file_name).splitlines()


def test_every_recording_names_its_source_first() -> None:
    files = sorted(gpu.RECORDED_DIR.iterdir())
    assert len(files) >= 10
    for path in files:
        assert path.read_text().startswith("# source: "), path.name


@pytest.mark.parametrize("name", NEW_SCENARIOS)
def test_every_new_scenario_names_its_source_and_real_recorded_files(name: str) -> None:
    spec = gpu.scenario(name)
    assert spec["source"]
    for key in ("help_fields", "error"):
        if key in spec:
            assert (gpu.RECORDED_DIR / str(spec[key])).exists()
    assert gpu.fabric_manager_state(name) in {"active", "failed", "absent"}


@pytest.mark.parametrize("args", [(), ("-L",), ("--query-gpu=index", "--format=csv"), ("--help-query-gpu",)])
def test_nvml_mismatch_prints_the_recorded_text_and_exits_18_for_every_call(args: tuple[str, ...]) -> None:
    done = smi("nvml-mismatch", *args)
    assert (done.returncode, done.stdout) == (18, gpu.recorded_body("nvml-mismatch.txt"))
    assert done.stdout == "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.178\n"
    proc = gpu.proc_version_text("nvml-mismatch")
    assert proc and "Kernel Module  580.173.02  " in proc  # the loaded module is not the library's version


@pytest.mark.parametrize(
    ("name", "listing"),
    [
        ("h100x8-535-old-fields", "help-query-gpu-535.129.03.txt"),
        ("h200x8-590-nvswitch", "help-query-gpu-590.48.01.txt"),
        ("l40sx4-persistence-off", "help-query-gpu-595.80.txt"),
    ],
)
def test_help_query_gpu_lists_the_recorded_fields_of_that_driver(name: str, listing: str) -> None:
    out = smi(name, "--help-query-gpu").stdout.splitlines()
    assert out[:2] == [HELP_HEADER, ""]
    assert [line for line in out if line.startswith('"')] == gpu.recorded_body(listing).splitlines()


def test_the_535_driver_fails_a_query_for_a_field_it_lacks_and_answers_the_older_alias() -> None:
    for field in ("remapped_rows.pending", "gpu_recovery_action"):
        done = smi("h100x8-535-old-fields", f"--query-gpu=index,{field}", "--format=csv")
        assert (done.returncode, done.stdout) == (2, f'Field "{field}" is not a valid field to query.\n\n')
    older = smi("h100x8-535-old-fields", "--query-gpu=clocks_throttle_reasons.hw_slowdown", "--format=csv,noheader")
    assert older.stdout == "Not Active\n" * 8


@pytest.mark.parametrize(
    ("name", "recording", "index", "same_from"),
    [
        ("h200x8-590-nvswitch", "query-health-h200-590.48.01.csv", 4, 1),  # GPU 4 is the recorded GPU (bus 83)
        ("l40sx4-persistence-off", "query-health-l40s-595.80.csv", 0, 0),
        ("h100x8-mig", "query-health-h100-mig-590.48.01.csv", 0, 2),  # the recording was on bus 00:09.0 (a VM)
    ],
)
def test_health_rows_are_the_recorded_values(name: str, recording: str, index: int, same_from: int) -> None:
    argv, rows = recorded_query(recording)
    out = smi(name, *argv).stdout.splitlines()
    assert out[index].split(", ")[same_from:] == rows[0].split(", ")[same_from:]
    tails = {line.split(", ", 2)[2] for line in out}
    assert len(tails) == 1  # every GPU of the host reads the same


def test_stray_processes_are_the_recorded_load() -> None:
    argv, rows = recorded_query("compute-apps-h100-load-590.48.01.csv")
    assert smi("h100x8-stray-procs", *argv).stdout.splitlines() == rows


def test_a_lost_gpu_is_missing_from_every_listing_and_named_in_the_recorded_line() -> None:
    lost = gpu.recorded_body("gpu-lost.txt").replace("0000:02:00.0", "0000:5D:00.0")
    bare = smi("h100x8-gpu-lost")
    assert (bare.returncode, bare.stdout) == (15, lost)
    listing = smi("h100x8-gpu-lost", "-L")
    assert listing.returncode == 15
    assert [line.split(":")[0] for line in listing.stdout.splitlines()[:-1]] == [
        f"GPU {i}" for i in (0, 1, 2, 4, 5, 6, 7)
    ]
    assert listing.stdout.splitlines()[-1] + "\n" == lost


def test_the_table_of_a_590_driver_opens_like_the_recording() -> None:
    table = smi("h200x8-590-nvswitch").stdout.splitlines()
    assert table[2] == "| NVIDIA-SMI 590.48.01              Driver Version: 590.48.01      CUDA Version: 13.1     |"
    assert table[3].startswith("+-----")
    assert "|   4  NVIDIA H200                    On  |   00000000:83:00.0 Off |                    0 |" in table
    l40s = smi("l40sx4-persistence-off").stdout
    assert "|   0  NVIDIA L40S                    Off |   00000000:01:00.0 Off |                    0 |" in l40s


def test_a_gpu_whose_driver_asks_for_a_reset_shows_err_in_the_table_like_the_recording() -> None:
    recorded = gpu.recorded_body("err-table-rtx4000ada.txt").splitlines()
    bad = [line for line in recorded if line.startswith("|ERR!")]
    table = smi("h100x8-recovery-reset").stdout.splitlines()
    ours = [line for line in table if line.startswith("|ERR!")]
    assert len(bad) == len(ours) == 1
    assert table[table.index(ours[0]) - 1].startswith("|   6  NVIDIA H100 80GB HBM3")
    assert len(ours[0]) == len(bad[0]) and ours[0].index("C ") == bad[0].index("C ")  # same columns
    healthy = smi("h100x8-mig").stdout
    assert "ERR!" not in healthy


@pytest.mark.parametrize("name", [n for n in NEW_SCENARIOS if "error" not in gpu.scenario(n)])
def test_the_probe_health_query_is_accepted_in_every_new_scenario(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe asks only for fields the driver lists; the double must answer that query for all GPUs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").symlink_to(gpu.NVIDIA_SMI)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("SPECOPS_NVIDIA_SMI_SCENARIO", name)
    monkeypatch.setenv("SPECOPS_NVIDIA_SMI_HOLDERS", "/nonexistent")
    facts = probe_gpu.gather_nvidia({"proc_driver_version_path": str(gpu.PROC_VERSION_DIR / name)})
    health = facts["query_health"]
    assert isinstance(health, dict), facts
    spec = gpu.scenario(name)
    gpus = spec["gpus"]
    assert isinstance(gpus, dict)
    lost = "lost_gpu" in spec
    assert len([line for line in health["out"].splitlines() if line[:1].isdigit()]) == gpus["count"] - lost, health
    assert health["rc"] == (15 if lost else 0)


def test_the_xid_recordings_hold_the_three_formats() -> None:
    text = "".join(gpu.recorded_body(name) for name in sorted(os.listdir(gpu.RECORDED_DIR)) if name.startswith("xid-"))
    assert re.search(r"NVRM: Xid \(0000:[0-9a-f]{2}:00\): \d+, ", text)  # old
    assert re.search(r"NVRM: Xid \(PCI:0000:9b:00\): 119, pid=\d+, name=nvidia-smi, ", text)  # new
    assert re.search(r"NVRM: Xid \(PCI:0000:[0-9a-f]{2}:00\): 79, pid='<unknown>', name=<unknown>, ", text)
    assert "NVRM: fallen off the bus and is not responding to commands." in text  # free text, no Xid line


def test_the_kernel_side_of_the_mismatch_names_both_versions() -> None:
    text = gpu.recorded_body("nvrm-api-mismatch.log")
    assert re.search(
        r"NVRM: API mismatch: the client has the version ([\d.]+), but\n\s+NVRM: this kernel module has", text
    )


@pytest.mark.parametrize(
    ("listing", "lacking"),
    [
        ("help-query-gpu-535.129.03.txt", {"remapped_rows.pending", "remapped_rows.failure", "gpu_recovery_action"}),
        ("help-query-gpu-580.173.02.txt", set()),
        ("help-query-gpu-590.48.01.txt", set()),
        ("help-query-gpu-595.80.txt", set()),
    ],
)
def test_which_health_fields_each_recorded_driver_lists(listing: str, lacking: set[str]) -> None:
    names = set(probe_gpu.help_fields(gpu.recorded_body(listing)))
    wanted = {field for field in probe_gpu.HEALTH_FIELDS if not field.startswith("clocks_throttle_reasons.")}
    assert wanted - names == lacking
    assert "clocks_throttle_reasons.hw_slowdown" in names  # still answered as the older alias
