"""A release's configuration on the host (remote/release/relconfig.py): its env file comes back with it, 0600."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from specops.remote.release import relconfig
from specops.remote.release import rollback as remote_rollback
from specops.remote.release.script import NOT_HASHED, RELEASE_ENV

OLD, NEW = "20260101T000000Z-old", "20260102T000000Z-new"


def _release(service: Path, release_id: str, env: str | None, unit: str = "[Service]\n") -> None:
    folder = service / "releases" / release_id
    folder.mkdir(parents=True)
    manifest: dict[str, Any] = {"schema": 2, "unit": unit}
    if env is not None:
        manifest["env_file"] = str(service / "env")
        (folder / RELEASE_ENV).write_text(env)
        (folder / RELEASE_ENV).chmod(0o600)
    (folder / "manifest.json").write_text(json.dumps(manifest))


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(relconfig, "UNIT_DIR", str(tmp_path / "units"))
    (tmp_path / "units").mkdir()
    return tmp_path / "sglang"


def test_the_release_env_file_is_never_part_of_the_tree_hash() -> None:
    assert RELEASE_ENV in NOT_HASHED


def test_restoring_a_release_puts_its_own_env_file_back_root_only(service: Path) -> None:
    _release(service, OLD, 'A="old"\n')
    (service / "env").write_text('A="broken"\n')
    (service / "env").chmod(0o644)
    assert relconfig.restore_config(str(service), OLD, "sglang.service") == {"unit_restored": True, "env": "restored"}
    assert (service / "env").read_text() == 'A="old"\n'
    assert os.stat(service / "env").st_mode & 0o777 == 0o600
    assert (
        relconfig.restore_config(str(service), OLD, "sglang.service")["env"] == "same"
    )  # nothing written the second time


def test_a_release_from_before_env_files_were_kept_leaves_the_live_one(service: Path) -> None:
    _release(service, OLD, None)
    (service / "env").write_text('A="live"\n')
    assert relconfig.restore_config(str(service), OLD, "sglang.service")["env"] == "not recorded"
    assert (service / "env").read_text() == 'A="live"\n'


def test_restore_config_without_a_release_names_the_current_one(service: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _release(service, OLD, 'A="old"\n')
    os.symlink(service / "releases" / OLD, service / "current")
    reloads: list[list[str]] = []
    import subprocess

    monkeypatch.setattr(subprocess, "run", lambda argv, **_: reloads.append(list(argv)))
    done = relconfig.op_restore_config(str(service), "sglang.service")
    assert done == {"release": OLD, "unit_restored": True, "env": "restored"}
    assert reloads == [["systemctl", "daemon-reload"]]  # the unit file changed: systemd reads it again


@pytest.mark.parametrize(("flags", "marked"), [("", [NEW]), ("keep-unmarked", [])])
def test_the_host_side_rollback_restores_the_target_env_and_marks_only_when_asked(
    service: Path, monkeypatch: pytest.MonkeyPatch, flags: str, marked: list[str]
) -> None:
    _release(service, OLD, 'A="old"\n')
    _release(service, NEW, 'A="broken"\n')
    (service / "env").write_text('A="broken"\n')
    marks: list[str] = []
    import subprocess

    monkeypatch.setattr(subprocess, "run", lambda argv, **_: None)
    monkeypatch.setattr(remote_rollback, "rollback_target", lambda service_dir, target, force=False: OLD)
    monkeypatch.setattr(remote_rollback, "op_switch", lambda service_dir, release_id: {"previous": NEW})
    monkeypatch.setattr(remote_rollback, "mark_left_release",
                        lambda service_dir, left, back_to, reason, who: marks.append(left) or left)  # fmt: skip
    done = remote_rollback.op_rollback(str(service), "sglang.service", OLD, "gates failed", flags)
    assert (done["current"], done["env"], marks) == (OLD, "restored", marked)
    assert (service / "env").read_text() == 'A="old"\n'
    audit = json.loads((service / "audit.jsonl").read_text())
    assert (audit["env"], audit["marked_bad"]) == ("restored", marked[0] if marked else None)
