"""Fixtures for the doctor's unit tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def private_code_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A doctor that runs the probe here compiles it through the host's compiled-code cache
    ($XDG_CACHE_HOME/specops/host-code): each test keeps its own, never this machine's ~/.cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
