"""A deploy enables the engine's unit, so a reboot starts the release `current` names (not a host left dark)."""

from __future__ import annotations

from tests.unit.deploy.scene import release
from tests.unit.deploy.world import OLD_TREE, World


def enables(run_calls: list[tuple[str, ...]], unit: str) -> int:
    return run_calls.count(("systemctl", "enable", unit))


def test_a_deploy_with_an_unchanged_unit_still_enables_it(world: World) -> None:
    old = "20260101T000000Z-old"
    scene = world.scene(releases=[release(old, OLD_TREE)], current=old, unit=world.unit_text)
    run = world.run(scene)
    assert (run.outcome["outcome"], run.plan["unit_changed"]) == ("deployed", False)
    run.assert_followed()
    assert enables(run.host.commands, scene.spec.unit_name) == 1
    planned = [command["argv"] for step in run.plan["steps"] for command in step["commands"]]
    assert ["systemctl", "enable", scene.spec.unit_name] in planned  # the dry run shows it


def test_a_first_install_enables_the_unit_after_the_reload(world: World) -> None:
    scene = world.scene()
    run = world.run(scene)
    assert (run.outcome["outcome"], run.plan["unit_changed"]) == ("deployed", True)
    calls = run.host.commands
    reload, enable = (
        calls.index(("systemctl", "daemon-reload")),
        calls.index(("systemctl", "enable", scene.spec.unit_name)),
    )
    assert reload < enable
    assert enables(calls, scene.spec.unit_name) == 1
