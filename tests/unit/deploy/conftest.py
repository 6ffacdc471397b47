"""Fixtures of the deploy tests (tests/unit/deploy/world.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.deploy.world import World, make_world


@pytest.fixture
def world(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> World:
    return make_world(tmp_path, capsys, monkeypatch)
