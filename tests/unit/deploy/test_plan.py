"""The plan's decisions, pure: which release serves, what it is pushed from, what a failure rolls back to."""

from __future__ import annotations

from specops.build.stage import StagedBuild
from specops.commands.release import Listing, ReleaseInfo
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
