"""The nvidia-smi TEST DOUBLE, the recorded outputs it replays, and per-scenario /proc/driver/nvidia/version texts.

Place `NVIDIA_SMI` on a test host's PATH (e.g. /usr/local/bin/nvidia-smi, next to a copy of
`SCENARIOS_JSON` and `RECORDED_DIR`, or set SPECOPS_NVIDIA_SMI_DATA) and choose the scenario by writing its
name to /etc/specops-testbed/nvidia-smi.scenario (or env SPECOPS_NVIDIA_SMI_SCENARIO). `no-driver` makes it
fail like a host whose driver is not loaded (exit 9; it has no /proc version file). On a test host, switch with
drift.play_nvidia_smi_scenario: it also renews the double's mtime, as a driver change replaces nvidia-smi (the
probe keys its cached field list by that file where /proc/driver/nvidia/version is missing).

recorded/ holds short excerpts of real nvidia-smi and kernel-log output, re-typed, each file opening with
a `#` header that names its public source (repo: path @commit, or issue). The double replays them where a
scenario names them; tests compare its output with them byte for byte. What no recording shows (UUIDs, the
bus ids of GPUs other than the recorded one, dates, build dates) is made up and plausible.

Scenarios, with what each shows and its source (the "source" key in scenarios.json says the same):

- h100x8-570, h100x8-580, h200x2-580, v100x1-580: healthy hosts, driver 570/580 (the first scenarios).
- h100x2-570-busy: another team's process holds 61 GiB of GPU 0.
- no-driver: the driver is not loaded (exit 9, "couldn't communicate with the NVIDIA driver").
- h200x8-590-nvswitch: healthy 8x H200 on NVSwitch, driver 590.48.01: no warning at all. The health values of
  recorded/query-health-h200-590.48.01.csv (GPU 4 is the recorded GPU, bus 83) and that driver's real field
  list; fabric manager unit active.
- h100x8-535-old-fields: driver 535.129.03 with its real --help-query-gpu list (recorded/help-query-gpu-535.129.03.txt;
  the lists of 580.173.02, 590.48.01 and 595.80 are recorded too):
  no remapped_rows.* and no gpu_recovery_action, so checks that need them have nothing to read.
- nvml-mismatch: every nvidia-smi call prints recorded/nvml-mismatch.txt and exits 18; /proc shows the loaded
  580.173.02 module while the library is 580.178 (zzzhouuu/truenas-nvidia-drivers#19).
- h100x8-gpu-lost: GPU 3 (bus 5D) fell off the bus: bare nvidia-smi prints only the recorded "GPU is lost" line
  (recorded/gpu-lost.txt); -L and --query-gpu list the other 7 and then that line; exit 15 (NVML_ERROR_GPU_IS_LOST).
- h100x8-mig: MIG enabled on every GPU; remapped_rows read [N/A] (recorded/query-health-h100-mig-590.48.01.csv).
- h100x8-remap-pending: GPU 2 has a row remap pending (thamada/gls A100SXMx4_smi.py shows Pending Yes).
- h100x8-remap-failure: GPU 5 reports remapped_rows.failure Yes (the field's bad value; no public recording found).
- h100x8-ecc-volatile: GPU 1 has 1 uncorrectable ECC error since the driver loaded (and in its lifetime).
- h100x8-ecc-aggregate: GPU 1 had 1 uncorrectable ECC error in its lifetime, none since the driver loaded
  (thamada/gls GH200_smi.py: aggregate DRAM Uncorrectable 1).
- h100x8-recovery-reset: GPU 6 reports gpu_recovery_action Reset and shows "ERR!" in the table's Fan column
  (recorded/err-table-rtx4000ada.txt, utkuozdemir/nvidia_gpu_exporter#393).
- h200x8-fabric-in-progress: fabric.state In Progress on every GPU, fabric manager unit failed
  (NVIDIA/gpu-operator#2511; NVIDIA/NVSentinel#883, #889).
- h200x8-fabric-insufficient: fabric.state Completed but fabric.status Insufficient Resources (Azure/azhpc-images#506).
- l40sx4-persistence-off: 4x L40S, driver 595.80: persistence Disabled, fabric N/A, no fabric manager unit
  (recorded/query-health-l40s-595.80.csv, recorded/help-query-gpu-595.80.txt).
- h100x8-compute-prohibited / h100x8-exclusive-process: compute_mode Prohibited / Exclusive_Process on every GPU.
- rtx-x4-of-x8: one RTX 4060 Ti at PCIe x4 of its max x8 (thamada/gls RTX4060Ti_smi.py).
- h100x8-hw-slowdown: GPU 3 has HW Slowdown and HW Power Brake Slowdown Active (leptonai/gpud#330).
- h100x8-stray-procs: /root/tools/memhog (2) and ./gpu_burn hold memory on GPU 0
  (recorded/compute-apps-h100-load-590.48.01.csv).

Kernel-journal recordings for the Xid checks (old, new and free-text formats, with benign neighbours):
recorded/xid-119-gsp-timeout.log, recorded/xid-79-fallen-off-bus.log, recorded/xid-old-and-new-format.log; and the
kernel's side of the NVML mismatch: recorded/nvrm-api-mismatch.log.
"""

from __future__ import annotations

import json
from pathlib import Path

GPU_DIR = Path(__file__).resolve().parent
NVIDIA_SMI = GPU_DIR / "nvidia-smi"
SCENARIOS_JSON = GPU_DIR / "scenarios.json"
PROC_VERSION_DIR = GPU_DIR / "proc-driver-nvidia-version"
RECORDED_DIR = GPU_DIR / "recorded"
SCENARIO_FILE = "/etc/specops-testbed/nvidia-smi.scenario"
FABRIC_MANAGER_UNIT = "nvidia-fabricmanager.service"


def scenario_names() -> list[str]:
    return sorted(json.loads(SCENARIOS_JSON.read_text()))


def scenario(name: str) -> dict[str, object]:
    scenarios: dict[str, dict[str, object]] = json.loads(SCENARIOS_JSON.read_text())
    return scenarios[name]


def proc_version_text(scenario: str) -> str | None:
    """Text for /proc/driver/nvidia/version in this scenario; None where no driver is loaded."""
    path = PROC_VERSION_DIR / scenario
    return path.read_text() if path.exists() else None


def recorded_body(file_name: str) -> str:
    """A recorded file without its `#` source header: the bytes the real tool printed."""
    lines = (RECORDED_DIR / file_name).read_text().splitlines(keepends=True)
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "".join(lines)


def fabric_manager_state(name: str) -> str:
    """`active`, `failed` or `absent`: the nvidia-fabricmanager.service a host of this scenario has."""
    return str(scenario(name).get("fabric_manager", "absent"))


def fabric_manager_unit(state: str) -> str:
    """A tiny real unit named like NVIDIA's: it keeps running (active) or exits 1 at start (failed)."""
    command = "/bin/sleep infinity" if state == "active" else "/bin/false"
    kind = "simple" if state == "active" else "oneshot"
    return (
        "[Unit]\nDescription=specops testbed stand-in for NVIDIA fabric manager (TEST DOUBLE)\n\n"
        f"[Service]\nType={kind}\nExecStart={command}\n"
    )


def scenarios_with(folder: Path, name: str, **changes: object) -> Path:
    """A copy of scenarios.json in folder where scenario `name` has these keys changed (point
    SPECOPS_NVIDIA_SMI_DATA at it): a variation of a recorded scenario without a new entry."""
    scenarios = json.loads(SCENARIOS_JSON.read_text())
    scenarios[name] = {**scenarios[name], **changes}
    path = folder / "scenarios-variant.json"
    path.write_text(json.dumps(scenarios))
    recorded = folder / "recorded"
    if not recorded.exists():
        recorded.symlink_to(RECORDED_DIR)
    return path
