"""A rollback's plan (deploy/rollback_plan.py): the target is chosen and checked from the host's listing alone,
with the host script's own rules, and a rollback that cannot happen is refused naming what still serves and
what to do."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from specops.commands.manifest import BadMark
from specops.commands.release import Listing, ReleaseInfo
from specops.config.inventory import HostSpec
from specops.config.profile import Profile
from specops.deploy.rollback_plan import NEWEST, RollbackRefused, choose_target, plan_rollback
from specops.errors import ExitCode
from specops.host.local import LocalHost
from specops.ops.release import read_listing
from specops.remote.release.hostdata import Refused
from specops.remote.release.marks import bad_mark, set_bad
from specops.remote.release.rollback import rollback_target
from tests.unit.release.hostfixture import add_release, point_current

OLD, BAD, UNVERIFIED, NEW = "20261101T000000Z-aaaa", "20261102T000000Z-bbbb", "20261103T000000Z-cccc", "20261104T0Z-dd"
UNKNOWN = "20261105T000000Z-eeee"


def _release(release_id: str, **fields: Any) -> ReleaseInfo:
    return ReleaseInfo(**{"id": release_id, "complete": True, "verified": True, **fields})


def _listing(*releases: ReleaseInfo, current: str | None = NEW) -> Listing:
    return Listing(current, [r if r.id != current else _release(r.id, is_current=True) for r in releases])


HOST_RELEASES = (_release(OLD), _release(BAD, bad=BadMark("hung after verified")), _release(UNVERIFIED, verified=False),
                 _release(NEW))  # fmt: skip


def test_without_to_the_newest_verified_release_that_is_neither_current_nor_bad_is_chosen() -> None:
    target = choose_target("llm-two", _listing(*HOST_RELEASES), None, force=False)
    assert (target.release.id, target.forced) == (OLD, False)
    assert target.why == f"{NEWEST}; skipped, marked bad: {BAD} (hung after verified)"


def test_nothing_to_go_back_to_after_one_deploy_is_refused_saying_what_still_serves() -> None:
    with pytest.raises(RollbackRefused) as caught:
        choose_target("llm-two", _listing(_release(NEW)), None, force=False)
    assert caught.value.message == ("llm-two: no verified release other than the current one (and not marked bad) "
                                    f"to roll back to: nothing on the host was changed; {NEW} still serves")  # fmt: skip
    assert "`specops deploy llm-two`" in caught.value.hint and "`specops releases llm-two`" in caught.value.hint
    assert caught.value.exit_code == ExitCode.CHECKS_FAILED


def test_when_every_other_release_is_bad_the_hint_names_force() -> None:
    with pytest.raises(RollbackRefused) as caught:
        choose_target("llm-two", _listing(_release(BAD, bad=BadMark("x")), _release(NEW)), None, force=False)
    assert "`specops rollback llm-two --to ID --force`" in caught.value.hint


@pytest.mark.parametrize(
    ("wanted", "why"),
    [
        (UNKNOWN, "does not exist on this host"),
        (UNVERIFIED, "never passed its gates: not a verified, complete release"),
        ("20261100T000000Z-ffff", "is unfinished (its push never completed): not a verified, complete release"),
        ("20261100T000000Z-9999", "cannot be read (manifest.json: bad JSON): not a verified, complete release"),
    ],
)
def test_a_to_that_is_not_a_verified_complete_release_is_refused(wanted: str, why: str) -> None:
    releases = (*HOST_RELEASES, _release("20261100T000000Z-ffff", complete=False),
                _release("20261100T000000Z-9999", error="manifest.json: bad JSON"))  # fmt: skip
    with pytest.raises(RollbackRefused) as caught:
        choose_target("llm-two", _listing(*releases), wanted, force=True)  # --force allows bad ones, nothing else
    assert (
        caught.value.message == f"llm-two: release {wanted} {why}: nothing on the host was changed; {NEW} still serves"
    )
    assert caught.value.hint == "`specops releases llm-two` lists the releases and which are verified"


def test_a_to_that_is_bad_is_refused_with_its_reason_unless_forced() -> None:
    with pytest.raises(RollbackRefused) as caught:
        choose_target("llm-two", _listing(*HOST_RELEASES), BAD, force=False)
    assert caught.value.message.startswith(f"llm-two: release {BAD} is marked bad (hung after verified): nothing")
    assert "pass --force" in caught.value.hint and f"--unmark-bad {BAD}" in caught.value.hint
    forced = choose_target("llm-two", _listing(*HOST_RELEASES), BAD, force=True)
    assert (forced.release.id, forced.forced) == (BAD, True)
    assert forced.why == "named with --to; marked bad (hung after verified), allowed by --force"


def test_the_plan_says_from_to_why_the_drain_the_gates_and_what_is_marked_bad(tmp_path: Path) -> None:
    spec = HostSpec(name="llm-two", ssh="llm-two", python=sys.executable, model_path="/m",
                    base_dir=str(tmp_path), pre_stop=["drain-lb", "llm two"])  # fmt: skip
    profiles = {"slow": _profile("slow", drain_s=300, readiness_s=1200), None: _profile("nextn", 60, 900)}
    listing = _listing(_release(OLD, profile="slow"), _release(NEW))
    plan = plan_rollback(spec, listing, lambda name: profiles[name], None, force=False)
    assert (plan.from_release, plan.to_release, plan.marks_bad, plan.forced) == (NEW, OLD, NEW, False)
    assert (plan.drain_s, plan.profile, plan.readiness_s) == (60, "slow", 1200)  # NEW's drain, OLD's gates
    assert plan.lines() == [
        f"llm-two: would roll back {NEW} -> {OLD}",
        f"  why {OLD}: {NEWEST}",
        "  1. pre_stop hook: drain-lb 'llm two'",
        "  2. drain sglang.service: up to 60 s for running requests, then stop it and prove its GPUs free",
        f"  3. switch current to {OLD}, put back its unit and env file, restart sglang.service",
        "  4. gates: readiness (up to 1200 s), then smoke (profile slow)",
        f"  afterwards: {NEW} is marked bad; the lock is held throughout and the result audited",
    ]
    assert plan.to_json()["hooks"] == {"pre_stop": "drain-lb 'llm two'"}


def _profile(name: str, drain_s: int, readiness_s: int) -> Profile:
    return Profile.model_validate({"name": name, "algorithm": "NEXTN", "drain": {"timeout_s": drain_s},
                                   "readiness": {"timeout_s": readiness_s}})  # fmt: skip


def test_the_choice_agrees_with_the_host_script_on_a_real_release_folder(tmp_path: Path) -> None:
    """Every --to (and none), with and without --force: refused by both or the same release from both."""
    service = tmp_path / "sglang"
    for release_id in (OLD, BAD, NEW):
        add_release(service, release_id)
    add_release(service, UNVERIFIED, verified=False)
    set_bad(str(service), BAD, bad_mark("hung after verified", "alice@laptop"))
    (service / "releases" / "20261100T000000Z-ffff").mkdir()
    (service / "releases" / "20261100T000000Z-ffff" / "unfinished").touch()
    point_current(service, NEW)
    spec = HostSpec(name="llm-two", ssh="llm-two", python=sys.executable, model_path="/m", base_dir=str(tmp_path))
    listing = read_listing(LocalHost("llm-two"), spec)
    for wanted in ("", OLD, BAD, UNVERIFIED, NEW, UNKNOWN, "20261100T000000Z-ffff"):
        for force in (False, True):
            assert _host_says(str(service), wanted, force) == _plan_says(listing, wanted, force), (wanted, force)


def _host_says(service_dir: str, wanted: str, force: bool) -> str:
    try:
        return rollback_target(service_dir, wanted, force)
    except Refused:
        return "refused"


def _plan_says(listing: Listing, wanted: str, force: bool) -> str:
    try:
        return choose_target("llm-two", listing, wanted or None, force).release.id
    except RollbackRefused:
        return "refused"
