"""`specops status` names the release the guard, or its watch, would roll back to (the plan's target, as the
guard's state on the host says), and what the guard did instead when that target was no longer usable."""

from __future__ import annotations

import json

import pytest

from specops.cli.status_view import print_status
from specops.commands.guard import guard_state_path
from specops.commands.guard_record import parse_guard_state, parse_watch
from specops.config.inventory import HostSpec
from specops.errors import HostDataTooNew
from specops.host.recording import RecordingHost, reply
from specops.ops.guard import armed_state, guard_state
from specops.ops.status import HostStatus
from specops.remote.release.hostdata import GUARD_STATE_FILE

A, C = "20261101T000000Z-aaaa", "20261103T000000Z-cccc"


def _shown(capsys: pytest.CaptureFixture[str], guard: dict[str, object]) -> str:
    found = HostStatus(host="llm-two", current=C, running_release=C, uses_current=True, verified=False,
                       profile="ddtree", unit={"ActiveState": "active"}, health=200)  # fmt: skip
    found.guard = parse_guard_state(guard, ".specops-guard.json", "llm-two")
    print_status(found, "sglang.service", as_json=False)
    return capsys.readouterr().out


def test_status_shows_the_planned_target_while_the_guard_is_armed(capsys: pytest.CaptureFixture[str]) -> None:
    out = _shown(capsys, guard=guard_state(C, A))
    assert f"guard (armed): rolls back to {A} if the deploy of {C} dies before it is verified" in out


def test_status_shows_why_the_guard_did_not_roll_back(capsys: pytest.CaptureFixture[str]) -> None:
    reason = f"guard: ... the planned rollback target is no longer usable: ...: left {C} as it is, NOT rolled back"
    out = _shown(capsys, guard={**guard_state(C, A), "state": "no-rollback", "reason": reason})
    assert f"guard (no-rollback): {reason}" in out


def test_status_shows_the_watchs_planned_target(capsys: pytest.CaptureFixture[str]) -> None:
    watching = {"release": C, "state": "watching", "left_s": 130, "rollback_to": A}
    found = HostStatus(host="llm-two", current=C, running_release=C, uses_current=True, verified=True,
                       profile="ddtree", unit={"ActiveState": "active"}, health=200, watch=parse_watch(watching))  # fmt: skip
    print_status(found, "sglang.service", as_json=False)
    assert f"guard (watching): if {C} fails its watch, rolls back to {A}" in capsys.readouterr().out


def test_the_guards_state_is_read_from_the_host_and_a_newer_one_refused() -> None:
    spec = HostSpec(name="llm-two", ssh="llm-two", python="/usr/bin/python3", model_path="/m", base_dir="/opt/s")
    assert guard_state_path(spec).endswith("/" + GUARD_STATE_FILE)  # where the host-side guard reads it
    state = guard_state(C, A)
    host = RecordingHost("llm-two", default=reply()).script(["cat"], reply(stdout=json.dumps(state)))
    armed = armed_state(host, spec)
    assert armed is not None and armed.to_json() == state and (armed.state, armed.rollback_to) == ("armed", A)
    none = RecordingHost("llm-two", default=reply()).script(["cat"], reply(exit_code=1, stderr="No such file"))
    assert armed_state(none, spec) is None
    newer = RecordingHost("llm-two", default=reply()).script(["cat"], reply(stdout=json.dumps({**state, "schema": 9})))
    with pytest.raises(HostDataTooNew):
        armed_state(newer, spec)
