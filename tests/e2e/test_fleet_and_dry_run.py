"""Fleet deploys (canary, failure budget, per-host summary) and --dry-run, on real test hosts.

The dry-run tests record every command the SSH host is asked to run (a recording wrapper around the real
connection) and check that a deploy runs exactly the steps its dry run printed, for the branch it took.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from specops.config.inventory import HostSpec
from specops.host.conversation import conversation
from specops.host.recording import Call
from specops.host.ssh.connection import connect
from specops.ops.lock import LockHolder, acquire
from tests.e2e.deployscene import PATCH, UNPATCHED, Scene, make_scene
from tests.e2e.test_deploy_interrupts import _kill_at
from tests.testbed import drift
from tests.testbed.engine import RENUMBER_PATCH
from tests.testbed.staging import install_models, inventory_toml
from tests.testbed.testhost import TestHost
from tests.unit.clirun import run_cli
from tests.unit.deploy.plan_match import explain, follows, planned, recorded

pytestmark = pytest.mark.e2e
PASS = ("always", "checks-pass", "gates-pass")
FAIL = ("always", "checks-pass", "gates-fail")


def _fleet(hosts: list[TestHost], venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
           monkeypatch: pytest.MonkeyPatch) -> Scene:  # fmt: skip
    """hosts[0] is the scene's host; every other host is added to the operator's files; group `gpu` holds all."""
    scene = make_scene(hosts[0], venv, tmp_path, capsys, monkeypatch)
    for index, other in enumerate(hosts[1:]):
        install_models(other, tmp_path / ("other" if index == 0 else f"other{index}"))
        drift.install_nvidia_smi(other, "h100x8-580")
        drift.set_torch_cuda_tag(other, venv, version="2.13.0+cu130", cuda="13.0")
        ssh_config = tmp_path / "home" / ".ssh" / "config"
        ssh_config.write_text(ssh_config.read_text() + other.ssh_config_block(other.name))
        toml = inventory_toml(other, venv / "bin" / "python").replace('listen = "0.0.0.0"', 'listen = "127.0.0.1"')
        (tmp_path / "specops.toml").write_text((tmp_path / "specops.toml").read_text() + toml)
    names = json.dumps([host.name for host in hosts])
    (tmp_path / "specops.toml").write_text((tmp_path / "specops.toml").read_text() + f"\n[groups]\ngpu = {names}\n")
    return scene


def test_canary_then_rest_and_a_failing_host_is_reported_per_host(
    testhost_factory: object, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    hosts = testhost_factory(2)  # type: ignore[operator]
    scene = _fleet(hosts, host_venv, tmp_path, capsys, monkeypatch)
    drift.remove_ffmpeg_libs(hosts[1])
    result = run_cli(capsys, "deploy", "gpu", "--build", str(UNPATCHED), "--patch", str(PATCH), "--canary", "1",
                     "--json")  # fmt: skip
    outcomes = json.loads(result.out)["hosts"]
    assert outcomes[hosts[0].name]["outcome"] == "deployed"
    assert outcomes[hosts[1].name]["outcome"] == "preflight-failed"
    assert "torchcodec.ffmpeg" in outcomes[hosts[1].name]["cause"]
    assert result.code == 1
    # the release the checks stopped never ran, yet `diagnose` names the host's fault, from its manifest
    failed = str(outcomes[hosts[1].name]["attempted"])
    diagnosed = run_cli(capsys, "diagnose", hosts[1].name, "--release", failed)
    assert diagnosed.code == 1, diagnosed.out + diagnosed.err
    assert re.search(
        rf"verdict: environment: the host failed .*torchcodec\.ffmpeg.* before {failed} ran", diagnosed.out
    )
    assert "torchcodec.ffmpeg: " in diagnosed.out and "no failure" not in diagnosed.out
    verdict = json.loads(run_cli(capsys, "diagnose", hosts[1].name, "--release", failed, "--json").out)
    assert verdict["verdict"] == "environment" and verdict["failure"]["source"] == "preflight"
    checks = {check["id"]: check for check in verdict["failure"]["checks"]}
    assert checks["torchcodec.ffmpeg"]["evidence"]  # what the check saw on the host
    manifest = json.loads(hosts[1].exec(["cat", f"/opt/specops/sglang/releases/{failed}/manifest.json"]).stdout)
    assert manifest["facts"]["host"] == hosts[1].name and manifest["preflight"]["passed"] is False
    table = run_cli(capsys, "deploy", "gpu", "--build", str(UNPATCHED), "--patch", str(PATCH))
    rows = {line.split()[0]: line.split()[1] for line in table.out.splitlines()[1:3]}
    assert rows == {hosts[0].name: "unchanged", hosts[1].name: "preflight-failed"}
    assert scene.host.name in table.out
    with _held_by_another_deploy(hosts[0], tmp_path / "home" / ".ssh" / "config"):
        locked = run_cli(capsys, "deploy", "gpu", "--build", str(UNPATCHED), "--patch", str(PATCH), "--canary", "1")
    assert locked.code == 6, locked.out + locked.err  # the lock's code; the canary did not fail
    rows = {line.split()[0]: line.split()[1] for line in locked.out.splitlines()[1:3]}
    assert rows == {hosts[0].name: "locked", hosts[1].name: "preflight-failed"}, locked.out  # not skipped
    assert f"(not a failed canary: {hosts[1].name} is the canary in its place)" in locked.out, locked.out
    _ctrl_c_prints_the_fleet_summary(scene, hosts, str(outcomes[hosts[0].name]["release"]))


def _ctrl_c_prints_the_fleet_summary(scene: Scene, hosts: list[TestHost], verified: str) -> None:
    """Ctrl-C while the first host's gates run: the summary so far, then the interruption's exit code."""
    argv = [sys.executable, "-m", "specops", "deploy", "gpu", "--build", str(UNPATCHED), "--patch",
            str(RENUMBER_PATCH), "--force"]  # fmt: skip
    process = subprocess.Popen(argv, cwd=scene.folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ))  # fmt: skip
    seen = _kill_at(process, "gates", signum=signal.SIGINT)
    out, err = process.communicate(timeout=120)
    text = "\n".join(seen) + out + err
    assert process.returncode == 130, text
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:3]}
    assert rows == {hosts[0].name: "interrupted", hosts[1].name: "skipped"}, text
    assert f"{hosts[1].name}: interrupted before it started" in out, text
    guard = re.search(rf"^{hosts[0].name}: (\S+) is unverified: the host-side guard rolls back to {verified} by "
                      r"\d\d:\d\d:\d\d UTC \(within 15 s\)$", out, re.MULTILINE)  # fmt: skip
    assert guard is not None, text


@contextmanager
def _held_by_another_deploy(host: TestHost, ssh_config: Path) -> Iterator[None]:
    """The host's deploy lock, held (heartbeat fresh) by a deploy from another machine."""
    holder = replace(LockHolder.current("specops deploy gpu"), machine="elsewhere", machine_id="0" * 32)
    spec = HostSpec(name=host.name, ssh=host.name, python="/usr/bin/python3", model_path="/models/target")
    with connect(spec, ssh_config=ssh_config, known_hosts=[]) as connection, acquire(connection, holder):
        yield


def test_failing_canary_skips_the_rest(
    testhost_factory: object, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    hosts = testhost_factory(2)  # type: ignore[operator]
    _fleet(hosts, host_venv, tmp_path, capsys, monkeypatch)
    drift.remove_ffmpeg_libs(hosts[0])
    result = run_cli(capsys, "deploy", "gpu", "--build", str(UNPATCHED), "--patch", str(PATCH), "--canary", "1",
                     "--json")  # fmt: skip
    outcomes = json.loads(result.out)["hosts"]
    assert outcomes[hosts[0].name]["outcome"] == "preflight-failed"
    assert outcomes[hosts[1].name]["outcome"] == "skipped"
    assert outcomes[hosts[1].name]["cause"] == f"the canary {hosts[0].name} failed"
    listing = hosts[1].exec(["ls", "/opt/specops/sglang/releases"], check=False)
    assert listing.returncode != 0 or listing.stdout.strip() == b""  # nothing was pushed to the skipped host


def test_dry_run_prints_the_plan_and_changes_nothing(
    testhost: TestHost, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    scene = make_scene(testhost, host_venv, tmp_path, capsys, monkeypatch)
    result = scene.cli("deploy", testhost.name, "--build", str(UNPATCHED), "--patch", str(PATCH), "--dry-run")
    assert result.code == 0, result.out + result.err
    assert f"{testhost.name}: would deploy " in result.out
    assert re.search(r"push: send (\d+) of \1 files as release", result.out), result.out  # first push: everything
    assert "  guard" not in result.out and "rollback (if the gates fail)" not in result.out  # nothing to go back to
    assert "+ExecStart=" in result.out  # the unit diff against nothing installed
    assert result.out.rstrip().endswith("dry run: nothing was changed")
    assert testhost.exec(["test", "-e", "/opt/specops/sglang/releases"], check=False).returncode != 0
    assert testhost.exec(["test", "-e", "/etc/systemd/system/sglang.service"], check=False).returncode != 0
    assert testhost.exec(["test", "-e", "/run/specops/lock"], check=False).returncode != 0


class _Recorded:
    """The real SSH host, with every command, file write and tunnel recorded (as the RecordingHost records)."""

    def __init__(self, inner: Any, calls: list[Call], via: str = "") -> None:
        self.inner, self.calls, self.name, self.via = inner, calls, inner.name, via

    @contextmanager
    def conversation(self, argv: Any, *, lifetime_s: float) -> Iterator[_Recorded]:
        """The real command conversation, its requests recorded in order with the other calls."""
        self.calls.append(Call("conversation", tuple(argv)))
        with conversation(self.inner, argv, lifetime_s=lifetime_s) as talk:
            yield _Recorded(talk, self.calls, via="conversation")

    def run(self, argv: Any, **options: Any) -> Any:
        self.calls.append(Call("run", tuple(argv), via=self.via))
        return self.inner.run(argv, **options)

    def stream(self, argv: Any, **options: Any) -> Any:
        self.calls.append(Call("run", tuple(argv)))
        return self.inner.stream(argv, **options)

    def put(self, data: bytes, remote_path: str, mode: int = 0o644, **options: Any) -> None:
        self.calls.append(Call("put", path=remote_path, mode=mode, via=self.via))
        self.inner.put(data, remote_path, mode, **options)

    def get(self, remote_path: str, **options: Any) -> bytes:
        self.calls.append(Call("get", path=remote_path))
        return bytes(self.inner.get(remote_path, **options))

    def open_tunnel(self, remote_host: str, remote_port: int) -> Any:
        self.calls.append(Call("tunnel", path=f"{remote_host}:{remote_port}"))
        return self.inner.open_tunnel(remote_host, remote_port)

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> _Recorded:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _record_connections(monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    import specops.host.ssh.connection

    calls: list[Call] = []
    connect = specops.host.ssh.connection.connect
    monkeypatch.setattr(specops.host.ssh.connection, "connect", lambda spec: _Recorded(connect(spec), calls))
    return calls


def _dry_run_then_deploy(scene: Scene, calls: list[Call], *options: str,
                         branches: tuple[str, ...] = PASS) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """`deploy --dry-run --json`, then the deploy: the deploy's host commands must be the plan's steps."""
    build = ["--build", str(UNPATCHED)]
    dry = scene.cli("deploy", scene.host.name, *build, "--dry-run", "--json", *options)
    assert dry.code == 0, dry.out + dry.err
    assert not [call for call in calls if call.kind == "put"], "the dry run wrote a file"
    plan = json.loads(dry.out)["hosts"][0]
    calls.clear()
    result = scene.cli("deploy", scene.host.name, *build, "--json", *options)
    outcome = json.loads(result.out)["hosts"][scene.host.name]
    if plan["release"] != outcome["attempted"]:  # a new release's id is its time: the clock moved on
        plan = json.loads(json.dumps(plan).replace(plan["release"], outcome["attempted"]))
    expected, done = planned(plan, branches), recorded(calls)
    assert follows(expected, done), explain(expected, done)
    calls.clear()
    return plan, outcome


def test_dry_run_prints_exactly_what_the_deploy_then_does(
    testhost: TestHost, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    scene = make_scene(testhost, host_venv, tmp_path, capsys, monkeypatch)
    calls = _record_connections(monkeypatch)
    patch = ("--patch", str(PATCH))
    first, outcome = _dry_run_then_deploy(scene, calls, *patch)  # no release on the host yet
    assert (first["guard"], first["rollback_to"], outcome["outcome"]) == (False, None, "deployed")
    serving, outcome = _dry_run_then_deploy(scene, calls, *patch)  # the build already serves
    assert [step["step"] for step in serving["steps"]] == ["lock", "read", "unlock", "serving", "record"]
    assert outcome["outcome"] == "unchanged"
    config = scene.folder / "specops.toml"
    config.write_text(config.read_text().replace("limit_nofile = 20000", "limit_nofile = 20001"))
    changed, outcome = _dry_run_then_deploy(scene, calls, *patch)  # same tree, a changed unit
    assert changed["unit_changed"] and "+LimitNOFILE=20001" in changed["unit_diff"]
    assert (changed["guard"], changed["rollback_to"]) == (True, first["release"])
    assert (changed["push"]["send_files"], outcome["outcome"]) == (0, "deployed")
    kept, outcome = _dry_run_then_deploy(scene, calls, "--force", "--no-rollback", branches=FAIL)  # unpatched
    assert (kept["guard"], "rollback" in [step["step"] for step in kept["steps"]]) == (False, False)
    assert (outcome["outcome"], outcome["release"]) == ("failed", outcome["attempted"])
