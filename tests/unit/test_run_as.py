"""run_as: a strict user name (nothing can reach a unit directive or a shell), and the unit it renders."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from specops.errors import ConfigError
from tests.unit.clirun import run_cli
from tests.unit.test_config_errors import VALID_HOST
from tests.unit.test_render_golden import systemd_verify

BAD_NAMES = ['""', '"root\\nExecStartPre=/bin/sh"', '"sg lang"', '"1000"', '"-u"', '"a;b"', '"$(id)"', '"%n"',
             '"user@x"', '"x' + "y" * 31 + '"', "1", "true", '["sglang"]']  # fmt: skip


@pytest.mark.parametrize("key", ["run_as", "run_as_groups"])
@pytest.mark.parametrize("value", BAD_NAMES)
def test_a_bad_user_or_group_name_is_refused_at_load(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path], key: str, value: str
) -> None:
    if key == "run_as_groups":
        value = f"[{value}]"
    write_config(VALID_HOST + 'run_as = "sglang"\n' * (key != "run_as") + f"{key} = {value}\n")
    result = run_cli(capsys, "config", "check")
    assert result.code == 3, result.out + result.err
    assert result.err.startswith(f"error: specops.toml: hosts.llm-two.{key}"), result.err
    assert "Traceback" not in result.err


def test_groups_without_a_user_are_refused(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    write_config('[defaults]\nrun_as_groups = ["video"]\n' + VALID_HOST)
    result = run_cli(capsys, "config", "check")
    assert result.code == 3
    assert result.err.splitlines() == [
        "error: specops.toml: hosts.llm-two.run_as_groups: set without run_as (the engine runs as root); set run_as too",
        f"hint: {ConfigError.default_hint}",
    ]


def _rendered(capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path], extra: str) -> str:
    host = VALID_HOST.replace("/opt/venv/bin/python", "/usr/bin/python3")  # systemd-analyze wants it to exist
    write_config('[defaults]\nrun_as = "sglang"\n' + host + extra)
    result = run_cli(capsys, "render", "llm-two")
    assert result.code == 0, result.err
    return result.out


def test_the_unit_runs_the_engine_as_the_user_with_the_device_groups_and_keeps_the_hardening(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path], tmp_path: Path
) -> None:
    unit = _rendered(capsys, write_config, 'run_as_groups = ["video", "render"]\n')
    lines = unit.splitlines()
    assert [line for line in lines if line.startswith(("User=", "Group=", "SupplementaryGroups="))] == [
        "User=sglang",
        "Group=sglang",
        "SupplementaryGroups=video render",
    ]
    assert {"NoNewPrivileges=yes", "ProtectSystem=full", "PrivateTmp=yes"} <= set(lines)
    if shutil.which("systemd-analyze"):
        verified = systemd_verify(unit, "sglang.service", tmp_path)
        assert verified.returncode == 0, verified.stderr


def test_without_groups_no_supplementary_groups_line(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    unit = _rendered(capsys, write_config, "")
    assert "User=sglang" in unit.splitlines()
    assert "SupplementaryGroups" not in unit
