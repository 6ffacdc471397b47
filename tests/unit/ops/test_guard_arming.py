"""The guard's arming is one command run by a real sh: a file it cannot write whole stops it before the timer
starts, with the path named and no half-written file or temp file left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from specops.config.inventory import HostSpec
from specops.deploy.step_commands import guard_commands
from specops.errors import CommandFailed
from specops.ops import guard
from tests.unit.guard_here import arm_here, logged


@pytest.fixture
def spec(tmp_path: Path) -> HostSpec:
    return HostSpec(name="llm-two", ssh="llm-two", python="/usr/bin/python3", model_path="/m",
                    base_dir=str(tmp_path / "opt"))  # fmt: skip


def test_a_cut_stdin_writes_no_file_and_starts_no_timer(
    spec: HostSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = guard.arm_stdin
    monkeypatch.setattr(guard, "arm_stdin", lambda *args: whole(*args)[:-2])  # the notify file cut short
    with pytest.raises(CommandFailed) as caught:
        arm_here(spec, guard_commands(spec, "R2", "R1", "/run/specops/lock"), tmp_path, monkeypatch)
    assert f"specops-arm: could not write {spec.service_dir}/.specops-notify.json" in caught.value.message
    assert [line.split()[0] for line in logged(tmp_path / "systemd.log")] == ["systemctl", "systemctl"]  # no run
    names = sorted(path.name for path in Path(spec.service_dir).iterdir())
    assert names == [".specops-guard.json", ".specops-guard.py", ".specops-watch-stop"]


def test_the_files_are_written_as_sent(spec: HostSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    arm_here(spec, guard_commands(spec, "R2", "R1", "/run/specops/lock"), tmp_path, monkeypatch)
    service = Path(spec.service_dir)
    assert (service / ".specops-guard.py").read_text() == guard.guard_script()
    assert (service / ".specops-guard.json").read_text() == guard.state_line("R2", "R1") + "\n"
    assert (service / ".specops-notify.json").read_bytes() == guard.host_notify_document("llm-two")
