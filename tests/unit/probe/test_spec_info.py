"""sglang's SpeculativeAlgorithm read from the test engine builds: by import (subprocess), and by AST fallback."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from specops.remote.probe.sglang import inspect_spec_info, read_spec_info_ast
from tests.testbed.engine import BUILD_PYTHON, DDTREE_PATCH, RENUMBER_PATCH, copy_build

SPEC_INFO = Path("sglang/srt/speculative/spec_info.py")
UNPATCHED = {
    "DFLASH": 1,
    "DDTREE": 2,
    "EAGLE": 3,
    "EAGLE3": 4,
    "FROZEN_KV_MTP": 5,
    "STANDALONE": 6,
    "NGRAM": 7,
    "NONE": 8,
}


def _break_package_init(root: Path) -> None:
    """A build whose package init fails to import (as a real sglang without its deps would)."""
    init = root / "sglang" / "__init__.py"
    init.write_text("import torch_that_is_not_installed\n" + init.read_text())


def test_unpatched_build_by_import() -> None:
    facts = inspect_spec_info("candidate", str(BUILD_PYTHON))
    assert facts["found"] and facts["method"] == "import" and facts["error"] is None
    assert facts["members"] == UNPATCHED
    assert list(facts["members"]) == list(UNPATCHED)  # definition order
    assert facts["is_dflash"]["DFLASH"] is True and facts["is_dflash"]["DDTREE"] is False
    assert facts["aliases"] == {"NEXTN": "EAGLE"}
    assert facts["version"] == "0.5.20.dev0+specops.testengine"


def test_ddtree_patch_makes_ddtree_count_as_dflash(tmp_path: Path) -> None:
    root = copy_build(tmp_path / "python", [DDTREE_PATCH])
    facts = inspect_spec_info("candidate", str(root))
    assert facts["method"] == "import"
    assert {name for name, yes in facts["is_dflash"].items() if yes} == {"DFLASH", "DDTREE"}
    assert facts["members"] == UNPATCHED


def test_renumber_patch_shifts_later_members(tmp_path: Path) -> None:
    root = copy_build(tmp_path / "python", [RENUMBER_PATCH])
    members = inspect_spec_info("candidate", str(root))["members"]
    assert members["DSPARK"] == 3 and members["EAGLE"] == 4 and members["NONE"] == 9


@pytest.mark.parametrize("patches", [[], [DDTREE_PATCH], [RENUMBER_PATCH], [DDTREE_PATCH, RENUMBER_PATCH]])
def test_ast_fallback_agrees_with_import(tmp_path: Path, patches: list[Path]) -> None:
    root = copy_build(tmp_path / "python", patches)
    imported = inspect_spec_info("candidate", str(root))
    _break_package_init(root)
    fallback = inspect_spec_info("candidate", str(root))
    assert fallback["method"] == "ast"
    assert fallback["error"] == "ModuleNotFoundError: No module named 'torch_that_is_not_installed'"
    for key in ("members", "is_dflash", "aliases", "version"):
        assert fallback[key] == imported[key], key


def test_import_timeout_falls_back_to_ast(tmp_path: Path) -> None:
    root = copy_build(tmp_path / "python")
    init = root / "sglang" / "__init__.py"
    init.write_text("import time\ntime.sleep(30)\n" + init.read_text())
    facts = inspect_spec_info("candidate", str(root), timeout=0.5)
    assert facts["method"] == "ast" and "timed out" in facts["error"]
    assert facts["members"] == UNPATCHED


def test_auto_numbering_after_explicit_values(tmp_path: Path) -> None:
    path = tmp_path / "spec_info.py"
    path.write_text(
        "from enum import IntEnum, auto\n"
        "class SpeculativeAlgorithm(IntEnum):\n"
        "    NONE = auto()\n    EAGLE = 5\n    EAGLE3 = auto()\n    NAMED = 'x'\n"
        "    def is_dflash(self):\n        return False\n"
    )
    assert read_spec_info_ast(str(path))["members"] == {"NONE": 1, "EAGLE": 5, "EAGLE3": 6, "NAMED": "x"}


def test_missing_spec_info_is_reported(tmp_path: Path) -> None:
    facts = inspect_spec_info("previous", str(tmp_path))
    assert not facts["found"] and "spec_info.py" in facts["error"]


def test_the_probe_process_never_imports_sglang() -> None:
    inspect_spec_info("candidate", str(BUILD_PYTHON))
    assert "sglang" not in sys.modules
