"""One id per build: a release id derived from the build (tree and profile) and the host's unit, the same build
part on every host; releases ordered by when they were created, never by id; a build id accepted where an id is
(`--mark-bad`, `rollback --to`), resolved per host; time-based ids from older hosts keep working beside them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specops.build.stage import build_id, content_release_id, legacy_release_id
from specops.cli.complete_releases import Known
from specops.commands.audit_line import AuditLine
from specops.commands.manifest import BadMark
from specops.commands.release import ReleaseInfo, newest_complete, newest_verified, parse_listing
from specops.deploy.host_state import bad_build_warnings
from specops.deploy.rollback_plan import RollbackRefused, choose_target
from specops.errors import UsageError
from specops.ops.bad_releases import one_release
from specops.remote.release.catalog import op_list, prune_plan
from specops.remote.release.hostdata import build_part, checked_release_id

TREE = "7" * 64
UNIT_A, UNIT_B = "[Service]\nExecStart=/a\n", "[Service]\nExecStart=/b\n"


def test_one_build_is_one_build_part_on_every_host_and_the_unit_tells_a_hosts_releases_apart() -> None:
    on_one, on_two = content_release_id(TREE, "ddtree", UNIT_A), content_release_id(TREE, "ddtree", UNIT_B)
    assert build_part(on_one) == build_part(on_two) == build_id(TREE, "ddtree") and on_one != on_two
    assert content_release_id(TREE, "ddtree", UNIT_A) == on_one  # derived, not minted: the same every time
    assert build_part(content_release_id(TREE, "eagle3", UNIT_A)) != build_part(on_one)  # the profile is part of it
    assert checked_release_id(on_one) == on_one  # the host's own id rule accepts it
    from datetime import UTC, datetime

    old = legacy_release_id(TREE, datetime(2026, 11, 30, 2, 14, 7, tzinfo=UTC))
    assert old == "20261130T021407Z-777777777777" and build_part(old) is None and checked_release_id(old) == old


def _raw(release_id: str, created: str | None, **extra: object) -> dict[str, object]:
    return {"id": release_id, "complete": True, "verified": True, "created_at": created, "tree_hash": TREE, **extra}


def test_a_listing_is_ordered_by_created_at_with_time_based_ids_by_their_own_time() -> None:
    newest_by_name = "ffffffffffff-000000"
    listing = parse_listing({"current": None, "releases": [
        _raw(newest_by_name, "2026-11-30T01:00:00.000Z"),
        _raw("20261130T020000Z-aaaaaaaaaaaa", None),  # an older host's release without created_at: its id's time
        _raw("000000000000-ffffff", "2026-11-30T03:00:00.250Z"),
        _raw("111111111111-ffffff", "2026-11-30T03:00:00Z"),
    ]})  # fmt: skip
    ids = [r.id for r in listing.releases]
    assert ids == [newest_by_name, "20261130T020000Z-aaaaaaaaaaaa", "111111111111-ffffff", "000000000000-ffffff"]
    assert newest_verified(listing.releases) is not None and newest_verified(listing.releases).id == ids[-1]  # type: ignore[union-attr]
    assert newest_complete(listing.releases) == listing.releases[-1]


def _release(tmp_path: Path, release_id: str, created: str, verified: bool = True) -> None:
    folder = tmp_path / "releases" / release_id
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"id": release_id, "created_at": created, "verified": verified}))


def test_the_host_lists_and_prunes_by_creation_not_by_name(tmp_path: Path) -> None:
    _release(tmp_path, "ffffffffffff-000001", "2026-01-01T00:00:01.000Z")  # oldest, yet last by name
    _release(tmp_path, "20260101T000002Z-aaaaaaaaaaaa", "2026-01-01T00:00:02Z")
    _release(tmp_path, "000000000000-000003", "2026-01-01T00:00:03.000Z", verified=False)
    listed = op_list(str(tmp_path))["releases"]
    assert [r["id"] for r in listed] == ["ffffffffffff-000001", "20260101T000002Z-aaaaaaaaaaaa",
                                         "000000000000-000003"]  # fmt: skip
    # keep 1: the newest stays, and the newest verified; the oldest goes although its name sorts last
    assert prune_plan(listed, None, 1, set()) == ["ffffffffffff-000001"]


def _info(release_id: str, created: str, *, verified: bool = True, bad: str | None = None) -> ReleaseInfo:
    return ReleaseInfo(release_id, True, verified, created_at=created, tree_hash=TREE, profile="ddtree",
                       bad=BadMark(bad) if bad else None)  # fmt: skip


BUILD = build_id(TREE, "ddtree")
OLD_CFG, NEW_CFG = f"{BUILD}-aaaaaa", f"{BUILD}-bbbbbb"


def test_a_build_id_names_the_hosts_one_release_of_it_and_is_refused_when_none_or_ambiguous() -> None:
    one = [_info(OLD_CFG, "2026-01-01T00:00:00Z")]
    assert one_release("gpu1", one, BUILD).id == OLD_CFG
    assert one_release("gpu1", one, OLD_CFG).id == OLD_CFG
    with pytest.raises(UsageError, match=f"gpu1: no release of build {'0' * 12} on the host"):
        one_release("gpu1", one, "0" * 12)
    two = [*one, _info(NEW_CFG, "2026-01-02T00:00:00Z")]
    with pytest.raises(UsageError, match=f"gpu1: build {BUILD} has 2 releases on the host .*{OLD_CFG}, {NEW_CFG}.*"
                                         "ambiguous"):  # fmt: skip
        one_release("gpu1", two, BUILD)


def test_rollback_to_a_build_takes_the_hosts_newest_verified_release_of_it() -> None:
    from specops.commands.release import Listing

    current = _info("20260101T000000Z-cccccccccccc", "2026-01-01T00:00:00Z")
    releases = [current, _info(OLD_CFG, "2026-01-02T00:00:00Z"), _info(NEW_CFG, "2026-01-03T00:00:00Z"),
                _info(f"{BUILD}-cccccc", "2026-01-04T00:00:00Z", verified=False)]  # fmt: skip
    listing = Listing(current.id, releases)
    assert choose_target("gpu1", listing, BUILD, force=False).release.id == NEW_CFG
    with pytest.raises(RollbackRefused, match=f"gpu1: no verified release of build {'1' * 12} on this host"):
        choose_target("gpu1", listing, "1" * 12, force=False)
    marked = Listing(current.id, [current, _info(NEW_CFG, "2026-01-03T00:00:00Z", bad="wrong answers")])
    with pytest.raises(RollbackRefused, match=f"release {NEW_CFG} is marked bad \\(wrong answers\\)"):
        choose_target("gpu1", marked, BUILD, force=False)
    assert choose_target("gpu1", marked, BUILD, force=True).forced


def test_a_redeploy_of_a_build_marked_bad_on_the_host_warns_naming_host_and_reason() -> None:
    from specops.commands.release import Listing

    listing = Listing(None, [_info(OLD_CFG, "2026-01-01T00:00:00Z", bad="wrong answers"),
                             _info(NEW_CFG, "2026-01-02T00:00:00Z")])  # fmt: skip
    assert bad_build_warnings(listing, TREE, "ddtree", "gpu1") == [
        f"build {BUILD} is marked bad on host gpu1: wrong answers (release {OLD_CFG})"
    ]
    assert bad_build_warnings(listing, TREE, "eagle3", "gpu1") == []  # another profile: another build
    assert bad_build_warnings(listing, "8" * 64, "ddtree", "gpu1") == []


def test_completion_offers_ids_newest_first_by_the_log_then_their_builds() -> None:
    known = Known()
    for release in (NEW_CFG, "20260101T000000Z-cccccccccccc", OLD_CFG):  # deployed in this order
        known.replay(AuditLine(action="deploy", outcome="deployed", to_release=release))
    assert known.accepted("release-unmarked") == [OLD_CFG, "20260101T000000Z-cccccccccccc", NEW_CFG, BUILD]


def test_a_build_marked_bad_on_another_host_of_the_deploy_warns_before_it_starts(tmp_path: Path) -> None:
    from specops.cli.complete_releases import bad_builds

    log = tmp_path / "specops" / "audit.jsonl"
    log.parent.mkdir()
    entries = [{"action": "deploy", "outcome": "deployed", "host": "gpu2", "to": NEW_CFG},
               {"action": "mark-bad", "outcome": "marked", "host": "gpu2", "to": NEW_CFG, "message": "wrong answers"},
               {"action": "mark-bad", "outcome": "marked", "host": "gpu3", "to": OLD_CFG, "message": "slow"},
               {"action": "unmark-bad", "outcome": "unmarked", "host": "gpu3", "to": OLD_CFG}]  # fmt: skip
    log.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    environ = {"XDG_STATE_HOME": str(tmp_path)}
    assert bad_builds(["gpu1", "gpu2", "gpu3"], {BUILD}, environ) == [
        f"build {BUILD} is marked bad on host gpu2: wrong answers"
    ]
    assert bad_builds(["gpu1", "gpu2"], {"0" * 12}, environ) == []


def test_the_env_file_is_part_of_the_id_but_a_secrets_value_never_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A non-secret env change is a new release (its own id); the id is derived from the env with secrets as ***,
    so two secret values give the same id (that release's env file is rewritten) and no hash of one is shown."""
    from specops.config.loader import load_config
    from specops.deploy.plan import plan_host

    config = tmp_path / "specops.toml"

    def release_id(log_level: str, token: str) -> str:
        config.write_text('[hosts.h1]\nssh = "h1"\npython = "/opt/venv/bin/python"\nmodel_path = "/srv/m"\n'
                          f'profile = "nextn"\nsecrets = ["HF_TOKEN"]\n[hosts.h1.env]\nLOG = "{log_level}"\n')  # fmt: skip
        monkeypatch.setenv("HF_TOKEN", token)
        plan = plan_host(load_config(config, tmp_path), "h1", None)
        assert token in plan.env_text and token not in plan.env_shown
        return content_release_id(TREE, "nextn", plan.unit_text, plan.env_shown)

    first = release_id("info", "hf_first")
    assert release_id("info", "hf_second") == first  # a secret's value alone: the same id
    changed = release_id("debug", "hf_first")
    assert changed != first and build_part(changed) == build_part(first)  # the same build, another configuration
