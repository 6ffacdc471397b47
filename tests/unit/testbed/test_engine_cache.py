"""The test engine's compile cache: cold on the first start (it fills TRITON_CACHE_DIR), warm on the next."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.testbed.engine import BUILD_PYTHON

START = "from sglang.srt.testengine_cache import use_compile_cache; use_compile_cache()"


def _start(cache: Path | None) -> str:
    env = {"PYTHONPATH": str(BUILD_PYTHON), "PYTHONDONTWRITEBYTECODE": "1", "SGLANG_TESTENGINE_COMPILE_SECONDS": "0"}
    if cache is not None:
        env["TRITON_CACHE_DIR"] = str(cache)
    done = subprocess.run([sys.executable, "-c", START], env=env, capture_output=True, text=True, check=True)
    return done.stdout


def test_the_first_start_fills_the_cache_and_the_second_finds_it_warm(tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "triton"
    assert f"compile cache cold: compiling 4 kernels into {cache}" in _start(cache)
    assert len(list(cache.glob("*.cubin"))) == 4
    assert f"compile cache warm: 4 kernels loaded from {cache}" in _start(cache)


def test_without_a_cache_folder_it_says_nothing() -> None:
    assert _start(None) == ""
