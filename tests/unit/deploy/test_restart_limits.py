"""Deliberate restarts never count against the unit's crash-loop protection (StartLimitBurst=).

systemd counts every start of a unit, including the ones a deploy or rollback asks for; with the default
StartLimitBurst=3 in StartLimitIntervalSec=1800, the fourth deploy within 30 minutes would be refused
(`start-limit-hit`). Every deliberate restart is therefore preceded by `systemctl reset-failed UNIT`, in the
plan the dry run shows and in what the deploy runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from specops.config.inventory import HostSpec
from specops.host.recording import RecordingHost, reply
from specops.ops.unit import restart
from specops.remote.release import rollback as remote_rollback
from tests.unit.deploy.scene import release
from tests.unit.deploy.world import World


class FakeSystemd:
    """systemd's start-rate limit, as a RecordingHost answers it: `reset-failed` forgets the starts."""

    def __init__(self, burst: int) -> None:
        self.burst, self.starts, self.result = burst, 0, "success"

    def host(self) -> RecordingHost:
        restored = '{"ok": true, "release": "r", "unit_restored": false, "env": "same"}'
        return RecordingHost("gpu1").script(["systemctl"], reply()).script(["/opt/venv/bin/python"], reply(restored))

    def replay(self, host: RecordingHost) -> str:
        """Apply the recorded commands in order; the unit's Result= afterwards."""
        for argv in host.commands:
            if argv[:2] == ("systemctl", "reset-failed"):
                self.starts, self.result = 0, "success"
            elif argv[:2] == ("systemctl", "restart"):
                self.starts += 1
                self.result = "start-limit-hit" if self.starts > self.burst else "success"
        return self.result


def test_four_deliberate_restarts_in_a_row_stay_within_the_start_limit() -> None:
    systemd = FakeSystemd(burst=3)
    spec = HostSpec(name="gpu1", ssh="gpu1", python="/opt/venv/bin/python", model_path="/srv/models/target")
    results = []
    for _ in range(4):
        host = systemd.host()
        restart(host, spec)
        results.append(systemd.replay(host))
    assert results == ["success"] * 4


def test_a_deploy_resets_the_start_limit_counter_right_before_its_restart(world: World) -> None:
    scene = world.scene(releases=[release("20260101T000000Z-old", "0" * 64)], current="20260101T000000Z-old",
                        unit=world.unit_text)  # fmt: skip
    run = world.run(scene)
    assert (run.outcome["outcome"], run.result.code) == ("deployed", 0)
    commands = run.host.commands
    restarts = [index for index, argv in enumerate(commands) if argv[:2] == ("systemctl", "restart")]
    assert len(restarts) == 1
    unit = commands[restarts[0]][2]
    assert commands[restarts[0] - 1] == ("systemctl", "reset-failed", unit)
    gates = next(step for step in run.plan["steps"] if step["step"] == "gates")
    shown = [command["command"] for command in gates["commands"]]
    assert shown.index(f"systemctl reset-failed {unit}") + 1 == shown.index(f"systemctl restart {unit}")
    run.assert_followed()


def test_the_host_side_rollback_resets_the_start_limit_before_it_restarts(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Used by `specops rollback`, a deploy's own rollback and the guard alike."""
    ran: list[list[str]] = []

    class Done:
        returncode = 0

    def fake_run(argv: list[str], **_: Any) -> Done:
        ran.append(list(argv))
        return Done()

    import subprocess

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(
        remote_rollback, "rollback_target", lambda service_dir, target, force=False: "20260101T000000Z-old"
    )
    monkeypatch.setattr(remote_rollback, "op_switch", lambda service_dir, release_id: {"previous": "new"})
    monkeypatch.setattr(
        remote_rollback,
        "restore_config",
        lambda service_dir, release_id, unit: {"unit_restored": False, "env": "not recorded"},
    )
    remote_rollback.op_rollback(str(tmp_path), "sglang.service", "", "test")
    assert ran == [["systemctl", "daemon-reload"], ["systemctl", "enable", "sglang.service"],
                   ["systemctl", "reset-failed", "sglang.service"],
                   ["systemctl", "restart", "sglang.service"]]  # fmt: skip
    assert '"action": "rollback"' in (tmp_path / "audit.jsonl").read_text()
