"""The probe's GPU health query: only fields the driver lists, learned once per driver version and cached."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from specops.remote.probe import gpu as probe_gpu
from tests.testbed import gpu

pytestmark = pytest.mark.usefixtures("smi_on_path")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME, so the field cache starts empty."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    return folder


def _gather(scenario: str) -> dict[str, object]:
    return probe_gpu.gather_nvidia({"proc_driver_version_path": str(gpu.PROC_VERSION_DIR / scenario)})


def test_help_lists_both_names_of_an_entry() -> None:
    text = 'List of valid properties:\n\n"pci.bus_id" or "gpu_bus_id"\nPCI bus id as "domain:bus".\n\n"index"\nx\n'
    assert probe_gpu.help_fields(text) == ["pci.bus_id", "gpu_bus_id", "index"]


def test_older_clock_names_only_when_the_newer_are_missing() -> None:
    both = {"index", "pci.bus_id", "clocks_event_reasons.hw_slowdown", "clocks_throttle_reasons.hw_slowdown"}
    assert probe_gpu.health_query(both) == "--query-gpu=index,pci.bus_id,clocks_event_reasons.hw_slowdown"
    old = {"index", "pci.bus_id", "clocks_throttle_reasons.hw_slowdown"}
    assert probe_gpu.health_query(old) == "--query-gpu=index,pci.bus_id,clocks_throttle_reasons.hw_slowdown"


def test_health_query_runs_with_every_field_and_the_fields_are_cached(
    home: Path, smi_on_path: Callable[[str], None]
) -> None:
    smi_on_path("h100x8-570")
    facts = _gather("h100x8-570")
    health = facts["query_health"]
    assert isinstance(health, dict) and health["rc"] == 0, health
    lines = health["out"].splitlines()
    assert len(lines) == 8 and lines[0].startswith("0, 00000000:18:00.0, No, No, 0, 0, None, Disabled")
    assert facts["help_query"] is not None
    cache = home / ".cache/specops/nvidia-query-gpu-fields-570.124.06.txt"
    assert "remapped_rows.failure" in cache.read_text().split()
    again = _gather("h100x8-570")
    assert again["help_query"] is None and again["query_health"] == health


def test_a_driver_without_some_fields_still_answers_the_rest(
    home: Path, smi_on_path: Callable[[str], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real driver fails the whole query for one unknown field; the probe leaves those fields out."""
    smi_on_path("h100x8-570")
    data = gpu.scenarios_with(
        tmp_path, "h100x8-570", missing_fields=["gpu_recovery_action", "fabric.state", "fabric.status"]
    )
    monkeypatch.setenv("SPECOPS_NVIDIA_SMI_DATA", str(data))
    facts = _gather("h100x8-570")
    health = facts["query_health"]
    assert isinstance(health, dict) and health["rc"] == 0, health
    assert "gpu_recovery_action" not in facts["known_fields"]  # type: ignore[operator]
    assert health["out"].splitlines()[0].startswith("0, 00000000:18:00.0, No, No, 0, 0, Disabled, Default")


def test_fabric_manager_state_and_gpu_list_come_in_the_same_answer(
    home: Path, smi_on_path: Callable[[str], None]
) -> None:
    smi_on_path("h200x2-580")
    facts = _gather("h200x2-580")
    listed = facts["list_gpus"]
    assert isinstance(listed, dict) and listed["out"].startswith("GPU 0: NVIDIA H200")
    assert "fabric_manager" in facts


def test_the_probe_returns_the_exact_fields_it_asked_so_columns_are_never_guessed(
    home: Path, smi_on_path: Callable[[str], None]
) -> None:
    smi_on_path("h100x8-535-old-fields")
    facts = _gather("h100x8-535-old-fields")
    fields = facts["health_fields"]
    health = facts["query_health"]
    assert isinstance(fields, list) and isinstance(health, dict) and health["rc"] == 0, health
    assert "gpu_recovery_action" not in fields and "remapped_rows.pending" not in fields
    assert fields[:2] == ["index", "pci.bus_id"]
    assert {len(line.split(", ")) for line in health["out"].splitlines()} == {len(fields)}
