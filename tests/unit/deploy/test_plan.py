"""The plan's decisions, pure: which release serves, what it is pushed from, what a failure rolls back to."""

from __future__ import annotations

from dataclasses import replace

from specops.build.stage import StagedBuild
from specops.commands.config_change import env_differences, env_entries
from specops.commands.release import Listing, ReleaseInfo
from specops.deploy.blame import blame_for_failed_gates
from specops.deploy.plan import HostPlan, choose
from specops.deploy.steps import Action

NEW = "20261130T120000Z-new"


def _release(release_id: str, tree: str, verified: bool = True, current: bool = False) -> ReleaseInfo:
    return ReleaseInfo(id=release_id, complete=True, verified=verified, tree_hash=tree, is_current=current)


def test_an_identical_older_release_is_reused_and_current_stays_the_rollback_target(
    staged_and_plan: tuple[StagedBuild, HostPlan],
) -> None:
    staged, host_plan = staged_and_plan
    older, current = _release("20260101T000000Z-a", staged.tree_hash), _release("20260102T000000Z-b", "0" * 64)
    choice = choose(staged, host_plan, Listing(current.id, [older, current]), host_plan.unit_text, NEW)
    assert (choice.action, choice.release_id, choice.base) == (Action.DEPLOY, older.id, None)
    assert choice.rollback_to == current


def test_an_unverified_current_release_rolls_back_to_the_newest_verified_one(
    staged_and_plan: tuple[StagedBuild, HostPlan],
) -> None:
    staged, host_plan = staged_and_plan
    good, bad = _release("20260101T000000Z-a", "1" * 64), _release("20260102T000000Z-b", "2" * 64, verified=False)
    choice = choose(staged, host_plan, Listing(bad.id, [good, bad]), host_plan.unit_text, NEW)
    assert (choice.release_id, choice.base, choice.rollback_to) == (NEW, bad, good)  # pushed on the newest


def test_no_verified_release_means_nothing_to_roll_back_to(staged_and_plan: tuple[StagedBuild, HostPlan]) -> None:
    staged, host_plan = staged_and_plan
    failed = _release("20260101T000000Z-a", "1" * 64, verified=False)
    choice = choose(staged, host_plan, Listing(failed.id, [failed]), None, NEW)
    assert (choice.rollback_to, choice.unit_changed) == (None, True)


ENV_A = '# Managed by specops\nLOG_LEVEL="info"\nHF_TOKEN="hf_one"\n'
ENV_B = '# Managed by specops\nLOG_LEVEL="debug"\nHF_TOKEN="hf_two"\n'


def test_a_config_only_change_is_a_new_release_hard_linked_from_the_serving_one(
    staged_and_plan: tuple[StagedBuild, HostPlan],
) -> None:
    """Not `unchanged`: the serving release keeps the env it was verified with (the rollback target's), so the
    new env gets a new release with the same tree; the plan says which keys changed."""
    staged, host_plan = staged_and_plan
    serving = _release("20260101T000000Z-a", staged.tree_hash, current=True)
    plan = replace(host_plan, env_text=ENV_B)
    choice = choose(staged, plan, Listing(serving.id, [serving]), plan.unit_text, NEW, env_text=ENV_A)
    assert (choice.action, choice.release_id, choice.reuse, choice.base) == (Action.DEPLOY, NEW, None, serving)
    assert choice.rollback_to == serving
    assert choice.config.env_keys == ("HF_TOKEN", "LOG_LEVEL") and not choice.config.unit
    assert choice.reason == (f"configuration changed: env (HF_TOKEN, LOG_LEVEL): a new release, every file "
                             f"hard-linked from {serving.id}")  # fmt: skip
    assert not blame_for_failed_gates(choice.config).marks_bad


def test_the_same_build_with_the_same_env_and_unit_is_unchanged(staged_and_plan: tuple[StagedBuild, HostPlan]) -> None:
    """Only the values count: a different header comment (an older specops's) is no change."""
    staged, host_plan = staged_and_plan
    serving = _release("20260101T000000Z-a", staged.tree_hash, current=True)
    plan = replace(host_plan, env_text=ENV_A)
    older = ENV_A.replace("# Managed by specops", "# written by an older specops")
    choice = choose(staged, plan, Listing(serving.id, [serving]), plan.unit_text, NEW, env_text=older)
    assert (choice.action, choice.config.changed) == (Action.UNCHANGED, False)
    assert blame_for_failed_gates(choice.config).marks_bad  # nothing changed but the build: the build is blamed


def test_a_unit_change_is_a_configuration_change_too(staged_and_plan: tuple[StagedBuild, HostPlan]) -> None:
    staged, host_plan = staged_and_plan
    serving = _release("20260101T000000Z-a", staged.tree_hash, current=True)
    choice = choose(staged, host_plan, Listing(serving.id, [serving]), "old unit", NEW, env_text=host_plan.env_text)
    assert (choice.action, choice.release_id, choice.config.summary()) == (
        Action.DEPLOY,
        NEW,
        "configuration changed: unit",
    )


def test_env_differences_mask_secret_values_and_show_the_others_old_to_new() -> None:
    lines = env_differences(ENV_A, ENV_B + 'NEW_KEY="x"\n', secrets=["HF_TOKEN"])
    assert lines == ("HF_TOKEN: *** -> ***", "LOG_LEVEL: 'info' -> 'debug'", "NEW_KEY: (unset) -> 'x'")
    assert env_entries('A="a \\"quoted\\" \\$HOME"\n') == {"A": 'a "quoted" $HOME'}
