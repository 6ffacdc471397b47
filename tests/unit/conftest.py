"""Unit-test fixtures: a temporary config folder, with cwd moved into it so discovery is exercised."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.unit.needs import built_host_venv, need_program
from tests.unit.strict import _loopback_only, _loopback_only_session  # noqa: F401 - autouse, off unless strict

# Fixtures that download (torch wheels, SGLang) or start the test engines: only tests marked `testbed` may use them,
# so the fast suite (-m "not testbed and not corpus") needs no network and no root.
BUILDING_FIXTURES = frozenset({"host_venv", "real_sglang", "testbed_python"})
UNIT_DIR = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Refuse a unit test outside `testbed` that asks for a building fixture (it would download in the fast suite)."""
    wrong = [
        f"{item.nodeid} uses {', '.join(sorted(BUILDING_FIXTURES & set(getattr(item, 'fixturenames', ()))))}"
        for item in items
        if item.path.is_relative_to(UNIT_DIR)
        and BUILDING_FIXTURES & set(getattr(item, "fixturenames", ()))
        and item.get_closest_marker("testbed") is None
    ]
    if wrong:
        raise pytest.UsageError(
            "these unit tests download or build but are not marked testbed (the fast suite must not): "
            + "; ".join(wrong)
            + " - mark them @pytest.mark.testbed, or use the host_venv_built fixture (skips when not built)"
        )


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


@pytest.fixture(scope="session")
def ffmpeg() -> str:
    """The ffmpeg program (Debian 12's FFmpeg 5, whose libraries torchcodec's core5 loads); skips without it."""
    return need_program("ffmpeg", "ffmpeg")


@pytest.fixture(scope="session")
def host_venv_built() -> Path:
    """The hosts' venv (torch 2.13 CPU + torchcodec 0.13.0) if already built: the fast suite never downloads it."""
    return built_host_venv()


@pytest.fixture(autouse=True)
def _no_signal_left_pending() -> Iterator[None]:
    """A test that raised a signal's interruption and caught it itself (a real command ends at the CLI, which
    answers it) must not leave it pending for the next test's command in this process."""
    yield
    import sys

    interrupts = sys.modules.get("specops.ops.interrupts")
    if interrupts is not None:
        interrupts.answered()
