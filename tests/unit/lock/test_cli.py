"""`specops lock status|release` and `specops audit` as an operator runs them (the host is this machine)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from specops.host.local import LocalHost
from specops.ops.lock import HostLock, LockHolder, acquire
from tests.unit.clirun import run_cli
from tests.unit.lock.conftest import age_lock


@pytest.fixture
def inventory(config_dir: Path, root: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """specops.toml with llm-two whose service dir is under tmp; `connect` gives this machine as llm-two."""
    base = config_dir / "opt"
    (config_dir / "specops.toml").write_text(
        f'[hosts.llm-two]\nssh = "root@llm-two"\npython = "/usr/bin/python3"\nmodel_path = "/models/target"\n'
        f'base_dir = "{base}"\n'
    )
    monkeypatch.setattr("specops.host.ssh.connection.connect", lambda spec: LocalHost(spec.name))
    monkeypatch.setenv("XDG_STATE_HOME", str(config_dir / "state"))
    return base / "sglang"


@pytest.fixture
def held(inventory: Path, root: str) -> Iterator[HostLock]:
    holder = replace(LockHolder.current("specops deploy llm-two --profile ddtree"), user="alice",
                     machine="ci-runner-7", pid=4242)  # fmt: skip
    with acquire(LocalHost("llm-two"), holder, heartbeat_s=60) as lock:
        yield lock


def test_status_of_a_free_host(capsys: pytest.CaptureFixture[str], inventory: Path) -> None:
    result = run_cli(capsys, "lock", "status", "llm-two")
    assert (result.code, result.out) == (0, "llm-two: free\n")


def test_status_names_the_holder_and_says_not_stale(
    capsys: pytest.CaptureFixture[str], held: HostLock, root: str
) -> None:
    result = run_cli(capsys, "lock", "status", "llm-two")
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0] == "llm-two: locked"
    assert lines[1] == "  holder:     alice@ci-runner-7 pid 4242"
    assert lines[2] == "  command:    specops deploy llm-two --profile ddtree"
    assert lines[-1] == "  stale:      no"
    age_lock(root, 200)
    stale = run_cli(capsys, "lock", "status", "llm-two", "--json")
    document = json.loads(stale.out)
    assert (stale.code, document["locked"], document["lock"]["stale"]) == (0, True, True)
    assert document["lock"]["heartbeat_age_s"] >= 199 and "token" not in document["lock"]["holder"]


def test_status_says_when_the_holder_is_a_dead_process_of_this_machine(
    capsys: pytest.CaptureFixture[str], inventory: Path, root: str
) -> None:
    """A deploy killed with -9 on this machine: its heartbeat is fresh, yet the next deploy takes the lock over."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    holder = replace(LockHolder.current("specops deploy llm-two"), pid=gone.pid, process_start="")
    with acquire(LocalHost("llm-two"), holder, heartbeat_s=60):
        text = run_cli(capsys, "lock", "status", "llm-two")
        document = json.loads(run_cli(capsys, "lock", "status", "llm-two", "--json").out)
    assert text.code == 0 and "  stale:      no" in text.out
    dead = f"  dead:       process {gone.pid} no longer runs on this machine: the next deploy takes the lock over"
    assert text.out.splitlines()[-1] == dead
    assert document["lock"]["holder_dead"] == f"process {gone.pid} no longer runs on this machine"


def test_status_of_a_live_holder_has_no_dead_line(capsys: pytest.CaptureFixture[str], held: HostLock) -> None:
    document = json.loads(run_cli(capsys, "lock", "status", "llm-two", "--json").out)
    assert document["lock"]["holder_dead"] is None  # another machine's holder: its heartbeat decides
    assert "dead:" not in run_cli(capsys, "lock", "status", "llm-two").out


def test_release_refuses_a_live_holder_with_exit_6(capsys: pytest.CaptureFixture[str], held: HostLock) -> None:
    result = run_cli(capsys, "lock", "release", "llm-two")
    assert result.code == 6
    assert "error: llm-two: locked by alice@ci-runner-7 pid 4242" in result.err
    assert "not released, the holder is alive" in result.err
    assert "hint: if you are sure no deploy is running there: specops lock release llm-two --force" in result.err


def test_forced_release_removes_it_and_audits_it(
    capsys: pytest.CaptureFixture[str], held: HostLock, inventory: Path, root: str
) -> None:
    result = run_cli(capsys, "lock", "release", "llm-two", "--force")
    assert result.code == 0
    assert result.out.startswith("llm-two: released the lock held by alice@ci-runner-7 pid 4242 (`specops deploy")
    assert not Path(root).exists()
    table = run_cli(capsys, "audit", "llm-two")
    assert table.code == 0
    header, row = table.out.splitlines()
    assert header.split() == ["WHEN", "WHO", "ACTION", "FROM", "→", "TO", "OUTCOME", "MESSAGE"]
    assert "lock-release (forced)" in row and "released" in row and "alice@ci-runner-7" in row
    document = json.loads(run_cli(capsys, "audit", "llm-two", "--json", "-n", "5").out)
    assert document["path"] == f"{inventory}/audit.jsonl"
    assert [entry["action"] for entry in document["entries"]] == ["lock-release"]
    assert document["entries"][0]["forced"] is True


def test_a_stale_lock_is_released_without_force(capsys: pytest.CaptureFixture[str], held: HostLock, root: str) -> None:
    age_lock(root, 30)
    result = run_cli(capsys, "lock", "release", "llm-two", "--stale-after", "10")
    assert result.code == 0 and "released the lock held by alice@ci-runner-7" in result.out


def test_release_of_a_free_host_and_an_empty_audit(capsys: pytest.CaptureFixture[str], inventory: Path) -> None:
    assert run_cli(capsys, "lock", "release", "llm-two").out == "llm-two: the lock is free, nothing to release\n"
    empty = run_cli(capsys, "audit", "llm-two")
    assert (empty.code, empty.out) == (0, f"llm-two: no audit entries in {inventory}/audit.jsonl\n")


def test_an_unknown_host_is_a_usage_error(capsys: pytest.CaptureFixture[str], inventory: Path) -> None:
    result = run_cli(capsys, "lock", "status", "llm-nine")
    assert result.code == 2 and "unknown host 'llm-nine'" in result.err


def test_a_holder_from_a_newer_specops_is_exit_5_with_one_line_and_a_hint(
    capsys: pytest.CaptureFixture[str], held: HostLock, root: str
) -> None:
    path = Path(root, "holder.json")
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema": 99}, sort_keys=True) + "\n")
    result = run_cli(capsys, "lock", "status", "llm-two")
    assert result.code == 5
    assert result.err.splitlines() == [
        f"error: llm-two: {path}: this host was deployed by a newer specops (schema 99, this specops reads up to 1): "
        "upgrade specops",
        "hint: upgrade specops on this machine to the version that deployed the host (`specops --version` shows yours)",
    ]


def test_a_failing_command_on_the_host_is_exit_5_with_its_stderr_not_a_traceback(
    capsys: pytest.CaptureFixture[str], inventory: Path
) -> None:
    (inventory / "audit.jsonl").mkdir(parents=True)  # tail cannot read a folder
    result = run_cli(capsys, "audit", "llm-two")
    assert result.code == 5 and "Traceback" not in result.err
    lines = result.err.splitlines()
    assert lines[0].startswith("error: llm-two: `sh -c ") and lines[0].endswith("` exited with 1")
    assert "Is a directory" in lines[1] and lines[1].startswith("error:   | tail: ")
    assert lines[-1] == f"hint: could not read the audit log {inventory}/audit.jsonl"


def _with_unreachable_group(config_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Group `prod`: llm-two (this machine) and llm-off, which cannot be reached."""
    from specops.errors import ConnectError

    toml = config_dir / "specops.toml"
    toml.write_text(toml.read_text() + '\n[hosts.llm-off]\nssh = "root@llm-off"\npython = "/usr/bin/python3"\n'
                    'model_path = "/models/target"\n\n[groups]\nprod = ["llm-two", "llm-off"]\n')  # fmt: skip

    def connect(spec: object) -> LocalHost:
        name = getattr(spec, "name", "")
        if name == "llm-off":
            raise ConnectError("llm-off: cannot connect to llm-off:22: Connection refused")
        return LocalHost(name)

    monkeypatch.setattr("specops.host.ssh.connection.connect", connect)


def test_release_of_a_group_goes_on_past_a_refusal_and_an_unreachable_host(
    capsys: pytest.CaptureFixture[str], held: HostLock, config_dir: Path, monkeypatch: pytest.MonkeyPatch, root: str
) -> None:
    _with_unreachable_group(config_dir, monkeypatch)
    refused = run_cli(capsys, "lock", "release", "prod")
    assert refused.code == 4  # the most severe: a host not reached (4) over a live holder (6)
    errors = [line for line in refused.err.splitlines() if line.startswith("error:")]
    assert errors[0] == "error: llm-off: cannot connect to llm-off:22: Connection refused"
    assert errors[1].startswith("error: llm-two: locked by alice@ci-runner-7 pid 4242")
    assert Path(root).exists()  # a live holder's lock stays without --force

    forced = run_cli(capsys, "lock", "release", "prod", "--force", "--json")
    assert forced.code == 4
    hosts = json.loads(forced.out)["hosts"]
    assert list(hosts) == ["llm-off", "llm-two"]
    assert (hosts["llm-off"]["exit_code"], hosts["llm-off"]["error"]) == (4, "llm-off: cannot connect to llm-off:22: "
                                                                              "Connection refused")  # fmt: skip
    assert hosts["llm-off"]["unreachable"] is True  # the keys of every fleet command's host entry
    assert (hosts["llm-two"]["released"], hosts["llm-two"]["exit_code"]) == (True, 0)
    assert hosts["llm-two"]["lock"]["holder"]["user"] == "alice"
    assert not Path(root).exists()  # released on the host that could be reached
    assert run_cli(capsys, "lock", "release", "prod").out == "llm-two: the lock is free, nothing to release\n"
