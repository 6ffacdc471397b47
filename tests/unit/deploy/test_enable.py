"""A deploy enables the engine's unit and installs and enables the boot unit, so a reboot starts the release
`current` names, and one that was never verified is rolled back (not a host left dark)."""

from __future__ import annotations

import pytest

from specops.commands.boot import boot_unit_text
from specops.ops.lock import DEFAULT_STALE_AFTER_S, lock_root
from tests.unit.deploy.scene import release
from tests.unit.deploy.world import OLD_TREE, Run, World

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


def test_a_first_install_enables_the_unit_with_systemds_own_reload_after_loading_it(world: World) -> None:
    """Not `--no-reload`: without that reload systemd does not know multi-user.target wants the unit, and
    unloads it once it stops (its InvocationID gone, so an orphan of its last run could not be told)."""
    run = world.run(world.scene())
    assert (run.outcome["outcome"], run.plan["unit_changed"]) == ("deployed", True)
    calls = run.host.commands
    assert calls.index(("systemctl", "daemon-reload")) < calls.index(ENABLE)
    assert calls.count(ENABLE) == 1
    assert not any("--no-reload" in call for call in calls)


def _show(engine: str, boot: str) -> str:
    """`systemctl show UNIT BOOT -p ...` as systemd answers it: one block per unit, an empty line between."""
    return (f"ActiveState=active\nSubState=running\nInactiveEnterTimestamp=\nUnitFileState={engine}\n\n"
            f"ActiveState=inactive\nSubState=dead\nInactiveEnterTimestamp=\nUnitFileState={boot}\n")  # fmt: skip


def _redeploy(world: World, engine: str, boot: str, boot_installed: bool = True) -> Run:
    """A one-line change over a serving release whose unit is unchanged; the boot unit as this specops writes it."""
    old = "20260101T000000Z-old"
    spec = world.scene().spec
    text = boot_unit_text(spec, lock_root(), DEFAULT_STALE_AFTER_S) if boot_installed else None
    scene = world.scene(releases=[release(old, OLD_TREE)], current=old, unit=world.unit_text,
                        engine=_show(engine, boot), boot=text)  # fmt: skip
    run = world.run(scene)
    assert (run.outcome["outcome"], run.plan["unit_changed"]) == ("deployed", False)
    run.assert_followed()
    return run


def _planned(run: Run) -> list[tuple[str, ...]]:
    return [tuple(command["argv"]) for step in run.plan["steps"] for command in step["commands"]]


def test_a_redeploy_with_both_units_enabled_neither_enables_nor_reloads_systemd(world: World) -> None:
    run = _redeploy(world, "enabled", "enabled")
    enables = [argv for argv in run.host.commands if argv[:2] == ("systemctl", "enable")]
    assert (enables, run.host.commands.count(("systemctl", "daemon-reload"))) == ([], 0)
    assert not [argv for argv in _planned(run) if argv[:2] == ("systemctl", "enable")]  # the dry run shows it


def test_a_rewritten_boot_unit_of_enabled_units_is_reloaded_not_enabled_again(world: World) -> None:
    run = _redeploy(world, "enabled", "enabled", boot_installed=False)
    assert f"/etc/systemd/system/{BOOT}" in run.host.files
    assert ENABLE not in run.host.commands
    assert run.host.commands.count(("systemctl", "daemon-reload")) == 1


@pytest.mark.parametrize(("engine", "boot"), [("enabled", "disabled"), ("disabled", "enabled"),
                                              ("enabled-runtime", "enabled"), ("enabled", "")])  # fmt: skip
def test_a_unit_not_enabled_for_the_next_boot_is_enabled(world: World, engine: str, boot: str) -> None:
    run = _redeploy(world, engine, boot)
    assert run.host.commands.count(ENABLE) == 1
    assert ENABLE in _planned(run)


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
