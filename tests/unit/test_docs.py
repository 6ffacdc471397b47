"""The documentation stays true: generated reference tables match the models, the README's commands exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from specops.config.docs_reference import refresh

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.parametrize("name", ["configuration.md", "profiles.md", "exit-codes.md"])
def test_generated_tables_are_current(name: str) -> None:
    text = (ROOT / "docs" / name).read_text(encoding="utf-8")
    assert "BEGIN GENERATED" in text
    assert refresh(text) == text, "run `python -m specops.config.docs_reference` and commit docs/"


def test_readme_gives_the_two_setup_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "python3 -m pip install . && specops doctor --local" in readme
    assert "bash .ci/run" in readme
