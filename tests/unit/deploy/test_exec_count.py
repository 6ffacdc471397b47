"""How many execs a deploy costs the host: every command rides on one conversation, except the push's own.

Each exec pays a channel and the host's login shell (0.15-0.3 s where .bashrc runs pyenv or conda init), so
the count is what the deploy's own time is made of. The RecordingHost marks each call that was a request on
the conversation; `execs` are the others.
"""

from __future__ import annotations

from specops.host.recording import Call
from tests.unit.deploy.scene import PYTHON, release
from tests.unit.deploy.world import FAIL_BRANCH, OLD_TREE, World

MAX_EXECS = 5
MAX_REQUESTS = 27  # a one-line redeploy on the scripted host, both units enabled (45, then 35, before the batching)


def exec_kinds(execs: list[Call]) -> list[str]:
    return [call.kind if call.kind == "conversation" else " ".join(call.argv[4:6]) for call in execs]


def test_a_new_release_with_an_unchanged_unit_costs_two_execs(world: World) -> None:
    old = "20260101T000000Z-old"
    scene = world.scene(releases=[release(old, OLD_TREE)], current=old, unit=world.unit_text)
    run = world.run(scene)
    assert (run.outcome["outcome"], run.plan["unit_changed"]) == ("deployed", False)
    run.assert_followed()
    execs = run.host.execs
    assert len(execs) <= MAX_EXECS
    assert exec_kinds(execs) == ["conversation", f"session {scene.spec.service_dir}"]
    requests = [call for call in run.host.calls if call.via == "conversation"]
    assert len(requests) > 20  # lock, unit, manifest, guard, switch, stop, restart, polls, record, unlock...


def test_a_changed_unit_and_a_rollback_still_ride_on_the_one_conversation(world: World) -> None:
    old = "20260101T000000Z-old"
    older = "# Managed by specops. An older render.\n[Unit]\nold\n"
    run = world.run(world.scene(releases=[release(old, OLD_TREE)], current=old, unit=older), smokes=(False, True))
    assert (run.outcome["outcome"], run.plan["unit_changed"]) == ("rolled-back", True)
    run.assert_followed(FAIL_BRANCH)
    assert exec_kinds(run.host.execs) == ["conversation", f"session {world.scene().spec.service_dir}"]


def test_the_dry_run_shows_the_conversation_first(world: World) -> None:
    run = world.run(world.scene())
    first = run.plan["steps"][0]["commands"][0]
    assert first["kind"] == "conversation"
    assert first["argv"][:3] == [PYTHON, "-IS", "-c"]
    assert "one exec for the whole deploy" in first["note"]


def test_the_compile_cache_the_guard_and_its_hand_over_are_one_request_each(world: World) -> None:
    """Sequential commands to the same host ride as one request where one script can run them: the cache's
    folder and link (5 commands before), the guard's arming (its schema read, disarm, three files, timer: 6
    before) and its hand-over to the watch (the disarm's 4 commands and the watch's start before)."""
    old = "20260101T000000Z-old"
    run = world.run(world.scene(releases=[release(old, OLD_TREE)], current=old, unit=world.unit_text))
    assert run.outcome["outcome"] == "deployed"
    requests = [call.argv for call in run.host.calls if call.via == "conversation"]
    scripts = [
        argv[3]
        for argv in requests
        if argv[:2] == ("sh", "-c") and argv[3] in ("specops-cache", "specops-arm", "specops-disarm", "specops-watch")
    ]
    assert scripts == ["specops-cache", "specops-arm", "specops-watch"]  # the guard armed, then handed over
    singles = [
        argv for argv in requests if argv[:1] in (("mkdir",), ("chmod",), ("ln",), ("mv",), ("touch",), ("head",))
    ]
    assert not [call for call in run.host.calls if call.kind == "put" and ".specops-guard" in call.path]
    assert singles == []
    assert len(requests) <= MAX_REQUESTS
