"""`specops rollback` decides before it acts: a rollback that cannot happen is an `error:`/`hint:` refusal before
the lock, the drain or the stop (the host runs nothing but its listing), and `--dry-run` prints the plan having
run nothing else. Against a scripted host (tests/unit/deploy/scene.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from specops.commands.release import Listing
from tests.unit.clirun import CliResult
from tests.unit.deploy.scene import HOST, release, use_scene
from tests.unit.deploy.test_rollback import NEW, OLD, _commands
from tests.unit.deploy.world import World

BAD = "20260101T120000Z-bad"
NOTHING_CHANGED = f"nothing on the host was changed; {NEW} still serves"


def _run(world: World, releases: list[dict[str, object]], *args: str, to: str = OLD) -> tuple[CliResult, Ran]:
    scene = world.scene(releases=releases, current=NEW, unit=world.unit_text,
                        rollback_reply={"ok": True, "previous": NEW, "current": to})  # fmt: skip
    hosts = [scene.host()]
    use_scene(world.monkeypatch, scene, hosts, [True])
    result = world.cli("rollback", HOST, *args)
    return result, Ran(_commands(hosts[0].calls), [call.argv for call in hosts[0].calls])


@dataclass
class Ran:
    """What the scripted host was asked: each command by what it does, and each argv."""

    commands: list[str]
    argvs: list[tuple[str, ...]]


def _bad(release_id: str) -> dict[str, object]:
    return {**release(release_id, "2" * 64), "bad": {"reason": "hung after verified", "when": "x", "who": "y"}}


@pytest.mark.parametrize(
    ("args", "message", "hint"),
    [
        ((), "no verified release other than the current one (and not marked bad) to roll back to",
         f"`specops rollback {HOST} --to ID --force`"),
        (("--to", "20260103T000000Z-typo"), "release 20260103T000000Z-typo does not exist on this host",
         f"`specops releases {HOST}`"),
        (("--to", BAD), f"release {BAD} is marked bad (hung after verified)", "pass --force"),
    ],
)  # fmt: skip
def test_a_rollback_that_cannot_happen_is_refused_before_the_lock_and_the_stop(
    world: World, args: tuple[str, ...], message: str, hint: str
) -> None:
    result, ran = _run(world, [_bad(BAD), release(NEW, "1" * 64)], *args)
    assert result.code == 1
    assert f"error: {HOST}: {message}: {NOTHING_CHANGED}" in result.err
    assert "hint: " in result.err and hint in result.err
    assert result.out == ""
    assert ran.commands == ["conversation", "release list"]  # no lock, no drain, no stop, no audit


def test_a_bad_release_named_with_force_is_rolled_back_to_with_force_on_the_host(world: World) -> None:
    result, ran = _run(world, [_bad(BAD), release(NEW, "1" * 64)], "--to", BAD, "--force", to=BAD)
    assert result.code == 0, result.out + result.err
    assert result.out.startswith(f"rolled back {NEW} -> {BAD}: verified")
    rollback = next(argv for argv in ran.argvs if argv[4:5] == ("rollback",))
    assert rollback[-4:] == ("sglang.service", BAD, "specops rollback by " + rollback[-2].split(" by ")[1], "force")


def test_the_dry_run_prints_the_plan_having_read_the_listing_only(world: World) -> None:
    releases = [release(OLD, "0" * 64), _bad(BAD), release(NEW, "1" * 64)]
    result, ran = _run(world, releases, "--dry-run")
    assert result.code == 0, result.out + result.err
    assert result.out.splitlines()[:2] == [
        f"{HOST}: would roll back {NEW} -> {OLD}",
        f"  why {OLD}: the newest verified release that is neither current nor marked bad; skipped, marked bad: "
        f"{BAD} (hung after verified)",
    ]
    assert "  1. drain sglang.service: up to 60 s for running requests" in result.out
    assert f"  afterwards: {NEW} is marked bad;" in result.out
    assert result.out.endswith("dry run: nothing was changed, no lock was taken\n")
    assert ran.commands == ["release list"]
    as_json, ran = _run(world, releases, "--dry-run", "--json")
    document = json.loads(as_json.out)
    assert (document["dry_run"], document["from"], document["to"], document["marks_bad"]) == (True, NEW, OLD, NEW)
    assert (document["drain_s"], document["gates"]) == (60, ["readiness", "smoke"])
    assert ran.commands == ["release list"]


def test_a_dry_run_refuses_with_the_same_error(world: World) -> None:
    result, ran = _run(world, [release(NEW, "1" * 64)], "--dry-run")
    assert result.code == 1
    assert f"error: {HOST}: no verified release other than the current one" in result.err
    assert ran.commands == ["release list"]
    as_json, _ = _run(world, [release(NEW, "1" * 64)], "--dry-run", "--json")
    error = json.loads(as_json.out)["error"]
    assert (error["exit_code"], error["message"].endswith(NOTHING_CHANGED)) == (1, True)


def test_a_target_gone_by_the_time_the_lock_is_held_is_refused_before_the_stop(world: World) -> None:
    """Checked again under the lock: another specops may have changed the host between the two reads."""
    from specops.deploy import manual_rollback

    real = manual_rollback.read_listing
    reads: list[Listing] = []

    def read_twice(host, spec):  # type: ignore[no-untyped-def]
        listing = real(host, spec)
        reads.append(listing)
        return listing if len(reads) == 1 else Listing(NEW, [r for r in listing.releases if r.id != OLD])

    world.monkeypatch.setattr(manual_rollback, "read_listing", read_twice)
    result, ran = _run(world, [release(OLD, "0" * 64), release(NEW, "1" * 64)])
    assert result.code == 1
    assert f"error: {HOST}: no verified release other than the current one" in result.err
    assert ran.commands == ["conversation", "release list", "lock acquire", "release list", "lock release"]


def test_to_a_build_id_rolls_back_to_the_hosts_newest_verified_release_of_that_build(world: World) -> None:
    """`--to BUILD` (the 12 hex digits every host shows for one build): this host's own release of it, the newest
    verified one, by creation time and not by name; the host is asked for that release id."""
    build = "85297c34c9a4"
    older, newer = f"{build}-ffffff", f"{build}-000000"
    releases = [{**release(older, "3" * 64), "created_at": "2026-01-01T00:00:00.000Z"},
                {**release(newer, "3" * 64), "created_at": "2026-01-02T00:00:00.000Z"},
                {**release(NEW, "1" * 64), "created_at": "2026-01-03T00:00:00.000Z"}]  # fmt: skip
    result, ran = _run(world, releases, "--to", build, to=newer)
    assert result.code == 0, result.out + result.err
    assert result.out.startswith(f"rolled back {NEW} -> {newer}: verified")
    rollback = next(argv for argv in ran.argvs if argv[4:5] == ("rollback",))
    assert newer in rollback
    refused, _ = _run(world, releases, "--to", "0" * 12)
    assert refused.code == 1 and f"no verified release of build {'0' * 12} on this host" in refused.err
