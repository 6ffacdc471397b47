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


@pytest.mark.parametrize("names", [["fleet"], ["ds", "solo"], ["--all"]])
def test_restart_of_a_group_holding_an_engine_asks_every_host_and_rank(
    config_dir: Path, capsys: pytest.CaptureFixture[str], names: list[str]
) -> None:
    (config_dir / "specops.toml").write_text(UNREACHABLE + ENGINE + GROUPS)
    result = run_cli(capsys, "restart", *names, "--json")
    assert result.code == 4, result  # every host unreachable: each says so; no rank waits for another forever
    assert list(json.loads(result.out)["hosts"]) == ["ds-a", "ds-b", "solo"]


def test_a_rank_restarted_with_its_own_engine_is_refused(config_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (config_dir / "specops.toml").write_text(UNREACHABLE + ENGINE + GROUPS)
    result = run_cli(capsys, "restart", "fleet", "ds-b")
    assert result.code == 2, result
    assert "host 'ds-b' is rank 1 of engine 'ds' (ds-a, ds-b), which is named too: it would be restarted twice" in (
        result.err
    )


def test_a_rank_rolled_back_with_its_own_engine_is_refused(
    config_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (config_dir / "specops.toml").write_text(UNREACHABLE + ENGINE + '\n[groups]\nboth = ["ds", "ds-b", "solo"]\n')
    result = run_cli(capsys, "rollback", "both")
    assert result.code == 2, result
    assert "host 'ds-b' is rank 1 of engine 'ds' (ds-a, ds-b), which is named too: it would be rolled back twice" in (
        result.err
    )
