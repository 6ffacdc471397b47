"""NvidiaFacts as the real probe sees them on the nvidia-smi test double: gather_nvidia runs the double (and a
stand-in `systemctl is-active` for the fabric manager), parse_nvidia reads its answers.

So the GPU health checks' unit tests go through the same code as a doctor: nvidia-smi's texts, the field list
learned from `--help-query-gpu`, the CSV the probe asked for, then the parser.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

from specops.probe.facts import NvidiaFacts
from specops.probe.parse import parse_nvidia
from specops.remote.probe import gpu as probe_gpu
from tests.testbed import gpu

SYSTEMCTL = '#!/bin/sh\n# stand-in for `systemctl is-active UNIT`\necho "$SPECOPS_TEST_FM_STATE"\n[ "$SPECOPS_TEST_FM_STATE" = active ]\n'


def probe_raw(scenario: str, fabric_manager: str | None = None, **changes: Any) -> dict[str, Any]:
    """The probe's raw nvidia section for a scenario of the double (changes: a variation, e.g. health=...).

    fabric_manager: what `systemctl is-active` answers; by default the scenario's unit (`absent`: a host without
    the unit, where systemd answers `inactive`)."""
    state = fabric_manager or gpu.fabric_manager_state(scenario)
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        (base / "bin").mkdir()
        (base / "home").mkdir()
        (base / "bin" / "nvidia-smi").symlink_to(gpu.NVIDIA_SMI)
        (base / "bin" / "systemctl").write_text(SYSTEMCTL)
        (base / "bin" / "systemctl").chmod(0o755)
        data = gpu.scenarios_with(base, scenario, **changes) if changes else gpu.SCENARIOS_JSON
        env = {
            "PATH": f"{base / 'bin'}:{os.environ.get('PATH', '')}",
            "HOME": str(base / "home"),
            "SPECOPS_NVIDIA_SMI_SCENARIO": scenario,
            "SPECOPS_NVIDIA_SMI_DATA": str(data),
            "SPECOPS_NVIDIA_SMI_HOLDERS": str(base / "holders"),
            "SPECOPS_TEST_FM_STATE": "inactive" if state == "absent" else state,
        }
        with mock.patch.dict(os.environ, env):
            return probe_gpu.gather_nvidia({"proc_driver_version_path": str(gpu.PROC_VERSION_DIR / scenario)})


def probe_nvidia(scenario: str, fabric_manager: str | None = None, **changes: Any) -> NvidiaFacts:
    """parse_nvidia(probe_raw(...)): the facts a doctor of that host would check."""
    return parse_nvidia({**probe_raw(scenario, fabric_manager, **changes)})
