"""Versioned host data beside the releases: the lock's holder.json, audit lines (written by specops and by the
host-side rollback) and the rollback guard's script. A newer one is refused with exit 5 and "upgrade
specops"; one without a version (written before versions existed) is read as before."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from specops.config.inventory import HostSpec
from specops.deploy.step_commands import guard_commands
from specops.errors import ExitCode, HostDataTooNew
from specops.host.local import LocalHost
from specops.ops import audit, guard
from specops.ops.lock import LockHolder, acquire, status
from specops.remote.release.hostdata import AUDIT_SCHEMA, GUARD_SCHEMA, HOLDER_SCHEMA
from specops.remote.release.rollback import append_audit
from tests.unit.guard_here import arm_here, logged
from tests.unit.lock.conftest import holder_json


@pytest.fixture
def spec(tmp_path: Path) -> HostSpec:
    return HostSpec(name="llm-two", ssh="llm-two", python="/usr/bin/python3", model_path="/m",
                    base_dir=str(tmp_path / "opt"))  # fmt: skip


def _too_new(error: HostDataTooNew, path: str, found: int, newest: int) -> None:
    assert error.message == (
        f"llm-two: {path}: this host was deployed by a newer specops (schema {found}, this specops reads up to "
        f"{newest}): upgrade specops"
    )
    assert error.exit_code == ExitCode.REMOTE_FAILED == 5


def _write_holder(root: str, change: dict[str, object], drop: str = "") -> None:
    path = Path(root, "holder.json")
    data = json.loads(path.read_text())
    data.update(change)
    data.pop(drop, None)
    path.write_text(json.dumps(data, sort_keys=True) + "\n")


def test_holder_json_carries_its_version_and_one_without_is_read(local: LocalHost, root: str) -> None:
    holder = LockHolder.current("specops deploy llm-two")
    with acquire(local, holder, root=root, heartbeat_s=60):
        assert holder_json(root)["schema"] == HOLDER_SCHEMA
        _write_holder(root, {}, drop="schema")
        info = status(local, root=root)
        assert info is not None and info.holder == holder


def test_a_holder_written_by_a_newer_specops_is_refused_not_half_read(local: LocalHost, root: str) -> None:
    with acquire(local, LockHolder.current("specops deploy llm-two"), root=root, heartbeat_s=60):
        _write_holder(root, {"schema": HOLDER_SCHEMA + 1})
        with pytest.raises(HostDataTooNew) as caught:
            status(local, root=root)
        _too_new(caught.value, f"{root}/holder.json", HOLDER_SCHEMA + 1, HOLDER_SCHEMA)
        with pytest.raises(HostDataTooNew):
            acquire(local, LockHolder.current("specops rollback llm-two"), root=root)


@pytest.fixture
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def test_audit_lines_carry_their_version_on_the_host_and_locally(
    spec: HostSpec, state_home: Path, local: LocalHost
) -> None:
    audit.record(local, spec, {"action": "lock-release", "outcome": "released"})  # not built by new_entry
    append_audit(spec.service_dir, {"action": "rollback", "outcome": "restarted"})  # the host-side rollback's
    on_host = Path(spec.service_dir, "audit.jsonl").read_text().splitlines()
    local_copy = (state_home / "specops" / "audit.jsonl").read_text().splitlines()
    assert [json.loads(line)["schema"] for line in [*on_host, *local_copy]] == [AUDIT_SCHEMA] * 3


def test_audit_lines_without_a_version_are_read_and_a_newer_one_is_refused(
    spec: HostSpec, state_home: Path, local: LocalHost
) -> None:
    path = Path(spec.service_dir, "audit.jsonl")
    path.parent.mkdir(parents=True)
    path.write_text('{"action": "deploy", "outcome": "deployed"}\n')
    assert [line.to_json() for line in audit.read(local, spec, 10)] == [{"action": "deploy", "outcome": "deployed"}]
    with path.open("a") as log:
        log.write(json.dumps({"schema": AUDIT_SCHEMA + 1, "action": "deploy"}) + "\n")
    with pytest.raises(HostDataTooNew) as caught:
        audit.read(local, spec, 10)
    _too_new(caught.value, str(path), AUDIT_SCHEMA + 1, AUDIT_SCHEMA)


def _guard_file(spec: HostSpec, first_line: str | None) -> Path:
    """The guard script a host holds before the arming: none, or one starting with `first_line`."""
    script = Path(guard.guard_script_path(spec))
    script.parent.mkdir(parents=True, exist_ok=True)
    if first_line is not None:
        script.write_text(first_line + "print('an earlier guard')\n")
    return script


@pytest.mark.parametrize("first_line", [None, "import re\n", f"# specops rollback guard, schema {GUARD_SCHEMA}\n"])
def test_the_guard_is_armed_over_none_an_unversioned_or_a_current_one(
    spec: HostSpec, first_line: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _guard_file(spec, first_line)
    asked = arm_here(spec, guard_commands(spec, "R2", "R1", "/run/specops/lock"), tmp_path, monkeypatch)
    assert script.read_text().startswith(f"# specops rollback guard, schema {GUARD_SCHEMA}\n")
    assert script.read_text() == guard.guard_script()
    assert [line.split()[:2] for line in asked] == [["systemctl", "stop"], ["systemctl", "reset-failed"],
                                                   ["systemd-run", "--unit=specops-guard-sglang"]]  # fmt: skip
    state = json.loads(Path(spec.service_dir, ".specops-guard.json").read_text())
    assert (state["release"], state["rollback_to"]) == ("R2", "R1")
    modes = {path.name: path.stat().st_mode & 0o777 for path in Path(spec.service_dir).glob(".specops-[gn]*")}
    assert modes == {".specops-guard.py": 0o600, ".specops-guard.json": 0o600, ".specops-notify.json": 0o600}


def test_a_guard_armed_by_a_newer_specops_is_left_alone(
    spec: HostSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    newer = f"# specops rollback guard, schema {GUARD_SCHEMA + 1}\n"
    script = _guard_file(spec, newer)
    with pytest.raises(HostDataTooNew) as caught:
        arm_here(spec, guard_commands(spec, "R2", "R1", "/run/specops/lock"), tmp_path, monkeypatch)
    _too_new(caught.value, guard.guard_script_path(spec), GUARD_SCHEMA + 1, GUARD_SCHEMA)
    assert logged(tmp_path / "systemd.log") == []  # not stopped, not replaced
    assert script.read_text() == newer + "print('an earlier guard')\n"
    assert [path.name for path in Path(spec.service_dir).iterdir()] == [".specops-guard.py"]


def test_the_guard_script_with_its_version_line_still_runs(
    spec: HostSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The version line is a comment: the host's python runs the file as before (here: the guard op, with
    a fresh lock heartbeat, decides to do nothing)."""
    host = LocalHost("llm-two")
    lock_dir = tmp_path / "lock"
    lock_dir.mkdir()
    arm_here(spec, guard_commands(spec, "R2", "R1", str(lock_dir)), tmp_path, monkeypatch)
    script = Path(guard.guard_script_path(spec))
    result = host.run(
        [sys.executable, "-I", str(script), "guard", spec.service_dir, spec.unit_name, str(lock_dir), "90"]
    )
    assert json.loads(result.text)["action"] == "none"
