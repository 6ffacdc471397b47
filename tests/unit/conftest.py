"""Unit-test fixtures: a temporary config folder, with cwd moved into it so discovery is exercised."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

VALID_HOST = """\
[hosts.llm-two]
ssh = "root@llm-two"
python = "/opt/venv/bin/python"
model_path = "/models/target"
draft_model_path = "/models/draft"
profile = "ddtree"
"""


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder that is the current directory, with HOME and $SPECOPS_CONFIG isolated."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SPECOPS_CONFIG", raising=False)
    return tmp_path


@pytest.fixture
def write_config(config_dir: Path) -> Callable[[str], Path]:
    """Write specops.toml in the current directory and return its path."""

    def write(text: str) -> Path:
        path = config_dir / "specops.toml"
        path.write_text(text, encoding="utf-8")
        return path

    return write
