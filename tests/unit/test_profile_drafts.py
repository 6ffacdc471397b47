"""Per-profile drafts (never the DFlash draft for NEXTN/EAGLE) and DDTREE's budget/attention-backend rule."""

from __future__ import annotations

from specops.commands.systemd import launch_argv
from specops.config.loader import Target
from specops.config.profile import Profile
from specops.config.rules import check_profile_for_host
from tests.unit.doctor.factory import HOST, load_profile

DFLASH_DRAFT = "/models/Qwen3.6-27B-DFlash"


def _with(profile: Profile, **changes: object) -> Profile:
    data = profile.model_dump()
    for dotted, value in changes.items():
        node = data
        *parents, leaf = dotted.split("__")
        for part in parents:
            node = node[part]
        node[leaf] = value
    return Profile.model_validate(data)


def _draft_flag(profile: Profile) -> str | None:
    argv = launch_argv(Target(HOST.model_copy(update={"draft_model_path": DFLASH_DRAFT}), profile))
    return argv[argv.index("--speculative-draft-model-path") + 1] if "--speculative-draft-model-path" in argv else None


def test_nextn_never_gets_the_hosts_dflash_draft() -> None:
    assert _draft_flag(load_profile("nextn")) is None
    assert _draft_flag(load_profile("dflash")) == DFLASH_DRAFT
    assert _draft_flag(load_profile("ddtree")) == DFLASH_DRAFT


def test_a_profile_draft_wins_for_every_algorithm() -> None:
    eagle_draft = "/models/eagle3-head"
    assert _draft_flag(_with(load_profile("nextn"), draft_model_path=eagle_draft)) == eagle_draft
    assert _draft_flag(_with(load_profile("dflash"), draft_model_path="/models/other-dflash")) == "/models/other-dflash"


def test_an_eagle_profile_that_needs_a_draft_asks_for_its_own() -> None:
    profile = _with(load_profile("nextn"), needs_draft_model=True)
    host = HOST.model_copy(update={"draft_model_path": DFLASH_DRAFT})
    [violation] = check_profile_for_host(profile, host)
    assert violation.path == "draft_model_path"
    assert f"[hosts.{HOST.name}.overrides.nextn]" in violation.message


def test_ddtree_budget_above_block_minus_one_needs_triton() -> None:
    tree = _with(load_profile("ddtree"), speculative__ddtree_budget=31)
    [violation] = check_profile_for_host(tree, HOST)
    assert violation.path == "speculative.ddtree_budget"
    assert violation.message.startswith("ddtree_budget 31 > block size - 1 = 15 is DDTREE's full-tree mode")
    assert check_profile_for_host(_with(tree, server__attention_backend="triton"), HOST) == []
    assert check_profile_for_host(load_profile("ddtree"), HOST) == []  # budget 15 = block - 1: one chain


def test_the_attention_backend_is_rendered_and_managed() -> None:
    profile = _with(load_profile("ddtree"), speculative__ddtree_budget=31, server__attention_backend="triton")
    argv = launch_argv(Target(HOST, profile))
    assert argv[argv.index("--attention-backend") + 1] == "triton"
    manual = HOST.model_copy(update={"extra_args": ["--attention-backend", "fa3"]})
    assert any(v.path == "extra_args.0" for v in check_profile_for_host(load_profile("dflash"), manual))


def test_a_renamed_flag_follows_the_build() -> None:
    from specops.commands.systemd import flag_spellings

    old_build = ["--speculative-algorithm", "--speculative-dflash-draft-window-size"]
    assert flag_spellings(old_build) == {"--speculative-draft-window-size": "--speculative-dflash-draft-window-size"}
    assert flag_spellings([*old_build, "--speculative-draft-window-size"]) == {}
    argv = launch_argv(Target(HOST, load_profile("dflash")), spellings=flag_spellings(old_build))
    assert argv[argv.index("--speculative-dflash-draft-window-size") + 1] == "2048"
    assert "--speculative-draft-window-size" not in argv
