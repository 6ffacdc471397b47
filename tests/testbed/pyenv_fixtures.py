"""pytest fixtures for the test hosts' Python environment (see pyenv.py).

Wired into tests/e2e/conftest.py with one import line. The venv is built once per set of pins and
cached across runs, so only the first run of a fresh machine pays the build (~45 s).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.testbed.pyenv import VenvBuildError, ensure_host_venv


def _progress(message: str) -> None:
    # pytest captures stdout/stderr; a minute-long silent build looks like a hang, so bypass it
    print(f"[host_venv] {message}", file=sys.__stderr__, flush=True)


@pytest.fixture(scope="session")
def host_venv() -> Path:
    """The cached venv (real torch CPU + torchcodec 0.13.0) every test host sees at the same path.

    Under CI=true a build failure fails the tests loudly: a skipped e2e suite would hide a broken
    machine setup. Elsewhere it skips with the reason, so a laptop without the wheels can still run
    the rest.
    """
    try:
        return ensure_host_venv(log=_progress)
    except (VenvBuildError, OSError) as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"host venv build failed under CI: {exc}", pytrace=False)
        pytest.skip(f"host venv unavailable: {exc}")
