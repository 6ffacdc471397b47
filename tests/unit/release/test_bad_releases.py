"""Bad releases: marked by hand (`releases HOST --mark-bad`) or by any rollback for the release it leaves, and
then never a rollback target (automatic or without --to); `--to BAD` is refused unless forced. The real
host-side script runs through LocalHost for the marks; the rollback runs in-process with systemctl recorded."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from specops.config.inventory import HostSpec
from specops.errors import ExitCode, UsageError
from specops.host.local import LocalHost
from specops.ops.bad_releases import mark_bad, unmark_bad
from specops.ops.release import read_listing
from specops.remote.release.hostdata import PLAIN_SUMMARY_SCHEMA, SUMMARY_SCHEMA, Refused
from specops.remote.release.rollback import op_rollback, rollback_target
from tests.unit.release.hostfixture import add_release, audit_lines, current, point_current, record_systemctl

OLD, MIDDLE, NEW = "20261101T000000Z-aaaa", "20261102T000000Z-bbbb", "20261103T000000Z-cccc"


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    service_dir = tmp_path / "host" / "sglang"
    for release_id in (OLD, MIDDLE, NEW):
        add_release(service_dir, release_id)
    point_current(service_dir, NEW)
    return service_dir


@pytest.fixture
def spec(tmp_path: Path) -> HostSpec:
    return HostSpec(name="llm-two", ssh="llm-two", python=sys.executable, model_path="/m",
                    base_dir=str(tmp_path / "host"))  # fmt: skip


def _summary_schema(service: Path, release_id: str) -> int:
    return int(json.loads((service / ".release-summaries" / f"{release_id}.json").read_text())["schema"])


def test_a_mark_is_listed_with_its_reason_and_audited_and_unmarking_removes_it(spec: HostSpec, service: Path) -> None:
    host = LocalHost("llm-two")
    marked = mark_bad(host, spec, MIDDLE, "repetition loops at temperature 0.7")
    assert marked.bad_reason == "repetition loops at temperature 0.7"
    assert marked.bad is not None and "@" in (marked.bad.who or "") and (marked.bad.when or "").endswith("Z")
    listed = {r.id: r for r in read_listing(host, spec).releases}
    assert listed[MIDDLE].bad_reason == "repetition loops at temperature 0.7"
    assert not listed[MIDDLE].rollback_target and listed[OLD].rollback_target
    assert _summary_schema(service, MIDDLE) == SUMMARY_SCHEMA  # an older specops refuses this host
    assert _summary_schema(service, OLD) == PLAIN_SUMMARY_SCHEMA  # ... and reads the others as before
    last = audit_lines(service)[-1]
    assert (last["action"], last["to"], last["message"]) == ("mark-bad", MIDDLE, "repetition loops at temperature 0.7")
    cleared = unmark_bad(host, spec, MIDDLE)
    assert cleared.bad is None and cleared.rollback_target
    assert _summary_schema(service, MIDDLE) == PLAIN_SUMMARY_SCHEMA
    assert audit_lines(service)[-1]["message"] == "was: repetition loops at temperature 0.7"


def test_marking_a_release_that_is_not_there_is_a_usage_error(spec: HostSpec, service: Path) -> None:
    with pytest.raises(UsageError) as caught:
        mark_bad(LocalHost("llm-two"), spec, "20261104T000000Z-dddd")
    assert caught.value.message == "llm-two: no release 20261104T000000Z-dddd on the host"
    assert caught.value.exit_code == ExitCode.USAGE
    assert "specops releases llm-two" in caught.value.hint


def test_a_bad_release_is_never_chosen_and_refused_by_name_unless_forced(spec: HostSpec, service: Path) -> None:
    mark_bad(LocalHost("llm-two"), spec, MIDDLE, "hung after verified")
    assert rollback_target(str(service), "") == OLD  # the newest verified that is neither current nor bad
    with pytest.raises(Refused) as caught:
        rollback_target(str(service), MIDDLE)
    assert str(caught.value) == f"release {MIDDLE} is marked bad (hung after verified): pass --force to roll back to it"
    assert caught.value.kind == "bad"
    assert rollback_target(str(service), MIDDLE, force=True) == MIDDLE


def test_no_target_when_every_other_verified_release_is_bad(spec: HostSpec, service: Path) -> None:
    host = LocalHost("llm-two")
    mark_bad(host, spec, MIDDLE)
    mark_bad(host, spec, OLD)
    with pytest.raises(
        Refused, match=r"no verified release other than the current one \(and not marked bad\) to roll back to"
    ):
        rollback_target(str(service), "")


def test_a_rollback_marks_the_release_it_leaves_bad_with_the_reason(
    spec: HostSpec, service: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = record_systemctl(monkeypatch)
    reply = op_rollback(str(service), "sglang.service", "", "specops rollback by alice@laptop")
    assert (reply["previous"], reply["current"], reply["marked_bad"]) == (NEW, MIDDLE, NEW)
    assert current(service) == MIDDLE and ["systemctl", "restart", "sglang.service"] in calls
    listed = {r.id: r for r in read_listing(LocalHost("llm-two"), spec).releases}
    assert listed[NEW].bad_reason == "rolled back: specops rollback by alice@laptop"
    entry = audit_lines(service)[-1]
    assert (entry["action"], entry["from"], entry["to"], entry["marked_bad"]) == ("rollback", NEW, MIDDLE, NEW)
    # the next rollback without --to skips the release just left: it goes further back, never "forward"
    again = op_rollback(str(service), "sglang.service", "", "again")
    assert (again["current"], again["marked_bad"]) == (OLD, MIDDLE)


def test_a_forced_rollback_to_a_bad_release_works(
    spec: HostSpec, service: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_systemctl(monkeypatch)
    mark_bad(LocalHost("llm-two"), spec, OLD)
    with pytest.raises(Refused):
        op_rollback(str(service), "sglang.service", OLD, "by name")
    assert current(service) == NEW  # refused before anything changed
    assert op_rollback(str(service), "sglang.service", OLD, "by name", "force")["current"] == OLD


def test_a_verified_deploy_of_a_bad_release_clears_its_mark(spec: HostSpec, service: Path) -> None:
    """The deploy's `verified` step merges `"bad": null`: the release was just proven again."""
    from specops.ops.release_changes import update_manifest

    host = LocalHost("llm-two")
    mark_bad(host, spec, MIDDLE, "hung")
    again = update_manifest(host, spec, MIDDLE, {"verified": True, "bad": None})
    assert again.bad is None and again.rollback_target
    assert _summary_schema(service, MIDDLE) == PLAIN_SUMMARY_SCHEMA
