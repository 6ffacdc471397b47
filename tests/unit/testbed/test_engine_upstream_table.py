"""The stand-in engine refuses what real upstream SGLang's parser refuses (its dumped option table)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from tests.testbed.engine import BUILD_PYTHON

TABLE = {
    "version": "0.5.23",
    "algorithms": ["DFLASH", "EAGLE", "NONE"],
    "flags": {"--model-path": None, "--page-size": None, "--enable-metrics": None, "--speculative-algorithm": None,
              "--attention-backend": ["fa3", "flashinfer", "triton"]},
    "store_true": ["--enable-metrics"],
}  # fmt: skip


def _module() -> ModuleType:
    path = BUILD_PYTHON / "sglang" / "srt" / "testengine_upstream.py"
    spec = importlib.util.spec_from_file_location("testengine_upstream", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_upstream_flags_pass_and_the_ddtree_fork_additions_are_allowed() -> None:
    errors = _module().upstream_errors
    argv = ["--model-path", "/m", "--enable-metrics", "--speculative-algorithm", "DDTREE"]
    assert errors([*argv, "--speculative-ddtree-budget", "15", "--attention-backend=triton"], TABLE) == []
    assert errors(["--model-path", "/m", "--speculative-algorithm", "nextn"], TABLE) == []


def test_unknown_flags_bad_choices_and_algorithms_are_named() -> None:
    errors = _module().upstream_errors
    argv = ["--model-path", "/m", "--speculative-draft-window-size", "8", "--attention-backend", "fa9"]
    assert errors([*argv, "--speculative-algorithm", "JETSPEC"], TABLE) == [
        "unrecognized arguments: --speculative-draft-window-size",
        "argument --attention-backend: invalid choice: 'fa9'",
        "Unknown speculative algorithm name: JETSPEC",
    ]


def test_launch_server_exits_2_naming_the_real_release(tmp_path: Path, models: dict[str, Path]) -> None:
    table = tmp_path / "parser-table.json"
    table.write_text(json.dumps(TABLE))
    done = subprocess.run(
        [sys.executable, "-m", "sglang.launch_server", "--model-path", str(models["target"]), "--port", "30000"],
        capture_output=True, text=True, timeout=30, check=False,
        env={"PYTHONPATH": str(BUILD_PYTHON), "PYTHONDONTWRITEBYTECODE": "1",
             "SGLANG_TESTENGINE_UPSTREAM_TABLE": str(table)},
    )  # fmt: skip
    assert done.returncode == 2
    assert (
        "launch_server.py: error: unrecognized arguments: --port (real sglang 0.5.23's parser refuses it)"
        in done.stderr
    )
