"""The build's SpeculativeAlgorithm enum, and what ddtree.patch / renumber.patch change in it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.testbed.engine import BUILD_PYTHON, DDTREE_PATCH, RENUMBER_PATCH, copy_build

pytestmark = pytest.mark.testbed  # the test bed's own test: outside the fast suite (pytest -m 'not testbed')

PROBE = """
import json, sys
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm as A
print(json.dumps({
    "members": {m.name: m.value for m in A},
    "dflash_like": [m.name for m in A if m.is_dflash()],
    "nextn": A.from_string("nextn").name, "none": A.from_string(None).name,
    "torch_imported": "torch" in sys.modules,
}))
"""


def probe(build: Path) -> dict:
    """Import spec_info alone in a fresh interpreter, the way the doctor does."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=build,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
        env={"PYTHONPATH": str(build), "PYTHONDONTWRITEBYTECODE": "1"},
    )
    return json.loads(out.stdout)


def test_unpatched_build_registers_ddtree_but_is_dflash_excludes_it() -> None:
    facts = probe(BUILD_PYTHON)
    assert list(facts["members"]) == [
        "DFLASH",
        "DDTREE",
        "EAGLE",
        "EAGLE3",
        "FROZEN_KV_MTP",
        "STANDALONE",
        "NGRAM",
        "NONE",
    ]
    assert facts["dflash_like"] == ["DFLASH"]
    assert (facts["nextn"], facts["none"]) == ("EAGLE", "NONE")
    assert "NEXTN" not in facts["members"]
    assert facts["torch_imported"] is False


def test_ddtree_patch_makes_ddtree_dflash_like_and_keeps_numbering(tmp_path: Path) -> None:
    facts = probe(copy_build(tmp_path / "python", [DDTREE_PATCH]))
    assert facts["dflash_like"] == ["DFLASH", "DDTREE"]
    assert facts["members"] == probe(BUILD_PYTHON)["members"]


def test_renumber_patch_shifts_later_members(tmp_path: Path) -> None:
    before = probe(BUILD_PYTHON)["members"]
    after = probe(copy_build(tmp_path / "python", [RENUMBER_PATCH]))["members"]
    assert after["DSPARK"] == before["EAGLE"]
    assert after["EAGLE"] == before["EAGLE"] + 1
    assert after["DFLASH"] == before["DFLASH"]


@pytest.mark.parametrize("order", [(DDTREE_PATCH, RENUMBER_PATCH), (RENUMBER_PATCH, DDTREE_PATCH)])
def test_patches_are_independent(tmp_path: Path, order: tuple[Path, Path]) -> None:
    facts = probe(copy_build(tmp_path / "python", order))
    assert facts["dflash_like"] == ["DFLASH", "DDTREE"]
    assert "DSPARK" in facts["members"]


def test_git_apply_accepts_the_patches_from_inside_the_build(tmp_path: Path) -> None:
    build = copy_build(tmp_path / "python")
    for patch_file in (DDTREE_PATCH, RENUMBER_PATCH):
        subprocess.run(["git", "apply", "--check", str(patch_file)], cwd=build, check=True, timeout=30)
    assert len([line for line in DDTREE_PATCH.read_text().splitlines() if line.startswith("+ ")]) == 1
