"""Fixtures for the testbed's own tests: the hosts' venv python and the model fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.testbed.models import write_model_fixtures

HOST_VENV_PYTHON = Path("/var/cache/specops-testbed/venv/bin/python")
SCRATCH_VENV_PYTHON = Path("/tmp/engine-venv/bin/python")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "testbed_venv: runs the test engine with the hosts' venv python (torch + torchcodec); "
        "set SPECOPS_TESTBED_PYTHON (required when CI=true)",
    )


@pytest.fixture(scope="session")
def testbed_python() -> str:
    """The python of a venv with torch 2.13 CPU + torchcodec 0.13.0, never silently missing in CI."""
    configured = os.environ.get("SPECOPS_TESTBED_PYTHON")
    if configured:
        if not os.access(configured, os.X_OK):
            pytest.fail(f"SPECOPS_TESTBED_PYTHON={configured} is not an executable python")
        return configured
    if os.environ.get("CI") == "true":
        pytest.fail(
            "CI=true but SPECOPS_TESTBED_PYTHON is unset: build the hosts' venv "
            "(torch==2.13.0 torchcodec==0.13.0) and point SPECOPS_TESTBED_PYTHON at its python"
        )
    for candidate in (HOST_VENV_PYTHON, SCRATCH_VENV_PYTHON):
        if candidate.exists():
            return str(candidate)
    pytest.skip("no venv with torch+torchcodec: set SPECOPS_TESTBED_PYTHON")


@pytest.fixture(scope="session")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_model_fixtures(tmp_path_factory.mktemp("models"))
