"""Fixtures for release tests: a private hash cache, a copy of the test engine build, a local 'host'."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from specops.config.inventory import HostSpec
from specops.host.local import LocalHost
from tests.testbed.engine import BUILD_PYTHON


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own ~/.cache (XDG_CACHE_HOME), so hash-cache hits are the test's own."""
    cache = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


@pytest.fixture
def build(tmp_path: Path) -> Path:
    """A private copy of the test engine's python/ folder (tests may modify it)."""
    target = tmp_path / "sglang-checkout" / "python"
    shutil.copytree(BUILD_PYTHON, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target


@pytest.fixture
def spec(tmp_path: Path) -> HostSpec:
    """A host whose base_dir is in tmp and whose python is this interpreter (run through LocalHost)."""
    return HostSpec(name="local", ssh="local", python=sys.executable, model_path="/m", base_dir=str(tmp_path / "host"))


@pytest.fixture
def host() -> LocalHost:
    return LocalHost("local")
