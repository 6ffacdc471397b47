"""The nvidia-smi TEST DOUBLE and per-scenario /proc/driver/nvidia/version texts.

Place `NVIDIA_SMI` on a test host's PATH (e.g. /usr/local/bin/nvidia-smi, next to a copy of
`SCENARIOS_JSON`, or set SPECOPS_NVIDIA_SMI_DATA) and choose the scenario by writing its name to
/etc/specops-testbed/nvidia-smi.scenario (or env SPECOPS_NVIDIA_SMI_SCENARIO). `no-driver` makes it
fail like a host whose driver is not loaded (exit 9; it has no /proc version file).
"""

from __future__ import annotations

import json
from pathlib import Path

GPU_DIR = Path(__file__).resolve().parent
NVIDIA_SMI = GPU_DIR / "nvidia-smi"
SCENARIOS_JSON = GPU_DIR / "scenarios.json"
PROC_VERSION_DIR = GPU_DIR / "proc-driver-nvidia-version"
SCENARIO_FILE = "/etc/specops-testbed/nvidia-smi.scenario"


def scenario_names() -> list[str]:
    return sorted(json.loads(SCENARIOS_JSON.read_text()))


def proc_version_text(scenario: str) -> str | None:
    """Text for /proc/driver/nvidia/version in this scenario; None where no driver is loaded."""
    path = PROC_VERSION_DIR / scenario
    return path.read_text() if path.exists() else None


def scenarios_with(folder: Path, name: str, **changes: object) -> Path:
    """A copy of scenarios.json in folder where scenario `name` has these keys changed (point
    SPECOPS_NVIDIA_SMI_DATA at it): a variation of a recorded scenario without a new entry."""
    scenarios = json.loads(SCENARIOS_JSON.read_text())
    scenarios[name] = {**scenarios[name], **changes}
    path = folder / "scenarios-variant.json"
    path.write_text(json.dumps(scenarios))
    return path
