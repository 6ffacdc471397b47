"""The read-only commands over a group: one row per host, an unreachable host is a row, the exit code is
the most severe host's, --json is {"hosts": {NAME: ...}}, and `logs GROUP` prefixes every line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from specops.errors import ConnectError
from specops.host.base import Host
from specops.host.local import LocalHost
from specops.host.recording import RecordingHost, reply
from tests.unit.clirun import run_cli

HOSTS = ("llm-one", "llm-two", "llm-off")


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The lock root under tmp_path (LocalHost stands in for the hosts: never /run/specops)."""
    path = str(tmp_path / "run" / "specops" / "lock")
    monkeypatch.setattr("specops.ops.lock.DEFAULT_LOCK_ROOT", path)
    return path


@pytest.fixture
def inventory(config_dir: Path, root: str) -> Path:
    base = config_dir / "opt"
    hosts = "".join(f'[hosts.{name}]\nssh = "{name}"\nbase_dir = "{base / name}"\n\n' for name in HOSTS)
    (config_dir / "specops.toml").write_text(
        f'[defaults]\npython = "/usr/bin/python3"\nmodel_path = "/models/target"\n\n{hosts}'
        f'[groups]\ngpu = {json.dumps(list(HOSTS))}\nup = ["llm-one", "llm-two"]\n'
    )
    return config_dir


def _reach(monkeypatch: pytest.MonkeyPatch, hosts: dict[str, Host]) -> None:
    """`connect` gives the host named in `hosts`; any other is refused like a stopped machine."""

    def connect(spec: object) -> Host:
        name = getattr(spec, "name", "")
        if name not in hosts:
            raise ConnectError(f"{name}: cannot connect: connection refused", hint="is the host up?")
        return hosts[name]

    monkeypatch.setattr("specops.host.ssh.connection.connect", connect)


@pytest.fixture
def two_up(monkeypatch: pytest.MonkeyPatch, inventory: Path) -> None:
    _reach(monkeypatch, {"llm-one": LocalHost("llm-one"), "llm-two": LocalHost("llm-two")})


def test_lock_status_of_a_group_has_a_row_per_host_and_exits_4_for_the_stopped_one(
    capsys: pytest.CaptureFixture[str], two_up: None
) -> None:
    result = run_cli(capsys, "lock", "status", "gpu")
    assert result.code == 4
    rows = result.out.splitlines()
    assert rows[0].split() == ["HOST", "STATE", "HOLDER", "SINCE", "HEARTBEAT", "STALE"]
    assert [row.split()[:2] for row in rows[1:4]] == [["llm-one", "free"], ["llm-two", "free"],
                                                        ["llm-off", "unreachable"]]  # fmt: skip
    assert "\nllm-off: cannot connect: connection refused\n" in result.out
    assert "hint: is the host up?" in result.out


def test_group_json_is_keyed_by_host(capsys: pytest.CaptureFixture[str], two_up: None) -> None:
    result = run_cli(capsys, "lock", "status", "gpu", "--json")
    assert result.code == 4
    hosts = json.loads(result.out)["hosts"]
    assert list(hosts) == list(HOSTS)
    assert hosts["llm-one"] == {"locked": False, "lock": None, "exit_code": 0}
    assert hosts["llm-off"]["unreachable"] is True
    assert hosts["llm-off"]["exit_code"] == 4


def test_all_hosts_and_a_reachable_group_exit_0(capsys: pytest.CaptureFixture[str], two_up: None) -> None:
    assert run_cli(capsys, "lock", "status", "up").code == 0
    assert [line.split()[0] for line in run_cli(capsys, "lock", "status", "--all").out.splitlines()[1:4]] == list(HOSTS)


def test_one_host_name_keeps_the_single_host_view(capsys: pytest.CaptureFixture[str], two_up: None) -> None:
    assert run_cli(capsys, "lock", "status", "llm-one").out == "llm-one: free\n"
    assert json.loads(run_cli(capsys, "audit", "llm-one", "--json").out)["entries"] == []


def test_audit_of_a_group(capsys: pytest.CaptureFixture[str], two_up: None) -> None:
    result = run_cli(capsys, "audit", "up")
    assert result.code == 0
    assert [row.split()[:4] for row in result.out.splitlines()[1:3]] == [["llm-one", "-", "-", "(no"],
                                                                       ["llm-two", "-", "-", "(no"]]  # fmt: skip


def test_no_names_is_a_usage_error(capsys: pytest.CaptureFixture[str], two_up: None) -> None:
    result = run_cli(capsys, "status")
    assert result.code == 2
    assert "name hosts or groups, or pass --all" in result.err


def _journal(*answers: str | BaseException) -> RecordingHost:
    host = RecordingHost("journal")
    scripted = [reply(stdout=a) if isinstance(a, str) else a for a in answers]
    host.script(["journalctl"], *scripted)
    return host


def test_logs_of_a_group_prefixes_lines_and_reports_each_failure(
    capsys: pytest.CaptureFixture[str], inventory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = RecordingHost("llm-two").script(
        ["journalctl"], reply(stderr="No journal files were found.\n", exit_code=1)
    )
    _reach(monkeypatch, {"llm-one": _journal("ready\n-- cursor: s=1;i=1\n"), "llm-two": failing})
    result = run_cli(capsys, "logs", "gpu", "-n", "3")
    assert result.code == 5  # a host-side failure outranks an unreachable host, as for a deploy
    assert result.out == "llm-one | ready\n"
    assert "error: llm-two: `journalctl -u sglang.service" in result.err
    assert "| No journal files were found." in result.err
    assert "error: llm-off: cannot connect: connection refused" in result.err


def test_logs_follow_of_a_group_interleaves_until_the_hosts_go_away(
    capsys: pytest.CaptureFixture[str], inventory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("specops.ops.journal.FOLLOW_INTERVAL_S", 0.0)
    lost: Callable[[str], ConnectError] = lambda name: ConnectError(f"{name}: connection lost")  # noqa: E731
    one = _journal("a1\n-- cursor: s=1;i=1\n", "a2\n-- cursor: s=1;i=2\n", lost("llm-one"))
    two = _journal("b1\n-- cursor: s=2;i=1\n", "", "b2\n-- cursor: s=2;i=2\n", lost("llm-two"))
    _reach(monkeypatch, {"llm-one": one, "llm-two": two})
    result = run_cli(capsys, "logs", "up", "-f")
    assert result.code == 4
    lines = result.out.splitlines()
    assert sorted(lines) == ["llm-one | a1", "llm-one | a2", "llm-two | b1", "llm-two | b2"]
    assert lines.index("llm-one | a1") < lines.index("llm-one | a2")
    assert lines.index("llm-two | b1") < lines.index("llm-two | b2")
    assert "llm-one: connection lost" in result.err and "llm-two: connection lost" in result.err
    resumed = [argv[argv.index("--after-cursor") + 1] for argv in two.commands[1:]]
    assert resumed == ["s=2;i=1", "s=2;i=1", "s=2;i=2"]  # an empty poll keeps the position
