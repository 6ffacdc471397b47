"""The drain budget in the unit and the profile, the pre_stop/post_start hooks around a deploy, and a deploy
whose old engine leaves its GPUs busy."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from specops.commands.engine_stop import inspect_argv
from specops.commands.systemd import render_unit
from specops.config.loader import load_config
from specops.host.recording import RecordingHost, reply
from specops.ops.hooks import run_hook
from tests.unit.clirun import run_cli
from tests.unit.deploy.scene import CONFIG, HOST, DeployScene, release, use_scene
from tests.unit.deploy.world import OLD_TREE, World
from tests.unit.probe.inspectfake import inspect_text, record

NEXTN = 'algorithm = "NEXTN"\n[speculative]\nnum_steps = 3\neagle_topk = 1\nnum_draft_tokens = 4\n'
RELEASE_DIR = "/opt/specops/sglang/releases/20260101T000000Z-old"


def _config(folder: Path, profile_tail: str = "", host_tail: str = "") -> Path:
    (folder / "profiles").mkdir(exist_ok=True)
    (folder / "profiles" / "mine.toml").write_text(NEXTN + profile_tail)
    path = folder / "specops.toml"
    path.write_text(CONFIG.replace('profile = "nextn"', 'profile = "mine"') + host_tail)
    return path


def test_the_unit_stops_with_killmode_mixed_and_a_stop_timeout_past_the_drain_budget(tmp_path: Path) -> None:
    default = render_unit(load_config(_config(tmp_path), tmp_path).resolve(HOST, None))
    assert "\nKillMode=mixed\n" in default and "\nTimeoutStopSec=120\n" in default  # 60 s + 30 < 120
    long = render_unit(load_config(_config(tmp_path, "[drain]\ntimeout_s = 600\n"), tmp_path).resolve(HOST, None))
    assert "\nTimeoutStopSec=630\n" in long


def test_the_drain_budget_is_validated_strictly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("timeout_s = -1", "timeout_s = 3601", "timeout_s = 1.5", "timeout_s = true", 'timeout_s = "60"',
                "budget_s = 60"):  # fmt: skip
        path = _config(tmp_path, f"[drain]\n{bad}\n")
        result = run_cli(capsys, "--config", str(path), "config", "check")
        assert result.code == 3, bad
        assert "profiles/mine.toml: drain." in result.err, (bad, result.err)


def test_a_hook_runs_without_a_shell_with_host_release_and_phase(tmp_path: Path) -> None:
    script = "import os; print(os.environ['SPECOPS_HOST'], os.environ['SPECOPS_RELEASE'], os.environ['SPECOPS_PHASE'])"
    ran = run_hook("pre_stop", [sys.executable, "-c", script, "$HOME;`x`"], host="gpu1", release="R1", action="deploy")
    assert (ran.ok, ran.output.strip()) == (True, "gpu1 R1 pre_stop")
    failed = run_hook("pre_stop", [sys.executable, "-c", "import sys; sys.exit('lb says no')"], host="h",
                      release=None, action="deploy")  # fmt: skip
    assert failed.exit_code == 1 and failed.summary().endswith("failed (exited 1): lb says no")
    missing = run_hook("post_start", [str(tmp_path / "nope")], host="h", release=None, action="deploy")
    assert not missing.ok and "could not start" in missing.summary()


def _serving(world: World) -> DeployScene:
    return world.scene(releases=[release("20260101T000000Z-old", OLD_TREE)], current="20260101T000000Z-old",
                       unit=world.unit_text)  # fmt: skip


def _hooks(world: World, pre: str, post: str, log: Path) -> None:
    def argv(code: str) -> str:
        return json.dumps([sys.executable, "-c", code])

    record = f"import os; open({str(log)!r}, 'a').write(os.environ['SPECOPS_PHASE'] + ' ' + os.environ['SPECOPS_RELEASE'] + '\\n')"
    config = world.folder / "specops.toml"
    kept = [line for line in config.read_text().splitlines(keepends=True) if not line.startswith(("pre_", "post_"))]
    hooks = f"pre_stop = {argv(record + '; ' + pre)}\npost_start = {argv(record + '; ' + post)}\n"
    config.write_text("".join(kept) + hooks)


def test_a_failing_pre_stop_stops_the_deploy_before_anything_on_the_host_changes(world: World) -> None:
    log = world.folder / "hooks.log"
    _hooks(world, "raise SystemExit(3)", "pass", log)
    run = world.run(_serving(world))
    assert (run.result.code, run.outcome["outcome"]) == (1, "preflight-failed")
    assert "pre_stop hook" in run.outcome["cause"] and "nothing on the host was changed" in run.outcome["cause"]
    assert [call for call in run.host.calls if call.kind == "put"] == []  # no env file, no unit
    assert not [argv for argv in run.host.commands if "switch" in argv or argv[:2] == ("systemctl", "stop")]
    assert log.read_text().splitlines() == ["pre_stop " + run.plan["release"]]  # post_start not run
    assert run.outcome["hooks"][0]["exit_code"] == 3
    run.assert_followed(upto="pre_stop", then=("unlock", "serving", "record"))


def test_hooks_bracket_a_verified_deploy_and_the_plan_shows_them(world: World) -> None:
    log = world.folder / "hooks.log"
    _hooks(world, "pass", "pass", log)
    run = world.run(_serving(world))
    assert (run.result.code, run.outcome["outcome"]) == (0, "deployed")
    names = run.step_names()
    assert names.index("preflight") < names.index("pre_stop") < names.index("unit")
    assert names.index("switch") < names.index("stop") < names.index("gates") < names.index("post_start")
    assert log.read_text().splitlines() == [f"pre_stop {run.plan['release']}", f"post_start {run.plan['release']}"]
    assert run.outcome["drain"]["was_running"] is False and run.outcome["gpus"]["checked"] is True
    run.assert_followed()


def test_an_orphan_on_the_gpu_stops_the_start_and_disarms_the_guard(world: World) -> None:
    scene = _serving(world)
    busy = inspect_text(["0, GPU-aaa, 60000"], ["4242, 60000, GPU-aaa"], [],
                        [record(4242, 1, RELEASE_DIR, "/escaped", "python -m sglang")])  # fmt: skip
    original_host = type(scene).host

    def scripted(self: DeployScene) -> RecordingHost:
        recorded = original_host(self)
        recorded.script(inspect_argv(self.spec.unit_name), reply(busy))
        recorded._rules.insert(0, recorded._rules.pop())  # first match wins: ahead of "free"
        return recorded

    world.monkeypatch.setattr(type(scene), "host", scripted)
    run = world.run(scene)
    assert (run.result.code, run.outcome["outcome"]) == (1, "failed")
    assert "pid 4242 (python -m sglang) holds 60000 MiB on GPU 0: orphan of the old engine" in run.outcome["cause"]
    assert "--reap" in run.outcome["hint"]
    assert "NOTHING SERVES on gpu1: sglang.service was stopped for the deploy" in run.outcome["cause"]
    assert not [argv for argv in run.host.commands if argv[:2] == ("systemctl", "restart")]  # never started
    stops = [argv for argv in run.host.commands if argv[3:5] == ("specops-disarm", "/opt/specops/sglang/.specops-watch-stop")
             and "specops-guard-sglang.timer" in argv]  # fmt: skip
    assert stops  # the guard will not start it


def test_specops_rollback_runs_the_hooks_and_a_failing_pre_stop_changes_nothing(world: World) -> None:
    log = world.folder / "hooks.log"
    _hooks(world, "pass", "pass", log)
    old, new = "20260101T000000Z-old", "20260102T000000Z-new"
    scene = world.scene(releases=[release(old, OLD_TREE), release(new, "1" * 64)], current=new, unit=world.unit_text,
                        rollback_reply={"ok": True, "previous": new, "current": old})  # fmt: skip
    hosts = [scene.host()]
    use_scene(world.monkeypatch, scene, hosts, [True])
    done = world.cli("rollback", HOST, "--json")
    assert done.code == 0, done.out + done.err
    assert log.read_text().splitlines() == [f"pre_stop {old}", f"post_start {old}"]  # planned before the hooks run
    assert json.loads(done.out)["drain"]["was_running"] is False

    _hooks(world, "raise SystemExit(2)", "pass", log)
    hosts.append(scene.host())
    refused = world.cli("rollback", HOST, "--json")
    assert refused.code == 1
    assert "pre_stop hook" in json.loads(refused.out)["error"]
    assert not [argv for argv in hosts[-1].commands if "rollback" in argv or argv[:2] == ("systemctl", "stop")]


def test_the_summary_says_how_many_requests_were_cut_and_what_was_reaped(capsys: pytest.CaptureFixture[str]) -> None:
    from specops.cli.deploy_view import print_summary
    from specops.deploy.outcome import HostOutcome, Outcome
    from specops.engine.request_gauges import RequestGauges
    from specops.ops.engine_stop import DrainResult, FreeResult, StopResult
    from specops.probe.gpu_holders import Holder

    orphan = Holder(4242, "777", "python -m sglang", 60000, (0,), True, "reparented to PID 1")
    drain = DrainResult(True, 5, 5.0, RequestGauges(2, 1), RequestGauges(1, 1), cut=2, killed=True)
    outcome = HostOutcome(HOST, Outcome.DEPLOYED, release="r2", stop=StopResult(drain, FreeResult(True, 1.0, [orphan])))
    print_summary({HOST: outcome})
    out = capsys.readouterr().out
    assert f"{HOST}: drain budget of 5 s ran out: 2 requests cut (SIGKILL)" in out
    assert f"{HOST}: reaped pid 4242 (python -m sglang) holds 60000 MiB on GPU 0: orphan of the old engine" in out
