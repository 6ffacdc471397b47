"""A deploy enables the engine's unit and installs and enables the boot unit, so a reboot starts the release
`current` names, and one that was never verified is rolled back (not a host left dark)."""

from __future__ import annotations

from specops.commands.boot import boot_unit_text
from specops.ops.lock import DEFAULT_STALE_AFTER_S, lock_root
from tests.unit.deploy.scene import release
from tests.unit.deploy.world import OLD_TREE, World

BOOT = "specops-boot-sglang.service"
ENABLE = ("systemctl", "enable", "sglang.service", BOOT)


def test_a_deploy_with_an_unchanged_unit_still_enables_it_and_the_boot_unit(world: World) -> None:
    old = "20260101T000000Z-old"
    scene = world.scene(releases=[release(old, OLD_TREE)], current=old, unit=world.unit_text)
    run = world.run(scene)
    assert (run.outcome["outcome"], run.plan["unit_changed"]) == ("deployed", False)
    run.assert_followed()
    assert run.host.commands.count(ENABLE) == 1
    boot_text = boot_unit_text(scene.spec, lock_root(), DEFAULT_STALE_AFTER_S).encode()
    assert run.host.files[f"/etc/systemd/system/{BOOT}"] == boot_text
    planned = [tuple(command["argv"]) for step in run.plan["steps"] for command in step["commands"]]
    assert ENABLE in planned  # the dry run shows it


def test_a_first_install_enables_the_unit_after_the_reload(world: World) -> None:
    run = world.run(world.scene())
    assert (run.outcome["outcome"], run.plan["unit_changed"]) == ("deployed", True)
    calls = run.host.commands
    assert calls.index(("systemctl", "daemon-reload")) < calls.index(ENABLE)
    assert calls.count(ENABLE) == 1


def test_the_boot_unit_runs_the_guard_files_boot_op_with_the_guards_own_timer(world: World) -> None:
    text = boot_unit_text(world.scene().spec, "/run/specops/lock", 90)
    assert text.startswith("# Managed by specops.")
    assert "ConditionPathExists=/opt/specops/sglang/.specops-guard.py\n" in text
    assert ("ExecStart=/opt/venv/bin/python -IS /opt/specops/sglang/.specops-guard.py boot /opt/specops/sglang "
            "systemd-run --unit=specops-guard-sglang --on-active=15 --on-unit-active=15 "
            '--timer-property=AccuracySec=1s "--description=specops rollback guard for sglang.service" '
            "/opt/venv/bin/python -IS /opt/specops/sglang/.specops-guard.py guard /opt/specops/sglang "
            "sglang.service /run/specops/lock 90\n") in text  # fmt: skip
    assert text.endswith("[Install]\nWantedBy=multi-user.target\n")
