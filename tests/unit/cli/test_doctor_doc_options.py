"""docs/doctor.md's option table lists only what `specops doctor` accepts; -v is global (before the command)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.unit.clirun import run_cli

DOC = Path(__file__).resolve().parents[3] / "docs" / "doctor.md"


def test_every_documented_doctor_option_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    rows = re.findall(r"(?m)^\| `(-[-\w]+)", DOC.read_text(encoding="utf-8"))
    assert "--profile" in rows and "-v" not in rows
    help_text = run_cli(capsys, "doctor", "--help").out
    assert [row for row in rows if row not in help_text] == []


def test_verbose_goes_before_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "doctor", "--local", "-v").code == 2
    assert "specops -v doctor llm-two" in DOC.read_text(encoding="utf-8")
