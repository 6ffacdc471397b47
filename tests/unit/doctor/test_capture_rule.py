"""DDTREE must be in the predicate that decides the hidden-state capture of THAT build (0.5.16: is_dflash_family)."""

from __future__ import annotations

from specops.doctor.checks.sglang import sglang_algorithm
from specops.doctor.model import Status
from tests.unit.doctor.factory import MEMBERS, context, healthy_facts, spec_info


def _family_build(in_family: bool, in_is_dflash: bool) -> object:
    family = {name: name == "DFLASH" or (in_family and name == "DDTREE") for name in MEMBERS}
    is_dflash = {name: name == "DFLASH" or (in_is_dflash and name == "DDTREE") for name in MEMBERS}
    build = spec_info("current", capture_rule="is_dflash_family", is_dflash_family=family, is_dflash=is_dflash)
    return sglang_algorithm(context(healthy_facts(sglang=[build])))


def test_ddtree_patched_the_current_way_passes() -> None:
    result = _family_build(in_family=True, in_is_dflash=False)
    assert (result.status, result.summary) == (
        Status.PASS,
        "DDTREE is registered and is_dflash_family() is True for it",
    )


def test_ddtree_patched_the_old_way_on_a_new_base_fails() -> None:
    result = _family_build(in_family=False, in_is_dflash=True)
    assert result.status is Status.FAIL
    assert result.summary.startswith(
        "DDTREE is registered but SpeculativeAlgorithm.is_dflash_family() returns False for it "
        "(is_dflash() includes it: a patch written for SGLang before 0.5.16)"
    )
    assert result.hint.startswith("patch is_dflash_family() to include DDTREE")
