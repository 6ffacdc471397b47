"""Fixtures for the testbed's own tests: the hosts' venv python and the model fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.testbed.models import write_model_fixtures


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "testbed_venv: runs the test engine with the hosts' venv python (torch + torchcodec); "
        "built/cached by tests.testbed.pyenv, or SPECOPS_TESTBED_PYTHON naming a venv python",
    )


def _has_torch_and_torchcodec(python: str) -> bool:
    """True when `python` belongs to a venv whose site-packages hold torch and torchcodec (no import)."""
    lib = Path(python).parent.parent / "lib"
    return any(
        (site / "torch").is_dir() and (site / "torchcodec").is_dir() for site in lib.glob("python3*/site-packages")
    )


@pytest.fixture(scope="session")
def testbed_python() -> str:
    """The hosts' venv python (torch 2.13 CPU + torchcodec 0.13.0); fails loudly rather than skipping.

    SPECOPS_TESTBED_PYTHON may name that venv's python directly. Otherwise (or when it names a bare
    base interpreter, which is what tests.testbed.pyenv reads it as) the cached hosts' venv is used,
    built on first use by tests.testbed.pyenv (about a minute).
    """
    configured = os.environ.get("SPECOPS_TESTBED_PYTHON")
    if configured and _has_torch_and_torchcodec(configured):
        return configured
    from tests.testbed import pyenv

    try:
        venv = pyenv.ensure_host_venv()
    except Exception as exc:  # the build's own message says which step failed
        pytest.fail(
            f"cannot get the hosts' venv (torch==2.13.0 torchcodec==0.13.0): {exc}; "
            "set SPECOPS_TESTBED_PYTHON to a venv python that has both"
        )
    return str(pyenv.venv_python(venv))


@pytest.fixture(scope="session")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_model_fixtures(tmp_path_factory.mktemp("models"))
