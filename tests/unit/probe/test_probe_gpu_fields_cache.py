"""The field list's cache where /proc/driver/nvidia/version is missing (containers, namespaces): keyed by the
nvidia-smi file PATH finds, so the list is asked once per nvidia-smi, again after it is replaced, and a list
the driver refuses is dropped.

The nvidia-smi here is a small shell script whose known fields live in a separate file, so a test can change
what "the driver" knows without touching the script (the stale-cache case) or replace the script (an upgrade).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specops.probe.parse_gpu import parse_health
from specops.remote.probe import gpu as probe_gpu

FIELDS = ["index", "pci.bus_id", "remapped_rows.pending", "remapped_rows.failure", "compute_mode"]
FAKE_SMI = """#!/bin/sh
# a stand-in for nvidia-smi: knows the fields listed in {fields}, logs every --help-query-gpu to {log}
case "$1" in
  --help-query-gpu)
    echo help >> '{log}'
    printf 'List of valid properties to query for the switch "--query-gpu":\\n\\n'
    for field in $(cat '{fields}'); do printf '"%s"\\nWhat it is.\\n\\n' "$field"; done ;;
  --query-gpu=*)
    asked=${{1#--query-gpu=}}
    for field in $(echo "$asked" | tr , ' '); do
      grep -qx "$field" '{fields}' || {{ printf 'Field "%s" is not a valid field to query.\\n\\n' "$field"; exit 2; }}
    done
    echo "$asked" | sed 's/[^,][^,]*/1/g' ;;
  *) echo "a fake nvidia-smi" ;;
esac
"""


class FakeSmi:
    """The fake nvidia-smi on PATH, the file of fields it knows, and the log of its --help-query-gpu calls."""

    def __init__(self, folder: Path) -> None:
        self.fields = folder / "known-fields.txt"
        self.log = folder / "help-calls.log"
        self.bin = folder / "bin"
        self.bin.mkdir()
        self.script = self.bin / "nvidia-smi"
        self.knows(FIELDS)
        self.script.write_text(FAKE_SMI.format(fields=self.fields, log=self.log))
        self.script.chmod(0o755)

    def knows(self, fields: list[str]) -> None:
        self.fields.write_text("\n".join(fields) + "\n")

    def help_calls(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0


@pytest.fixture
def smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSmi:
    """The fake first on PATH and a fresh HOME (the cache lives in ~/.cache/specops)."""
    fake = FakeSmi(tmp_path)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", f"{fake.bin}:{os.environ.get('PATH', '')}")
    return fake


def _probe(tmp_path: Path) -> dict[str, object]:
    """The nvidia section on a machine without /proc/driver/nvidia/version."""
    return probe_gpu.gather_nvidia({"proc_driver_version_path": str(tmp_path / "no-proc-driver-version")})


def _cached(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "home/.cache/specops").glob("nvidia-query-gpu-fields-*.txt"))


def test_without_proc_version_the_field_list_is_asked_once_per_nvidia_smi(smi: FakeSmi, tmp_path: Path) -> None:
    first = _probe(tmp_path)
    again = _probe(tmp_path)
    assert smi.help_calls() == 1
    assert first["help_query"] is not None and again["help_query"] is None
    assert again["health_fields"] == first["health_fields"] == FIELDS
    assert again["query_health"] == first["query_health"] and first["query_health"]["rc"] == 0  # type: ignore[index]
    [cache] = _cached(tmp_path)
    assert cache.name.startswith("nvidia-query-gpu-fields-smi-") and cache.read_text().split() == FIELDS


def test_a_replaced_nvidia_smi_is_asked_again(smi: FakeSmi, tmp_path: Path) -> None:
    """A driver upgrade replaces nvidia-smi: a new file (here: rewritten, newer mtime) means a new key."""
    _probe(tmp_path)
    smi.knows([field for field in FIELDS if field != "remapped_rows.failure"])
    smi.script.write_text(smi.script.read_text())
    stat = smi.script.stat()
    os.utime(smi.script, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    upgraded = _probe(tmp_path)
    assert smi.help_calls() == 2
    assert "remapped_rows.failure" not in upgraded["health_fields"]  # type: ignore[operator]
    assert upgraded["query_health"]["rc"] == 0  # type: ignore[index]


def test_the_same_file_behind_another_link_keeps_its_key(
    smi: FakeSmi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = probe_gpu.fields_cache_path(None)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "nvidia-smi").symlink_to(smi.script)
    monkeypatch.setenv("PATH", f"{linked}:{os.environ['PATH']}")
    assert key is not None and probe_gpu.fields_cache_path(None) == key


def test_a_cached_list_the_driver_refuses_is_dropped_and_read_again(smi: FakeSmi, tmp_path: Path) -> None:
    """A stale cache (the driver changed, nvidia-smi did not) costs one probe's health query, reported as nvidia-smi
    said it; the next probe asks --help-query-gpu again and the query works."""
    _probe(tmp_path)
    smi.knows([field for field in FIELDS if field != "remapped_rows.pending"])
    stale = _probe(tmp_path)
    health = parse_health(stale)
    assert health is not None and health.error == 'Field "remapped_rows.pending" is not a valid field to query.'
    assert _cached(tmp_path) == [] and smi.help_calls() == 1
    healed = _probe(tmp_path)
    assert smi.help_calls() == 2 and "remapped_rows.pending" not in healed["health_fields"]  # type: ignore[operator]
    assert healed["query_health"]["rc"] == 0  # type: ignore[index]


def test_no_nvidia_smi_on_path_keeps_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert probe_gpu.smi_identity() is None and probe_gpu.fields_cache_path(None) is None


def test_the_driver_version_is_the_key_where_proc_has_it(smi: FakeSmi) -> None:
    path = probe_gpu.fields_cache_path("590.48.01")
    assert path is not None and path.endswith("/.cache/specops/nvidia-query-gpu-fields-590.48.01.txt")
