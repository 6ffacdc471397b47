"""`specops diff` refuses an ambiguous request before touching any host or config."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.clirun import run_cli


def test_diff_needs_exactly_one_of_a_second_host_or_a_release(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    both = run_cli(capsys, "diff", "llm-one", "llm-two", "--release", "x")  # refused before any config is read
    assert both.code == 2 and "give either a second host or --release ID" in both.err, both
    write_config('[hosts.llm-one]\nssh = "root@llm-one"\npython = "/opt/venv/bin/python"\nmodel_path = "/m"\n')
    neither = run_cli(capsys, "diff", "llm-one")  # a host (an engine alone compares its own ranks)
    assert neither.code == 2 and "give either a second host or --release ID" in neither.err, neither
    assert "Traceback" not in both.err + neither.err


def test_diagnose_of_an_unknown_host_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    write_config('[hosts.llm-one]\nssh = "root@llm-one"\npython = "/opt/venv/bin/python"\nmodel_path = "/m"\n')
    result = run_cli(capsys, "diagnose", "llm-two")
    assert result.code == 2
    assert "unknown host 'llm-two'" in result.err
