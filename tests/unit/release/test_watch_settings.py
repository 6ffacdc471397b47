"""The watch's profile keys are validated strictly, and `status` words the window the way operators read it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from specops.commands.guard_record import parse_watch
from specops.config.profile import Readiness
from specops.ops.status import HostStatus

RELEASE = "20261102T000000Z-bbbb"


@pytest.mark.parametrize("bad", [{"watch_s": -1}, {"watch_s": True}, {"watch_s": 1.5}, {"watch_s": "300"},
                                 {"watch_s": 86401}, {"watch_timeout_s": 0}, {"watch_failures": 0}])  # fmt: skip
def test_watch_keys_refuse_anything_but_a_count_in_range(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Readiness.model_validate(bad)


def test_watch_defaults_and_zero_disables() -> None:
    default = Readiness()
    assert (default.watch_s, default.watch_timeout_s, default.watch_failures) == (300, 30, 3)
    assert Readiness.model_validate({"watch_s": 0}).watch_s == 0


def _status(watch: dict[str, object] | None, verified: bool = True) -> HostStatus:
    return HostStatus(host="llm-two", current=RELEASE, running_release=RELEASE, uses_current=True, verified=verified,
                      profile="ddtree", unit={}, health=200, watch=parse_watch(watch))  # fmt: skip


def test_status_says_verified_watching_with_the_time_left() -> None:
    watching = {"release": RELEASE, "state": "watching", "left_s": 130, "deadline": "2026-12-01T00:05:00Z"}
    assert _status(watching).verified_text == "verified, watching (2 min left)"
    assert _status({**watching, "left_s": 45}).verified_text == "verified, watching (45 s left)"
    assert _status(watching).to_json()["watch"]["deadline"] == "2026-12-01T00:05:00Z"


@pytest.mark.parametrize("watch", [None, {"release": RELEASE, "state": "passed", "left_s": 0},
                                   {"release": "other", "state": "watching", "left_s": 100},
                                   {"release": RELEASE, "state": "watching", "left_s": 0}])  # fmt: skip
def test_status_says_only_verified_when_no_window_runs_for_current(watch: dict[str, object] | None) -> None:
    assert _status(watch).verified_text == "verified"


def test_an_unverified_release_is_never_watching() -> None:
    watching = {"release": RELEASE, "state": "watching", "left_s": 130}
    assert _status(watching, verified=False).verified_text == "NOT verified"
