"""pytest fixture for real upstream SGLang (see realsglang.py); wired into conftests with one import line."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.testbed.pyenv import VenvBuildError
from tests.testbed.realsglang import ensure_real_sglang


@pytest.fixture(scope="session")
def real_sglang() -> Path:
    """The cache entry: build/, parser-build/ and venv/ (whose python imports the real parser).

    Under CI=true a build failure fails loudly (.ci/run builds it first, so that only happens on a broken
    machine); elsewhere the test is skipped with the reason.
    """
    try:
        return ensure_real_sglang(log=lambda msg: print(f"[real_sglang] {msg}", file=sys.__stderr__, flush=True))
    except (VenvBuildError, OSError) as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"real SGLang build failed under CI: {exc}", pytrace=False)
        pytest.skip(f"real SGLang unavailable: {exc}")
