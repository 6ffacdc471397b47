"""The typed readers of what specops keeps on a host: the release manifest with its gates record, an audit line,
the lock holder, the rollback guard's state and watch. Each reads a document of today's schema (golden files in
tests/unit/golden/hostdocs), one written before versions existed, refuses a newer one with the message that says
to upgrade, and treats a malformed one the way its callers always did (unreadable, never a traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specops.commands.audit_line import parse_audit_line
from specops.commands.guard_record import GuardRecord, parse_guard_state, parse_watch
from specops.commands.hostdata import AUDIT_SCHEMA, GUARD_STATE_SCHEMA, HOLDER_SCHEMA, MANIFEST_SCHEMA
from specops.commands.manifest import BadMark, Cause, parse_gates, parse_manifest
from specops.diagnose.failure import from_gates
from specops.errors import ExitCode, HostDataTooNew
from specops.ops.lock_holder import LockHolder

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "hostdocs"
PATH = "/opt/specops/sglang/releases/x/manifest.json"


def _golden(name: str) -> object:
    return json.loads((GOLDEN / name).read_text(encoding="utf-8"))


def _refused(error: HostDataTooNew, path: str, found: int, newest: int) -> None:
    assert error.message == (
        f"llm-one: {path}: this host was deployed by a newer specops (schema {found}, this specops reads up to "
        f"{newest}): upgrade specops"
    )
    assert error.exit_code == ExitCode.REMOTE_FAILED == 5
    assert "upgrade specops" in error.hint


def test_a_manifest_of_todays_schema_reads_every_field_the_callers_use() -> None:
    manifest = parse_manifest(_golden("manifest-v2.json"), PATH, "llm-one")
    assert (manifest.schema, manifest.id, manifest.profile, manifest.verified) == (2, "3f9c2a1b7d4e-a1b2c3", "ddtree",
                                                                                    True)  # fmt: skip
    assert manifest.verified_at == "2026-11-30T02:16:40Z" and manifest.bad is None
    assert manifest.gates.passed is True and manifest.gates.readiness is not None
    assert manifest.gates.readiness.seconds == 41.7 and manifest.gates.readiness.tail == ("loading", "ready")
    assert manifest.gates.figures == {"tokens_per_s": 212.4, "accept_length": 3.1, "served_models": ["qwen"]}
    assert manifest.files is not None and manifest.files["sglang/latest"] == {"link": "srt"}
    assert from_gates(manifest.gates).present is False  # gates that passed name no failure


def test_a_manifest_written_before_versions_reads_and_names_its_recorded_failure() -> None:
    manifest = parse_manifest(_golden("manifest-v0-failed.json"), PATH, "llm-one")
    assert manifest.schema == 0 and manifest.verified is False and manifest.gates.figures is None
    assert manifest.gates.readiness is not None and manifest.gates.readiness.cause == Cause(
        "cuda-oom", "CUDA out of memory", "lower mem_fraction_static", "torch.OutOfMemoryError: CUDA out of memory"
    )
    failure = from_gates(manifest.gates)
    assert (failure.present, failure.signature, failure.summary) == (True, "cuda-oom", "CUDA out of memory")


def test_a_manifest_from_a_newer_specops_is_refused_with_the_upgrade_message() -> None:
    document = {**_golden("manifest-v2.json"), "schema": MANIFEST_SCHEMA + 1}  # type: ignore[dict-item]
    with pytest.raises(HostDataTooNew) as caught:
        parse_manifest(document, PATH, "llm-one")
    _refused(caught.value, PATH, MANIFEST_SCHEMA + 1, MANIFEST_SCHEMA)


@pytest.mark.parametrize("document", [[], "manifest", {"schema": "2"}, {"schema": -1}, {"schema": True}])
def test_a_malformed_manifest_is_a_value_error_the_host_read_treats_as_unreadable(document: object) -> None:
    with pytest.raises(ValueError, match=r"manifest\.json"):
        parse_manifest(document, PATH, "llm-one")


def test_fields_of_the_wrong_type_read_as_absent_not_as_a_crash() -> None:
    manifest = parse_manifest({"schema": 2, "verified": "yes", "profile": 7, "files": [], "bad": "x",
                               "gates": {"smoke": {"figures": [1, 2], "gates": "all"}, "readiness": 3}},
                              PATH, "llm-one")  # fmt: skip
    assert (manifest.verified, manifest.profile, manifest.files, manifest.bad) == (False, None, None, None)
    assert manifest.gates.recorded and manifest.gates.figures is None and manifest.gates.readiness is None
    assert parse_gates({}).recorded is False and parse_gates(None).recorded is False


def test_a_bad_mark_reads_its_reason_and_who() -> None:
    manifest = parse_manifest({"bad": {"reason": "hung", "when": "2026-11-30T02:00:00Z", "who": "ana@laptop"}},
                              PATH, "llm-one")  # fmt: skip
    assert manifest.bad == BadMark("hung", "2026-11-30T02:00:00Z", "ana@laptop")
    assert parse_manifest({"bad": {}}, PATH, "llm-one").bad == BadMark("marked bad")


def test_audit_lines_of_today_and_from_before_versions_read_with_their_fields() -> None:
    today, older = (GOLDEN / "audit-v1.jsonl").read_text(encoding="utf-8").splitlines()
    line = parse_audit_line(today, "audit.jsonl", "llm-one")
    assert (line.schema, line.action, line.outcome, line.host) == (1, "deploy", "deployed", "llm-one")
    assert (line.from_release, line.to_release) == ("20261101T000000Z-aaaaaaaaaaaa", "3f9c2a1b7d4e-a1b2c3")
    assert line.to_json() == json.loads(today)  # --json shows the line as written, every key
    before = parse_audit_line(older, "audit.jsonl", "llm-one")
    assert (before.schema, before.who, before.rollback_to, before.forced) == (0, "specops guard", "r-01", False)


def test_an_audit_line_from_a_newer_specops_is_refused_and_a_torn_one_is_shown_unreadable() -> None:
    with pytest.raises(HostDataTooNew) as caught:
        parse_audit_line(json.dumps({"schema": AUDIT_SCHEMA + 1, "action": "deploy"}), "/srv/audit.jsonl", "llm-one")
    _refused(caught.value, "/srv/audit.jsonl", AUDIT_SCHEMA + 1, AUDIT_SCHEMA)
    for torn in ('{"action": "dep', "[1, 2]", '{"schema": "one"}'):
        assert parse_audit_line(torn, "audit.jsonl", "llm-one").to_json() == {"unreadable": torn}


def test_a_lock_holder_of_today_and_one_without_the_later_optional_fields_read() -> None:
    text = (GOLDEN / "holder-v1.json").read_text(encoding="utf-8")
    holder = LockHolder.from_json(text, "llm-one", "holder.json")
    assert holder is not None and (holder.who, holder.pid, holder.machine_id) == (
        "ana@laptop",
        4242,
        "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
    )
    older = {k: v for k, v in json.loads(text).items() if k not in ("schema", "machine_id", "process_start")}
    read_back = LockHolder.from_json(json.dumps(older))
    assert read_back is not None and (read_back.pid, read_back.machine_id, read_back.process_start) == (4242, "", "")


def test_a_lock_holder_from_a_newer_specops_is_refused() -> None:
    newer = {**json.loads((GOLDEN / "holder-v1.json").read_text(encoding="utf-8")), "schema": HOLDER_SCHEMA + 1}
    with pytest.raises(HostDataTooNew) as caught:
        LockHolder.from_json(json.dumps(newer), "llm-one", "/run/specops/holder.json")
    _refused(caught.value, "/run/specops/holder.json", HOLDER_SCHEMA + 1, HOLDER_SCHEMA)


@pytest.mark.parametrize("change", [{"pid": "4242"}, {"pid": True}, {"user": None}, {"token": 7}])
def test_a_lock_holder_with_a_field_of_the_wrong_type_is_unreadable_not_trusted(change: dict[str, object]) -> None:
    """A `pid` that is not a number must never reach the liveness check; the lock still counts (None)."""
    document = {**json.loads((GOLDEN / "holder-v1.json").read_text(encoding="utf-8")), **change}
    assert LockHolder.from_json(json.dumps({k: v for k, v in document.items() if v is not None})) is None
    assert LockHolder.from_json("[]") is None and LockHolder.from_json("not json") is None


def test_the_guards_state_and_watch_read_typed_and_a_newer_state_is_refused() -> None:
    state = parse_guard_state({"schema": 1, "state": "no-rollback", "release": "r-02", "reason": "no target"},
                              "/opt/s/.specops-guard.json", "llm-one")  # fmt: skip
    assert (state.state, state.release, state.reason, state.rollback_to) == ("no-rollback", "r-02", "no target", None)
    assert parse_guard_state({"state": "armed"}, "g", "llm-one").state == "armed"  # written before versions
    with pytest.raises(HostDataTooNew) as caught:
        parse_guard_state({"schema": GUARD_STATE_SCHEMA + 1}, "/opt/s/.specops-guard.json", "llm-one")
    _refused(caught.value, "/opt/s/.specops-guard.json", GUARD_STATE_SCHEMA + 1, GUARD_STATE_SCHEMA)
    with pytest.raises(ValueError, match="not a JSON object"):
        parse_guard_state(["armed"], "g", "llm-one")
    watch = parse_watch({"state": "watching", "release": "r-02", "left_s": 130, "deadline": "2026-12-01T00:05:00Z"})
    assert watch is not None and (watch.state, watch.left_s) == ("watching", 130)
    assert watch.to_json()["deadline"] == "2026-12-01T00:05:00Z"
    assert parse_watch("watching") is None and parse_watch({"left_s": True}) == GuardRecord(record={"left_s": True})
