"""The deploy lock and the audit log over REAL SSH on a real test host: racing processes, kill -9, Ctrl-C, the CLI.

One host for the module. Contenders are separate Python processes with their own SSH connection, as two
operators (or two CI jobs) would be.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from specops.config.inventory import HostSpec
from specops.errors import LockHeld
from specops.host.ssh.channels import SshHost
from specops.host.ssh.connection import connect
from specops.ops import audit
from specops.ops.lock import LockHolder, acquire, status
from tests.testbed.testhost import TestHost
from tests.unit.clirun import run_cli

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ALIAS = "llm-lock"
CONTENDER = """\
import dataclasses, json, sys, time
from pathlib import Path
from specops.errors import LockHeld
from specops.host.ssh.connection import connect
from specops.ops.lock import LockHolder, acquire
from specops.config.inventory import HostSpec
config, alias, name, start_at, hold_s, beat_s, machine = sys.argv[1:8]
spec = HostSpec(name=alias, ssh=alias, python="/usr/bin/python3", model_path="/models/target")
holder = LockHolder.current(f"specops deploy {alias} ({name})")
if machine:  # as if it ran on another machine
    holder = dataclasses.replace(holder, machine=machine, machine_id="0" * 32)
with connect(spec, ssh_config=Path(config), known_hosts=[]) as host:
    time.sleep(max(0.0, float(start_at) - time.time()))
    try:
        with acquire(host, holder, heartbeat_s=float(beat_s)):
            print(json.dumps({"name": name, "acquired": True}), flush=True)
            time.sleep(float(hold_s))
    except LockHeld as error:
        print(json.dumps({"name": name, "acquired": False, "message": error.message}), flush=True)
        sys.exit(int(error.exit_code))
"""


@pytest.fixture(scope="module")
def ssh_config(module_testhost: TestHost, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ssh") / "config"
    path.write_text(module_testhost.ssh_config_block(ALIAS))
    return path


Contend = Callable[..., subprocess.Popen[str]]
SPEC = HostSpec(name=ALIAS, ssh=ALIAS, python="/usr/bin/python3", model_path="/models/target")


@pytest.fixture(scope="module")
def host(ssh_config: Path) -> Iterator[SshHost]:
    with connect(SPEC, ssh_config=ssh_config, known_hosts=[]) as connected:
        yield connected


@pytest.fixture
def contender(ssh_config: Path, host: SshHost) -> Iterator[Contend]:
    started: list[subprocess.Popen[str]] = []

    def start(name: str, hold_s: float, start_at: float = 0.0, beat_s: float = 15.0,
              machine: str = "") -> subprocess.Popen[str]:  # fmt: skip
        argv = [sys.executable, "-c", CONTENDER, str(ssh_config), ALIAS, name, str(start_at), str(hold_s), str(beat_s),
                machine]  # fmt: skip
        process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)
    from specops.ops.lock_admin import release

    release(host, force=True)


def _wait_for_holder(host: SshHost, pid: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        info = status(host)
        if info is not None and info.holder is not None and info.holder.pid == pid:
            return
        time.sleep(0.2)
    raise AssertionError(f"process {pid} never took the lock")


def test_two_processes_race_and_exactly_one_gets_it(contender: Contend, host: SshHost) -> None:
    start_at = time.time() + 4  # both connect first, then go at the same instant
    processes = [contender(name, 4, start_at) for name in ("first", "second")]
    results: list[tuple[int, dict[str, str]]] = []
    for process in processes:
        out, err = process.communicate(timeout=60)
        assert out, err
        results.append((process.returncode, json.loads(out.splitlines()[0])))
    codes = sorted(code for code, _ in results)
    assert codes == [0, 6], results
    winner = next(report for code, report in results if code == 0)
    loser = next(report for code, report in results if code == 6)
    assert loser["message"].startswith(f"{ALIAS}: locked by ")
    assert f"(`specops deploy {ALIAS} ({winner['name']})`)" in loser["message"]
    assert status(host) is None  # the winner released on its way out


def test_kill_9_on_this_machine_leaves_a_lock_the_next_acquire_takes_over_at_once(
    contender: Contend, host: SshHost
) -> None:
    victim = contender("victim", 600, beat_s=0.5)
    _wait_for_holder(host, victim.pid)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=10)
    events: list[str] = []
    with acquire(host, LockHolder.current("rescuer"), stale_after_s=90, on_event=events.append) as lock:
        assert lock.took_over is not None and lock.took_over.holder is not None
        assert lock.took_over.holder.pid == victim.pid
        assert lock.took_over.heartbeat_age_s is not None and lock.took_over.heartbeat_age_s < 90  # not stale
    assert events == [
        f"{ALIAS}: took over the lock of a deploy that no longer runs (process {victim.pid} no longer runs on this "
        f"machine): {lock.took_over.describe()}"
    ]
    assert status(host) is None


def test_kill_9_on_another_machine_leaves_a_lock_that_turns_stale_and_is_taken_over(
    contender: Contend, host: SshHost
) -> None:
    victim = contender("victim", 600, beat_s=0.5, machine="ci-runner-7")
    _wait_for_holder(host, victim.pid)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=10)
    with pytest.raises(LockHeld, match=rf"pid {victim.pid} "):  # just killed: its heartbeat is still recent
        acquire(host, LockHolder.current("rescuer"), stale_after_s=3)
    deadline = time.monotonic() + 20
    while (info := status(host, stale_after_s=3)) is not None and not info.stale and time.monotonic() < deadline:
        time.sleep(0.5)
    assert info is not None and info.stale and info.holder is not None and info.holder.pid == victim.pid
    events: list[str] = []
    with acquire(host, LockHolder.current("rescuer"), stale_after_s=3, on_event=events.append) as lock:
        assert lock.took_over is not None and lock.took_over.holder is not None
        assert lock.took_over.holder.pid == victim.pid
        assert events[0].startswith(f"{ALIAS}: took over a stale lock held by ")
    assert status(host) is None


def test_ctrl_c_in_the_holder_releases_the_lock(contender: Contend, host: SshHost) -> None:
    holder = contender("interrupted", 600)
    _wait_for_holder(host, holder.pid)
    holder.send_signal(signal.SIGINT)
    _, err = holder.communicate(timeout=30)
    assert "KeyboardInterrupt" in err
    assert status(host) is None  # unlike Kamal: Ctrl-C does not leave the host locked


@pytest.fixture
def cli_home(module_testhost: TestHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A HOME whose ~/.ssh/config reaches the test host, and a specops.toml naming it, as an operator has."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text(module_testhost.ssh_config_block(ALIAS))
    (tmp_path / "specops.toml").write_text(
        f'[hosts.{ALIAS}]\nssh = "{ALIAS}"\npython = "/usr/bin/python3"\nmodel_path = "/models/target"\n'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)


def test_cli_status_release_and_audit_over_ssh(
    capsys: pytest.CaptureFixture[str], cli_home: None, contender: Contend, host: SshHost, module_testhost: TestHost
) -> None:
    assert run_cli(capsys, "lock", "status", ALIAS).out == f"{ALIAS}: free\n"
    holder = contender("ci-job", 600)
    _wait_for_holder(host, holder.pid)
    shown = run_cli(capsys, "lock", "status", ALIAS)
    assert shown.code == 0 and shown.out.splitlines()[0] == f"{ALIAS}: locked"
    assert f"pid {holder.pid}" in shown.out and "stale:      no" in shown.out
    refused = run_cli(capsys, "lock", "release", ALIAS)
    assert refused.code == 6 and f"pid {holder.pid}" in refused.err and "--force" in refused.err
    forced = run_cli(capsys, "lock", "release", ALIAS, "--force")
    assert forced.code == 0 and forced.out.startswith(f"{ALIAS}: released the lock held by ")
    assert run_cli(capsys, "lock", "status", ALIAS).out == f"{ALIAS}: free\n"
    on_host = [json.loads(line) for line in module_testhost.read_file("/opt/specops/sglang/audit.jsonl").splitlines()]
    assert on_host[-1]["action"] == "lock-release" and on_host[-1]["forced"] is True
    table = run_cli(capsys, "audit", ALIAS, "-n", "1")
    assert table.code == 0 and "lock-release (forced)" in table.out.splitlines()[1]


def test_audit_record_and_read_over_ssh(
    host: SshHost, module_testhost: TestHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    entry = audit.new_entry("deploy", outcome="ok", from_release="r1", to_release="r2", profile="ddtree",
                            phases={"push": 2.5}, message="ünïcode ok")  # fmt: skip
    audit.record(host, SPEC, entry)
    assert [line.to_json() for line in audit.read(host, SPEC, 1)] == [entry]
    mode = module_testhost.exec(["stat", "-c", "%a", "/opt/specops/sglang/audit.jsonl"]).stdout.decode().strip()
    assert mode == "644"
    local = (tmp_path / "state" / "specops" / "audit.jsonl").read_text().splitlines()
    assert json.loads(local[-1])["host"] == ALIAS
