"""What a few unit tests need from this machine beyond Python: root, a system program (ffmpeg, systemd-analyze,
unshare), the hosts' already-built venv (torch CPU + torchcodec).

Why: the fast suite (`pytest -m "not testbed and not corpus" tests/unit tests/test_layering.py`) must run on a
developer's machine with none of them: no root, no network, no ffmpeg. A test that needs one skips with the
reason there; under CI=true it FAILS instead, as the e2e fixtures do, so a skipped test never counts as a pass
in CI (which installs all of them, .ci/run).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.testbed import pyenv
from tests.testbed.testhost.fixtures import in_ci


def unavailable(reason: str) -> None:
    """Skip with the reason; under CI=true, fail with it (CI must run every test)."""
    if in_ci():
        pytest.fail(f"{reason} [CI=true: this test must run, not skip]", pytrace=False)
    pytest.skip(reason)


def need_root(why: str) -> None:
    if os.geteuid() != 0:
        unavailable(f"needs root: {why}")


def need_program(name: str, package: str) -> str:
    """The program's path on PATH; skip (fail in CI) when it is not there."""
    path = shutil.which(name)
    if path is None:
        unavailable(f"needs `{name}` on PATH (apt-get install {package})")
    assert path is not None
    return path


def built_host_venv() -> Path:
    """The hosts' venv when it is already built; never builds it (that downloads ~1 GB, and its cache folder,
    /var/cache/specops-testbed by default, is root's). CI builds it before the tests (.ci/run)."""
    entry = pyenv.env_dir()
    if not pyenv.is_complete(entry):
        unavailable(
            f"the hosts' venv is not built ({entry}): `python -m tests.testbed.pyenv ensure` builds it "
            f"(downloads torch; writes {pyenv.cache_dir()})"
        )
    return entry / "venv"
