"""A multi-node engine deployed, locked and rolled back as one, on two real test hosts that reach each other.

The test engine plays SGLang's rendezvous: rank 0 listens on the dist-init port and waits for rank 1, rank 1
joins and serves no HTTP, and a lost peer takes the engine down on both sides. Everything else is real: SSH,
systemd, the hosts' locks, releases and guards.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene
from tests.e2e.test_fleet_and_dry_run import _fleet
from tests.testbed import drift
from tests.testbed.testhost import TestHost
from tests.testbed.testhost.peering import peer
from tests.unit.clirun import CliResult

pytestmark = pytest.mark.e2e
ENGINE = "ds"
SERVICE_DIR = "/opt/specops/sglang"


def _engine(hosts: list[TestHost], venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
            monkeypatch: pytest.MonkeyPatch, ranks: int = 2) -> Scene:  # fmt: skip
    """Rank 0 on hosts[0], rank 1 on hosts[1], peered; the operator's files name every host and the engine (of the
    first `ranks` hosts: the others are plain hosts)."""
    peer(hosts[:ranks])
    scene = _fleet(hosts, venv, tmp_path, capsys, monkeypatch)
    names = json.dumps([host.name for host in hosts[:ranks]])
    engine = f'\n[engines.{ENGINE}]\nhosts = {names}\ndist_addr = "{hosts[0].ip}"\ntp_size = 2\n'
    (tmp_path / "specops.toml").write_text((tmp_path / "specops.toml").read_text() + engine)
    return scene


@pytest.fixture
def ranks(testhost_factory: object, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
          monkeypatch: pytest.MonkeyPatch) -> tuple[list[TestHost], Scene]:  # fmt: skip
    hosts = testhost_factory(2)  # type: ignore[operator]
    return hosts, _engine(hosts, host_venv, tmp_path, capsys, monkeypatch)


def _watch(scene: Scene, hosts: list[TestHost], seconds: int) -> None:
    """Every rank's deploys get a guard watch of `seconds` after verified (2 failed probes in a row end it)."""
    toml = scene.folder / "specops.toml"
    for host in hosts:
        toml.write_text(toml.read_text() + f"\n[hosts.{host.name}.overrides.ddtree.readiness]\nwatch_s = {seconds}\n"
                        "watch_timeout_s = 2\nwatch_failures = 2\n")  # fmt: skip


def _deploy(scene: Scene, *args: str) -> tuple[CliResult, dict[str, dict[str, object]]]:
    result = scene.cli("deploy", ENGINE, "--build", str(UNPATCHED), "--patch", str(PATCH), "--json", *args)
    document = json.loads(result.out) if result.out.startswith("{") else {}
    return result, document.get("hosts", {}) if isinstance(document, dict) else {}


def _first_release(scene: Scene) -> str:
    """The engine's first deploy, verified on both ranks: its release id."""
    first, outcomes = _deploy(scene)
    assert first.code == 0, first.out + first.err
    return str(outcomes[scene.host.name]["release"])


def _change(scene: Scene) -> None:
    """A new configuration on every rank: the next deploy makes a new release of the engine."""
    toml = scene.folder / "specops.toml"
    toml.write_text(toml.read_text().replace("limit_nofile = 20000", "limit_nofile = 20001"))


def _current(host: TestHost) -> str:
    return (
        host.exec(["readlink", "-f", f"{SERVICE_DIR}/current"], check=False).stdout.decode().strip().rsplit("/", 1)[-1]
    )


def _invocation(host: TestHost) -> str:
    return host.exec(["systemctl", "show", "-p", "InvocationID", "--value", "sglang"]).stdout.decode().strip()


def _unit(host: TestHost) -> str:
    return host.exec(["cat", "/etc/systemd/system/sglang.service"]).stdout.decode()


def test_two_ranks_deploy_verified_each_unit_has_its_rank_and_smoke_answers_through_rank_0(
    ranks: tuple[list[TestHost], Scene],
) -> None:
    hosts, scene = ranks
    dry = scene.cli("deploy", ENGINE, "--build", str(UNPATCHED), "--patch", str(PATCH), "--dry-run")
    assert dry.code == 0, dry.out + dry.err
    assert f"engine {ENGINE}: 2 ranks (rank 0: {hosts[0].name}, rank 1: {hosts[1].name})" in dry.out

    result, outcomes = _deploy(scene)
    assert result.code == 0, result.out + result.err
    assert [outcomes[host.name]["outcome"] for host in hosts] == ["deployed", "deployed"]
    release = outcomes[hosts[0].name]["release"]
    assert outcomes[hosts[1].name]["release"] == release == _current(hosts[0]) == _current(hosts[1])
    for rank, host in enumerate(hosts):
        assert f"--nnodes 2 \\\n    --node-rank {rank} \\\n    --dist-init-addr {hosts[0].ip}:5000" in _unit(host)
    journal = hosts[1].exec(["journalctl", "-u", "sglang", "--no-pager", "-o", "cat"]).stdout.decode()
    assert "joined" in journal or "rank 1" in journal.lower()
    smoke = scene.cli("smoke", hosts[0].name)  # rank 0 serves HTTP: the engine answers through it
    assert smoke.code == 0, smoke.out + smoke.err

    runs = [_invocation(host) for host in hosts]
    again, outcomes = _deploy(scene)  # nothing changed: the worker, which serves no HTTP, is unchanged too
    assert again.code == 0, again.out + again.err
    assert [outcomes[host.name]["outcome"] for host in hosts] == ["unchanged", "unchanged"]
    assert [_invocation(host) for host in hosts] == runs

    runs = [_invocation(host) for host in hosts]
    restarted = scene.cli("restart", ENGINE)  # both ranks, rank 0 drained first and gated
    assert restarted.code == 0, restarted.out + restarted.err
    assert all(_invocation(host) != run for host, run in zip(hosts, runs, strict=True))
    assert scene.cli("smoke", hosts[0].name).code == 0


def test_a_preflight_failure_on_rank_1_leaves_both_ranks_serving_untouched(ranks: tuple[list[TestHost], Scene]) -> None:
    hosts, scene = ranks
    old = _first_release(scene)
    runs = [_invocation(host) for host in hosts]
    drift.remove_ffmpeg_libs(hosts[1])
    _change(scene)

    result, outcomes = _deploy(scene)
    assert result.code == 1, result.out + result.err
    assert outcomes[hosts[1].name]["outcome"] == "preflight-failed"
    assert "torchcodec.ffmpeg" in str(outcomes[hosts[1].name]["cause"])
    cause = str(outcomes[hosts[0].name]["cause"])
    assert f"rank 1 ({hosts[1].name}) failed its preflight: torchcodec.ffmpeg" in cause
    assert "nothing was stopped on any rank" in cause
    assert [_current(host) for host in hosts] == [old, old]
    assert [_invocation(host) for host in hosts] == runs  # no restart on either rank


def _watch_state(host: TestHost) -> str:
    found = host.exec(["cat", f"{SERVICE_DIR}/.specops-watch.json"], check=False).stdout.decode()
    return str(json.loads(found).get("state")) if found.startswith("{") else ""


def _until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(1)


def test_a_worker_killed_after_verified_rolls_the_whole_engine_back(ranks: tuple[list[TestHost], Scene]) -> None:
    hosts, scene = ranks
    _watch(scene, hosts, 120)
    old = _first_release(scene)
    _change(scene)
    second, outcomes = _deploy(scene)
    assert second.code == 0, second.out + second.err
    new = outcomes[hosts[0].name]["release"]
    assert [_current(host) for host in hosts] == [new, new] and new != old
    assert [_watch_state(host) for host in hosts] == ["watching", "watching"]

    hosts[1].exec(["systemctl", "kill", "--signal=KILL", "sglang"])  # the worker dies; rank 0 loses its peer

    _until(lambda: [_watch_state(host) for host in hosts] == ["rolled-back", "rolled-back"], 90, "both rollbacks")
    assert [_current(host) for host in hosts] == [old, old]
    watch = json.loads(hosts[1].exec(["cat", f"{SERVICE_DIR}/.specops-watch.json"]).stdout.decode())
    assert "failed its watch" in str(watch["reason"]) and "the worker rank's engine " in str(watch["reason"])
    _until(lambda: scene.cli("smoke", hosts[0].name).code == 0, 120, "the engine serving the old release again")


def test_manual_rollback_moves_both_ranks_and_two_deploys_of_one_engine_never_deadlock(
    ranks: tuple[list[TestHost], Scene],
) -> None:
    hosts, scene = ranks
    old = _first_release(scene)
    _change(scene)

    # two deploys of the same engine at once: the first holds rank 0's lock, the second exits 6 holding nothing
    argv = [sys.executable, "-m", "specops", "deploy", ENGINE, "--build", str(UNPATCHED), "--patch", str(PATCH)]
    other = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def locked(host: TestHost) -> bool:
        status = scene.cli("lock", "status", host.name, "--json")
        return status.out.startswith("{") and bool(json.loads(status.out)["locked"])

    _until(lambda: locked(hosts[0]) or other.poll() is not None, 120, "the first deploy's lock on rank 0")
    mine, _ = _deploy(scene)
    assert mine.code == 6, mine.out + mine.err
    output, _ = other.communicate(timeout=600)
    assert other.returncode == 0, output
    new = _current(hosts[0])
    assert new != old and _current(hosts[1]) == new
    assert not locked(hosts[0]) and not locked(hosts[1])
    statuses = scene.cli("lock", "status", ENGINE, "--json")
    assert statuses.code == 0 and hosts[1].name in statuses.out, statuses.out + statuses.err
    released = scene.cli("lock", "release", ENGINE)  # every rank's, rank 0's last: nothing held now
    assert released.code == 0, released.out + released.err
    lines = released.out.splitlines()
    assert [line.split(":", 1)[0] for line in lines] == [hosts[1].name, hosts[0].name], released.out
    assert all(line.endswith(", nothing to release") for line in lines), released.out

    dry = scene.cli("rollback", ENGINE, "--dry-run")
    assert dry.code == 0 and f"engine {ENGINE}: 2 ranks" in dry.out, dry.out + dry.err
    rolled = scene.cli("rollback", ENGINE)
    assert rolled.code == 0, rolled.out + rolled.err
    assert [_current(host) for host in hosts] == [old, old]
    assert f"{hosts[1].name}: rolled back {new} -> {old}: verified" in rolled.out
    smoke = scene.cli("smoke", hosts[0].name)
    assert smoke.code == 0, smoke.out + smoke.err


def test_a_worker_that_dies_at_start_is_named_with_its_own_cause_and_the_engine_rolls_back(
    ranks: tuple[list[TestHost], Scene],
) -> None:
    hosts, scene = ranks
    old = _first_release(scene)
    toml = scene.folder / "specops.toml"
    head, worker = toml.read_text().split(f"[hosts.{hosts[1].name}]", 1)
    crash = 'env = { SGLANG_TESTENGINE_CRASH_AFTER_LOAD = "CUDA out of memory on this node only", '
    toml.write_text(f"{head}[hosts.{hosts[1].name}]{worker.replace('env = { ', crash, 1)}")

    result, outcomes = _deploy(scene)
    assert result.code == 1, result.out + result.err
    cause = str(outcomes[hosts[1].name]["cause"])
    assert cause.startswith("not ready: the journal shows a fatal error: the GPU ran out of memory"), outcomes
    assert "out of memory" not in str(outcomes[hosts[0].name]["cause"]), outcomes  # rank 0 only lost its peer
    assert [outcomes[host.name]["outcome"] for host in hosts] == ["rolled-back", "rolled-back"], outcomes
    assert [_current(host) for host in hosts] == [old, old]
    _until(lambda: scene.cli("smoke", hosts[0].name).code == 0, 60, "the engine serving the old release again")
