"""Fixtures of the deploy tests (tests/unit/deploy/world.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specops.build.stage import StagedBuild, stage_build
from specops.config.loader import load_config
from specops.deploy.plan import HostPlan, plan_host
from tests.unit.deploy.scene import CONFIG, HOST, write_build
from tests.unit.deploy.world import World, make_world


@pytest.fixture
def world(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> World:
    return make_world(tmp_path, capsys, monkeypatch)


@pytest.fixture
def staged_and_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[StagedBuild, HostPlan]:
    """A staged build and its host's plan, for the plan's pure decisions (choose)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "specops.toml").write_text(CONFIG)
    staged = stage_build(write_build(tmp_path), [], tmp_path / "stage")
    return staged, plan_host(load_config(tmp_path / "specops.toml", tmp_path), HOST, None)
