"""launch_server's CLI refuses what SGLang refuses; these fail before torch is imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.testbed.engine import BUILD_PYTHON

pytestmark = pytest.mark.testbed  # the test bed's own test: outside the fast suite (pytest -m 'not testbed')


def launch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sglang.launch_server", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PYTHONPATH": str(BUILD_PYTHON), "PYTHONDONTWRITEBYTECODE": "1"},
    )


def test_unknown_flag_exits_2_like_argparse(models: dict[str, Path]) -> None:
    done = launch("--model-path", str(models["target"]), "--speculative-dflash-draft-window-size", "16")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0].startswith("usage: launch_server.py [-h] --model-path MODEL_PATH")
    assert "launch_server.py: error: unrecognized arguments: --speculative-dflash-draft-window-size 16" in done.stderr


def test_dflash_without_draft_path_fails_like_sglang(models: dict[str, Path]) -> None:
    done = launch("--model-path", str(models["target"]), "--speculative-algorithm", "DFLASH")
    assert done.returncode == 1
    assert done.stderr.rstrip().endswith("ValueError: DFLASH requires --speculative-draft-model-path.")


def _fails_with(message: str, *args: str) -> None:
    done = launch(*args)
    assert done.returncode == 1, done.stderr
    assert message in done.stderr.splitlines()[-1]


def test_speculative_validation_rules(models: dict[str, Path]) -> None:
    target, draft = str(models["target"]), str(models["draft"])
    dflash = ["--model-path", target, "--speculative-draft-model-path", draft]
    _fails_with(
        "AssertionError: --speculative-num-steps, --speculative-eagle-topk, and "
        "--speculative-num-draft-tokens must be either all set or all unset",
        "--model-path",
        target,
        "--speculative-algorithm",
        "NEXTN",
        "--speculative-num-steps",
        "3",
    )
    _fails_with(
        "must equal --speculative-num-draft-tokens",
        *dflash,
        "--speculative-algorithm",
        "DFLASH",
        "--speculative-dflash-block-size",
        "16",
        "--speculative-num-draft-tokens",
        "8",
    )
    _fails_with(
        "--speculative-draft-window-size must be >= the DFLASH block size (16), got 8",
        *dflash,
        "--speculative-algorithm",
        "DFLASH",
        "--speculative-draft-window-size",
        "8",
    )
    _fails_with("does not support dp attention", *dflash, "--speculative-algorithm", "DFLASH", "--enable-dp-attention")
    _fails_with("only supports pp_size == 1", *dflash, "--speculative-algorithm", "DFLASH", "--pp-size", "2")
    _fails_with(
        "DDTREE requires --page-size 1, got 16", *dflash, "--speculative-algorithm", "DDTREE", "--page-size", "16"
    )
    _fails_with(
        "DDTREE does not support --speculative-use-rejection-sampling",
        *dflash,
        "--speculative-algorithm",
        "DDTREE",
        "--speculative-use-rejection-sampling",
    )
    _fails_with(
        "ValueError: Unknown speculative algorithm name: MEDUSA",
        "--model-path",
        target,
        "--speculative-algorithm",
        "MEDUSA",
    )


def test_help_lists_the_profile_flags() -> None:
    done = launch("--help")
    assert done.returncode == 0
    for flag in (
        "--speculative-dflash-block-size",
        "--speculative-ddtree-budget",
        "--speculative-draft-window-size",
        "--enable-metrics",
    ):
        assert flag in done.stdout
