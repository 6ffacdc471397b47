"""`specops doctor --list` names every check an operator can meet, the engine checks of `doctor ENGINE` too:
their ids are what `--only`, `--skip-check` and docs/checks.md use."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from specops.doctor.engine_checks import ENGINE_CHECK_IDS
from tests.unit.clirun import run_cli

CHECKS_DOC = Path(__file__).parents[3] / "docs" / "checks.md"


def test_the_list_ends_with_the_engine_checks_each_described(capsys: pytest.CaptureFixture[str]) -> None:
    listed = run_cli(capsys, "doctor", "--list", "--json")
    assert listed.code == 0, listed.err
    checks = json.loads(listed.out)["checks"]
    engine = [check for check in checks if check["id"].startswith("engine.")]
    assert [check["id"] for check in engine] == list(ENGINE_CHECK_IDS)
    assert all(check["description"].startswith("a multi-node engine") for check in engine), engine
    text = run_cli(capsys, "doctor", "--list")
    assert re.search(r"^engine\.dist_reach +a multi-node engine: every other rank connects", text.out, re.M)


def test_every_engine_check_has_its_section_in_the_checks_doc() -> None:
    documented = set(re.findall(r"`(engine\.[a-z_]+)`", CHECKS_DOC.read_text(encoding="utf-8")))
    assert set(ENGINE_CHECK_IDS) <= documented, sorted(set(ENGINE_CHECK_IDS) - documented)
