"""A watch record still saying "watching" after its watch is gone (the host rebooted, or its process was killed)
is listed as "cut short", never as a window with time left: the transient watch unit does not survive a reboot,
its record on disk does."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from specops.commands.guard_record import parse_watch
from specops.ops.status import HostStatus
from specops.remote.release import boot
from specops.remote.release.catalog import op_list
from specops.remote.release.script import WATCH_FILE
from tests.unit.release.hostfixture import add_release, point_current

RELEASE = "20261102T000000Z-bbbb"


@pytest.fixture
def service(tmp_path: Path) -> Path:
    service_dir = tmp_path / "sglang"
    add_release(service_dir, RELEASE)
    point_current(service_dir, RELEASE)
    return service_dir


def _write(service: Path, **mark: object) -> dict[str, object]:
    record = {"schema": 1, "release": RELEASE, "state": "watching", "deadline": "2026-12-01T00:05:00Z",
              "deadline_epoch": int(time.time()) + 300, "failures": 0, "reason": "", **mark}  # fmt: skip
    (service / WATCH_FILE).write_text(json.dumps(record))
    listed = op_list(str(service))["watch"]
    assert isinstance(listed, dict)
    return listed


def test_a_running_watch_is_watching(service: Path) -> None:
    listed = _write(service, **boot.process_mark())  # this process is alive, on this boot
    assert (listed["state"], listed["left_s"] > 250) == ("watching", True)


def test_a_watch_from_an_earlier_boot_was_cut_short_by_a_reboot(service: Path) -> None:
    listed = _write(service, **{**boot.process_mark(), "boot_id": "0e4b8a9c-earlier-boot"})
    assert (listed["state"], listed["left_s"]) == ("cut-short", 0)
    assert listed["reason"] == (
        f"cut short by a reboot: the guard stopped watching {RELEASE} before its deadline (2026-12-01T00:05:00Z); "
        "it serves, verified, without the rest of its window"
    )


def test_a_watch_whose_process_is_gone_was_cut_short(service: Path) -> None:
    mark = {**boot.process_mark(), "pid": os.getpid(), "pid_start": "1"}  # this pid, another start: not it
    listed = _write(service, **mark)
    assert listed["state"] == "cut-short"
    assert "without recording why (its process was killed)" in listed["reason"]


def test_a_record_without_marks_cannot_tell_and_stays_as_written(service: Path) -> None:
    assert _write(service)["state"] == "watching"


def test_the_watch_writes_its_boot_and_process_into_the_record() -> None:
    mark = boot.process_mark()
    assert mark["boot_id"] == Path(boot.BOOT_ID_FILE).read_text().strip()
    assert mark["pid"] == os.getpid() and mark["pid_start"] == boot.process_start(os.getpid()) != ""


def _status(watch: dict[str, object] | None, unit: dict[str, str] | None = None) -> HostStatus:
    return HostStatus(host="llm-two", current=RELEASE, running_release=RELEASE, uses_current=True, verified=True,
                      profile="ddtree", unit=unit or {}, health=200, watch=parse_watch(watch))  # fmt: skip


def test_status_says_the_watch_was_cut_short_not_watching(service: Path) -> None:
    listed = _write(service, **{**boot.process_mark(), "boot_id": "0e4b8a9c-earlier-boot"})
    found = _status(listed)
    assert found.verified_text == "verified, watch cut short"
    assert found.watching_left_s is None
    assert found.to_json()["watch"]["state"] == "cut-short"


@pytest.mark.parametrize(("state", "enabled", "warning"), [
    ("enabled", True, None), ("", None, None),
    ("disabled", False, "enabled: no (disabled): a reboot leaves the engine down; the next deploy enables it"),
])  # fmt: skip
def test_status_warns_when_the_unit_is_not_enabled(state: str, enabled: bool | None, warning: str | None) -> None:
    found = _status(None, {"UnitFileState": state} if state else {})
    assert (found.enabled, found.enabled_warning, found.to_json()["enabled"]) == (enabled, warning, enabled)
