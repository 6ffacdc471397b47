"""sglang.version, sglang.algorithm, sglang.enum_stability, native_ext.abi, model.paths, model.draft_target_dims."""

from __future__ import annotations

from specops.doctor.model import Status
from specops.probe.facts import ModelFacts, NativeExtFacts, NativeLib
from tests.unit.doctor.factory import (
    DRAFT,
    HOST,
    MEMBERS,
    context,
    healthy_facts,
    load_profile,
    replace,
    run,
    spec_info,
)

RENUMBERED = {
    "DFLASH": 1,
    "DDTREE": 2,
    "DSPARK": 3,
    "EAGLE": 4,
    "EAGLE3": 5,
    "FROZEN_KV_MTP": 6,
    "STANDALONE": 7,
    "NGRAM": 8,
    "NONE": 9,
}


def test_sglang_version_names_the_build_that_would_run() -> None:
    facts = healthy_facts(sglang=[spec_info("venv", version="0.5.9"), spec_info("current")])
    result = run("sglang.version", context(facts))
    assert (result.status, result.summary) == (
        Status.PASS,
        "sglang 0.5.20.post1 (current: /opt/specops/sglang/current)",
    )
    assert any(line.startswith("also found venv: sglang 0.5.9") for line in result.evidence)


def test_sglang_version_skips_without_any_build() -> None:
    result = run("sglang.version", context(healthy_facts(sglang=[])))
    assert result.status is Status.SKIP


def test_unpatched_ddtree_build_fails_explaining_is_dflash() -> None:
    facts = healthy_facts(sglang=[spec_info("current", patched=False)])
    result = run("sglang.algorithm", context(facts))
    assert result.status is Status.FAIL
    assert result.summary == (
        "DDTREE is registered but SpeculativeAlgorithm.is_dflash() returns False for it: "
        "the draft model would get [N, 5120] hidden states instead of [N, 25600]"
    )
    assert result.hint.startswith("patch is_dflash() to include DDTREE")


def test_a_build_without_ddtree_fails_pointing_at_the_patch() -> None:
    members = {name: value for name, value in MEMBERS.items() if name != "DDTREE"}
    result = run("sglang.algorithm", context(healthy_facts(sglang=[spec_info("current", members=members)])))
    assert result.status is Status.FAIL
    assert (
        result.summary
        == "DDTREE is not in SpeculativeAlgorithm of sglang 0.5.20.post1 (current: /opt/specops/sglang/current)"
    )
    assert "PR #29907" in result.hint


def test_ddtree_read_statically_without_is_dflash_answer_warns() -> None:
    build = spec_info("current", method="ast", error="ModuleNotFoundError: No module named 'torch'", is_dflash={})
    result = run("sglang.algorithm", context(healthy_facts(sglang=[build])))
    assert result.status is Status.WARN


def test_nextn_is_accepted_as_eagles_alias_and_dflash_as_a_member() -> None:
    nextn = run("sglang.algorithm", context(profile=load_profile("nextn")))
    assert (nextn.status, nextn.summary) == (Status.PASS, "NEXTN is accepted as EAGLE's alias in sglang 0.5.20.post1")
    dflash = run("sglang.algorithm", context(profile=load_profile("dflash")))
    assert (dflash.status, dflash.summary) == (Status.PASS, "DFLASH is available in sglang 0.5.20.post1")


def test_sglang_algorithm_skips_without_a_profile() -> None:
    assert run("sglang.algorithm", context(profile=None)).status is Status.SKIP


def test_renumbered_enum_warns_naming_each_member_with_old_and_new_values() -> None:
    facts = healthy_facts(sglang=[spec_info("current", members=RENUMBERED), spec_info("previous")])
    result = run("sglang.enum_stability", context(facts))
    assert result.status is Status.WARN
    assert result.summary == (
        "SpeculativeAlgorithm members changed value since the previous release: "
        "EAGLE 3 → 4, EAGLE3 4 → 5, FROZEN_KV_MTP 5 → 6, STANDALONE 6 → 7 and 2 more"
    )
    assert "NONE 8 → 9" in result.evidence
    assert "added: DSPARK" in result.evidence


def test_enum_stability_compares_a_deploy_candidate_with_the_previous_release() -> None:
    candidate = replace(spec_info("candidate", members=RENUMBERED), root="/tmp/candidate")
    facts = healthy_facts(sglang=[spec_info("current"), spec_info("previous"), candidate])
    assert run("sglang.enum_stability", context(facts)).status is Status.WARN


def test_enum_stability_skips_without_a_previous_release() -> None:
    result = run("sglang.enum_stability", context(healthy_facts(sglang=[spec_info("current")])))
    assert (result.status, result.summary) == (Status.SKIP, "no previous verified release to compare with")


def test_native_extension_built_for_another_torch_fails() -> None:
    lib = NativeLib(path="/x/common_ops.abi3.so", missing_torch_symbols=["_ZN3c1013MessageLoggerC1EPKciib"])
    ext = NativeExtFacts(found=True, version="0.3.9", libs={"common_ops.abi3.so": lib})
    result = run("native_ext.abi", context(healthy_facts(native_ext={"sgl_kernel": ext})))
    assert result.status is Status.FAIL
    assert result.summary == (
        "sgl_kernel was built against another torch than 2.13.0+cu130: undefined symbol _ZN3c1013MessageLoggerC1EPKciib"
    )


def test_native_ext_skips_when_none_is_installed() -> None:
    assert run("native_ext.abi", context(healthy_facts(native_ext={}))).status is Status.SKIP


def test_draft_fc_of_the_wrong_width_fails_saying_25600_was_expected() -> None:
    wrong = replace(DRAFT, tensors={"fc.weight": [5120, 5120]})
    result = run("model.draft_target_dims", context(healthy_facts(models=[healthy_facts().models[0], wrong])))
    assert result.status is Status.FAIL
    assert result.summary == "draft fc.weight is [5120, 5120]: expected input 25600 = 5 target layers × hidden 5120"
    assert "hosts.gpu-one.draft_model_path" in result.hint


def test_draft_for_a_smaller_target_fails_on_hidden_size_and_layer_ids() -> None:
    small_target = ModelFacts(
        role="target",
        path="/models/target",
        exists=True,
        readable=True,
        config={"hidden_size": 2560, "num_hidden_layers": 36},
    )
    result = run("model.draft_target_dims", context(healthy_facts(models=[small_target, DRAFT])))
    assert result.status is Status.FAIL
    assert result.summary == "draft fc.weight is [5120, 25600]: expected input 12800 = 5 target layers × hidden 2560"
    assert "draft hidden_size 5120 ≠ target hidden_size 2560" in result.evidence
    assert "draft target_layer_ids [1, 16, 31, 46, 61] reach layer 61 but the target has 36 layers" in result.evidence


def test_draft_block_size_must_match_the_profile() -> None:
    draft = replace(DRAFT, config={**DRAFT.config, "block_size": 8})
    result = run("model.draft_target_dims", context(healthy_facts(models=[healthy_facts().models[0], draft])))
    assert result.status is Status.FAIL
    assert result.summary == "draft block_size 8 ≠ profile ddtree dflash_block_size 16"
    assert "speculative.dflash_block_size = 8" in result.hint


def test_nested_dflash_config_is_read_too() -> None:
    nested = replace(
        DRAFT,
        config={"hidden_size": 5120, "dflash_config": {"target_layer_ids": [1, 16, 31, 46, 61], "block_size": 16}},
    )
    result = run("model.draft_target_dims", context(healthy_facts(models=[healthy_facts().models[0], nested])))
    assert result.status is Status.PASS


def test_draft_dims_skip_for_non_dflash_profiles() -> None:
    result = run("model.draft_target_dims", context(profile=load_profile("nextn")))
    assert (result.status, result.summary) == (Status.SKIP, "only for DFLASH/DDTREE profiles")


def test_missing_model_folder_fails_naming_the_config_key() -> None:
    gone = ModelFacts(role="draft", path="/models/draft", exists=False)
    result = run("model.paths", context(healthy_facts(models=[healthy_facts().models[0], gone])))
    assert result.status is Status.FAIL
    assert result.summary == "draft model /models/draft does not exist (hosts.gpu-one.draft_model_path)"


def test_a_dflash_profile_without_a_draft_model_fails() -> None:
    host = replace(HOST, draft_model_path=None)
    result = run("model.paths", context(host=host, profile=load_profile("dflash")))
    assert result.status is Status.FAIL
    assert result.summary == "profile dflash needs a draft model but hosts.gpu-one.draft_model_path is not set"


def test_hugging_face_repo_ids_are_not_checkable() -> None:
    host = replace(HOST, model_path="Qwen/Qwen3.5-27B", draft_model_path="z-lab/Qwen3.5-27B-DFlash")
    result = run("model.paths", context(host=host))
    assert result.status is Status.SKIP
    assert result.summary == "no local model folder to check (Hugging Face repo ids or not probed)"


def test_renumbering_is_listed_in_definition_order_even_from_sorted_json() -> None:
    sorted_new = dict(sorted(RENUMBERED.items()))
    sorted_old = dict(sorted(MEMBERS.items()))
    facts = healthy_facts(sglang=[spec_info("current", members=sorted_new), spec_info("previous", members=sorted_old)])
    result = run("sglang.enum_stability", context(facts))
    assert result.summary.endswith("EAGLE 3 → 4, EAGLE3 4 → 5, FROZEN_KV_MTP 5 → 6, STANDALONE 6 → 7 and 2 more")
