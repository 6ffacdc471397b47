"""A group holding a multi-node engine and hosts, given to the commands that lock: every host's row, the engine's
ranks included (the engine is not refused as before)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.clirun import run_cli
from tests.unit.engines.test_engine_config import BASE, ENGINE

UNREACHABLE = BASE.replace("root@10.1.0.11", "root@127.0.0.1:1").replace("root@ds-b", "root@127.0.0.1:1")
UNREACHABLE = UNREACHABLE.replace("root@solo", "root@127.0.0.1:1")  # each host's row says what it found: nothing
GROUPS = '\n[groups]\nfleet = ["ds", "solo"]\n'


def test_lock_status_of_a_group_holding_an_engine_has_a_row_per_host_and_rank(
    config_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (config_dir / "specops.toml").write_text(UNREACHABLE + ENGINE + GROUPS)
    result = run_cli(capsys, "lock", "status", "fleet", "--json")
    assert result.code == 4, result  # unreachable hosts: read, not refused
    assert list(json.loads(result.out)["hosts"]) == ["ds-a", "ds-b", "solo"]
