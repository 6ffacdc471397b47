"""`specops diff` refuses an ambiguous request before touching any host or config."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.clirun import run_cli


@pytest.mark.parametrize("args", [["diff", "llm-one"], ["diff", "llm-one", "llm-two", "--release", "x"]])
def test_diff_needs_exactly_one_of_a_second_host_or_a_release(
    args: list[str], capsys: pytest.CaptureFixture[str], config_dir: Path
) -> None:
    result = run_cli(capsys, *args)
    assert result.code == 2
    assert "give either a second host or --release ID" in result.err
    assert "Traceback" not in result.err


def test_diagnose_of_an_unknown_host_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    write_config('[hosts.llm-one]\nssh = "root@llm-one"\npython = "/opt/venv/bin/python"\nmodel_path = "/m"\n')
    result = run_cli(capsys, "diagnose", "llm-two")
    assert result.code == 2
    assert "unknown host 'llm-two'" in result.err
