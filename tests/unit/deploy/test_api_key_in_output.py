"""The engine's command line, read from /proc on the host, holds the API key as systemd expanded it
(`--api-key ${SGLANG_API_KEY}` in the unit). A deploy that names the processes still holding the GPUs (the
GPUs-busy error, its events, `--json`, both audit logs) or reaps them must show that command line with the key
masked: the operator's terminal, CI logs and the audit trail are read by far more people than the host's `ps`."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from specops.commands.engine_stop import REAP_SCRIPT, inspect_argv
from specops.host.recording import Answer, RecordingHost, reply
from tests.unit.clirun import CliResult
from tests.unit.deploy.scene import HOST, DeployScene, release, use_scene
from tests.unit.deploy.world import OLD_TREE, World
from tests.unit.probe.inspectfake import inspect_text, record
from tests.unit.test_secrets_sweep import _record_inputs

KEY, ADMIN = "sk-LIVE-SECRET-123", "adm-SECRET-9876"
OLD = "20260101T000000Z-old"
RELEASE_DIR = f"/opt/specops/sglang/releases/{OLD}"
ENGINE = (f"/opt/venv/bin/python -m sglang.launch_server --model-path /srv/models/target --api-key {KEY} "
          f"--admin-api-key={ADMIN} --port 30000")  # fmt: skip
FREE = reply(inspect_text(["0, GPU-aaa, 0"], [], [], []))
ORPHAN = reply(inspect_text(["0, GPU-aaa, 60000"], ["4242, 60000, GPU-aaa"], [],
                            [record(4242, 1, RELEASE_DIR, "/escaped", ENGINE)]))  # fmt: skip
STUCK = reply(inspect_text(["0, GPU-aaa, 0"], [], [42], [record(42, 1, RELEASE_DIR, "/system.slice/sglang.service",
                                                                ENGINE)]))  # fmt: skip


@pytest.fixture
def seen(world: World) -> list[bytes]:
    """The bytes every command got on its stdin: the host's audit line is appended that way."""
    inputs: list[bytes] = []
    _record_inputs(world.monkeypatch, inputs)
    return inputs


def _serving(world: World, *inspections: Answer) -> DeployScene:
    """A host serving OLD whose stop finds `inspections` in turn (the last repeats)."""
    scene = world.scene(releases=[release(OLD, OLD_TREE)], current=OLD, unit=world.unit_text)
    original: Callable[[DeployScene], RecordingHost] = type(scene).host

    def scripted(self: DeployScene) -> RecordingHost:
        recorded = original(self)
        recorded.script(inspect_argv(self.spec.unit_name), *inspections)
        recorded.script(["sh", "-c", REAP_SCRIPT], reply("killed 4242\n"))
        recorded._rules.insert(0, recorded._rules.pop())  # first match wins: ahead of the scene's own
        recorded._rules.insert(0, recorded._rules.pop())
        return recorded

    world.monkeypatch.setattr(type(scene), "host", scripted)
    return scene


def _deploy(world: World, scene: DeployScene, *mode: str, reap: bool = False) -> CliResult:
    """`specops [--json|-v] deploy` of a new build: the stop before its start meets the scene's inspections."""
    use_scene(world.monkeypatch, scene, [scene.host()], [True])
    return world.cli(*mode, "deploy", HOST, "--build", str(world.build), *(["--reap"] if reap else []))


def _everything(world: World, result: CliResult, inputs: list[bytes]) -> str:
    """stdout (--json or the plain report), stderr (events, the error), the host's and the local audit line."""
    local = world.folder / "state" / "specops" / "audit.jsonl"
    host_audit = b"".join(line for line in inputs if line.startswith(b"{"))
    assert host_audit and local.is_file(), "both audit logs were written"
    return "\n".join([result.out, result.err, host_audit.decode(), local.read_text()])


@pytest.mark.parametrize("mode", [(), ("--json",), ("-v",)], ids=["plain", "json", "verbose"])
def test_an_orphan_holding_the_gpus_is_named_with_its_key_masked(world: World, seen: list[bytes],
                                                                 mode: tuple[str, ...]) -> None:  # fmt: skip
    result = _deploy(world, _serving(world, ORPHAN), *mode)
    assert result.code == 1, result.out + result.err
    shown = _everything(world, result, seen)
    assert KEY not in shown and ADMIN not in shown
    assert "pid 4242 (/opt/venv/bin/python -m sglang.launch_server" in shown  # still named, so it can be found
    assert "--api-key *** --admin-api-key=*** --port 30000" in shown


def test_the_engine_stuck_in_its_cgroup_is_named_with_its_key_masked(world: World, seen: list[bytes]) -> None:
    world.monkeypatch.setattr("specops.ops.engine_stop.FREE_WAIT_S", 0.0)  # a D-state process never goes
    result = _deploy(world, _serving(world, STUCK), "--json")
    assert result.code == 1, result.out + result.err
    cause = json.loads(result.out)["hosts"][HOST]["cause"]
    assert "pid 42 (" in cause and "--api-key ***" in cause and "is still in sglang.service's cgroup" in cause
    shown = _everything(world, result, seen)
    assert KEY not in shown and ADMIN not in shown


def test_a_reap_reports_what_it_stopped_with_the_key_masked(world: World, seen: list[bytes]) -> None:
    result = _deploy(world, _serving(world, ORPHAN, FREE), "--json", reap=True)
    assert result.code == 0, result.out + result.err
    reaped = json.loads(result.out)["hosts"][HOST]["gpus"]["reaped"]
    assert [holder["pid"] for holder in reaped] == [4242] and "--api-key ***" in reaped[0]["command"]
    shown = _everything(world, result, seen)
    assert KEY not in shown and ADMIN not in shown


def test_a_reap_event_names_the_orphan_with_its_key_masked(world: World, seen: list[bytes]) -> None:
    result = _deploy(world, _serving(world, ORPHAN, FREE), reap=True)
    assert result.code == 0, result.out + result.err
    assert "reaping pid 4242 (" in result.out + result.err
    shown = _everything(world, result, seen)
    assert KEY not in shown and ADMIN not in shown
