"""The boot op (the boot unit runs it from the guard file at every boot): it re-arms the guard's timer when the
host went down between a deploy's switch and its outcome, leaves a verified or a recorded-failed `current`
alone, and writes a watch the reboot ended as cut short."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specops.ops.guard import guard_script
from specops.remote.release.script import WATCH_FILE
from tests.unit.release.hostfixture import add_release, audit_lines, point_current

OLD, NEW = "20261101T000000Z-aaaa", "20261102T000000Z-bbbb"


def _boot(service: Path, tmp_path: Path) -> tuple[dict[str, object], bool]:
    """Run the real guard file's boot op, as the boot unit does; the arming command only leaves a mark."""
    guard = tmp_path / "guard.py"
    guard.write_text(guard_script())
    armed = tmp_path / "armed"
    argv = [sys.executable, "-I", str(guard), "boot", str(service), "sh", "-c", f"echo armed > {armed}"]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60)
    return json.loads(done.stdout), armed.exists()


def _manifest_written_after_the_switch(service: Path, release_id: str, verified: bool) -> None:
    path = service / "releases" / release_id / "manifest.json"
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps({**manifest, "verified": verified, "gates": {"smoke": {"ok": verified}}}))
    switched = os.lstat(service / "current").st_mtime_ns
    os.utime(path, ns=(switched + 10**9, switched + 10**9))


@pytest.fixture
def service(tmp_path: Path) -> Path:
    service_dir = tmp_path / "sglang"
    add_release(service_dir, OLD)
    add_release(service_dir, NEW, verified=False)
    return service_dir


def test_a_release_switched_and_never_verified_gets_the_guard_again(service: Path, tmp_path: Path) -> None:
    point_current(service, NEW)  # the deploy switched, then the host went down
    reply, armed = _boot(service, tmp_path)
    assert (reply["ok"], reply["action"], reply["current"], armed) == (True, "armed", NEW, True)


def test_a_verified_current_is_left_to_the_enabled_engine_unit(service: Path, tmp_path: Path) -> None:
    point_current(service, OLD)
    reply, armed = _boot(service, tmp_path)
    assert (reply["action"], reply["current"], armed) == ("none", OLD, False)


def test_a_release_its_deploy_recorded_as_failed_is_left_as_the_operator_left_it(service: Path, tmp_path: Path) -> None:
    point_current(service, NEW)
    _manifest_written_after_the_switch(service, NEW, verified=False)  # gates failed, kept with --no-rollback
    reply, armed = _boot(service, tmp_path)
    assert (reply["action"], armed) == ("none", False)


def test_a_watch_from_the_boot_before_is_written_cut_short_and_audited(service: Path, tmp_path: Path) -> None:
    point_current(service, OLD)
    record = {"schema": 1, "release": OLD, "state": "watching", "deadline": "2026-12-01T00:05:00Z",
              "deadline_epoch": 0, "boot_id": "an-earlier-boot", "pid": 1, "pid_start": "1"}  # fmt: skip
    (service / WATCH_FILE).write_text(json.dumps(record))
    reply, _ = _boot(service, tmp_path)
    written = json.loads((service / WATCH_FILE).read_text())
    assert written["state"] == "cut-short" and written["reason"].startswith("cut short by a reboot")
    assert reply["watch"] == written["reason"]
    assert [(line["action"], line["outcome"], line["to"]) for line in audit_lines(service)] == [
        ("watch", "cut-short", OLD)
    ]
    assert _boot(service, tmp_path)[0]["watch"] is None  # settled once


def test_a_verified_current_gets_its_own_env_file_back_before_its_engine_starts(service: Path, tmp_path: Path) -> None:
    """The host went down between a deploy's env/unit write and its switch: the boot op (ordered before the
    engine's unit) puts back the env file the current release was verified with."""
    folder = service / "releases" / OLD
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "env_file": str(service / "env")}))
    (folder / ".specops-env").write_text('A="verified"\n')
    (service / "env").write_text('A="never verified"\n')
    point_current(service, OLD)
    guard = tmp_path / "guard.py"
    guard.write_text(guard_script())
    arm = ["true", "guard", str(service), "sglang-test.service", str(tmp_path / "lock"), "90"]
    argv = [sys.executable, "-I", str(guard), "boot", str(service), *arm]
    reply = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout)
    assert (reply["action"], reply["config"]) == ("none", {"release": OLD, "unit_restored": False, "env": "restored"})
    assert (service / "env").read_text() == 'A="verified"\n'
    assert os.stat(service / "env").st_mode & 0o777 == 0o600
