"""`specops doctor` from the console script: the hosts are connected before the command line parser loads, the
checks load while the hosts answer, and nothing an operator sees changes (errors first, one connection per host).

The hosts here refuse the connection (specops.host.ssh.connection.connect is replaced), so a run ends as "unreachable":
what is asserted is the order of events and what the operator sees, not a probe."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import specops.cli.main
from specops.cli.early import doctor as early
from specops.cli.early.start import HeadStart
from specops.cli.entry import entry
from specops.errors import ConnectError, ExitCode
from tests.unit.conftest import VALID_HOST

Events = list[str]


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> Events:
    """What happened, in order: `connect NAME` (refused) and `parse` (typer's app built for the command line)."""
    seen: Events = []

    def refuse(spec: Any, **_: Any) -> Any:
        seen.append(f"connect {spec.name}")
        raise ConnectError(f"{spec.name}: connection refused (by the test)")

    real_build_app = specops.cli.main.build_app

    def build_app(only: str | None = None) -> Any:
        seen.append("parse")
        return real_build_app(only)

    monkeypatch.setattr("specops.host.ssh.connection.connect", refuse)
    monkeypatch.setattr(specops.cli.main, "build_app", build_app)
    return seen


def run_entry(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The console script (`specops ARGS...`): its exit code, stdout and stderr. A doctor's quick exit (which
    would end pytest too) exits as sys.exit does, with "quick exit" noted on stderr."""

    def quick_exit(code: int) -> None:
        print("quick exit", file=sys.stderr)
        sys.exit(code)

    monkeypatch.setattr(sys, "argv", ["specops", *args])
    monkeypatch.setattr("specops.cli.early.start.exit_process", quick_exit)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        entry()
    out = capsys.readouterr()
    assert isinstance(exited.value.code, int)
    return exited.value.code, out.out, out.err


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["doctor", "llm-two"], ["llm-two"]),
        (["doctor", "llm-two", "gpu", "--json", "--strict"], ["llm-two", "gpu"]),
        (["--json", "-v", "--no-color", "doctor", "llm-two"], ["llm-two"]),
        (["--config", "doctor", "doctor", "llm-two"], ["llm-two"]),
    ],
)
def test_a_plain_doctor_command_line_is_recognised(args: list[str], names: list[str]) -> None:
    plan = early.plain_doctor(args)
    assert plan is not None and plan.names == names


@pytest.mark.parametrize(
    "args",
    [
        ["doctor"],
        ["doctor", "--all"],
        ["doctor", "llm-two", "--deep"],
        ["doctor", "llm-two", "--profile", "ddtree"],
        ["doctor", "llm-two", "--only", "gpu"],
        ["doctor", "llm-two", "-v"],  # -v after the command is a usage error: the parser must say so
        ["doctor", "--help"],
        ["-K", "doctor", "llm-two"],  # the sudo password is asked for by the parsed command, before connecting
        ["--config"],
        ["status", "llm-two"],
        ["doctor", "--", "llm-two"],
    ],
)
def test_anything_else_is_left_to_the_parser(args: list[str]) -> None:
    assert early.plain_doctor(args) is None


def test_a_plain_doctor_connects_once_and_before_the_parser(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], write_config: Any, events: Events
) -> None:
    write_config(VALID_HOST)
    switch_interval = sys.getswitchinterval()
    code, out, _ = run_entry(monkeypatch, capsys, "doctor", "llm-two", "--json")
    assert code == ExitCode.UNREACHABLE
    assert events == ["connect llm-two", "parse"]
    assert sys.getswitchinterval() == switch_interval  # shortened only while the hosts answer
    report = json.loads(out)["hosts"]["llm-two"]
    assert "connection refused" in report["unreachable"]
    assert [check["id"] for check in report["checks"]] == ["ssh.reachable"]


def test_any_other_doctor_parses_first_and_still_connects_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], write_config: Any, events: Events
) -> None:
    write_config(VALID_HOST)
    code, out, _ = run_entry(monkeypatch, capsys, "doctor", "llm-two", "--profile", "ddtree")
    assert code == ExitCode.UNREACHABLE
    assert events == ["parse", "connect llm-two"]
    assert "llm-two: connection refused (by the test)" in out


def test_an_invalid_config_is_the_error_and_nothing_connects(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], write_config: Any, events: Events
) -> None:
    path = write_config(VALID_HOST + "port = 0\n")
    code, out, err = run_entry(monkeypatch, capsys, "doctor", "llm-two")
    assert code == ExitCode.CONFIG
    assert events == ["parse"]
    assert f"{path.name}" in err and "hosts.llm-two.port" in err
    assert out == ""


def test_an_unknown_host_is_a_usage_error_and_nothing_connects(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], write_config: Any, events: Events
) -> None:
    write_config(VALID_HOST)
    code, _, err = run_entry(monkeypatch, capsys, "doctor", "llm-one")
    assert code == ExitCode.USAGE
    assert events == ["parse"]
    assert "llm-one" in err


def test_an_early_examination_the_command_does_not_ask_for_is_dropped(
    monkeypatch: pytest.MonkeyPatch, write_config: Any, events: Events
) -> None:
    """A config changed between the early start and the parsed command's own load: not claimed, waited for."""
    write_config(VALID_HOST)
    head_start = HeadStart(doctor=early.start(["doctor", "llm-two"]))
    assert head_start.doctor is not None
    assert head_start.claim_examination([], deep=False) is None
    assert head_start.claim_examination([], deep=False) is None  # nothing left running
    assert events == ["connect llm-two"]


def test_the_config_path_of_the_command_line_is_the_one_loaded(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], config_dir: Path, events: Events
) -> None:
    elsewhere = config_dir / "other.toml"
    elsewhere.write_text(VALID_HOST, encoding="utf-8")
    code, _, _ = run_entry(monkeypatch, capsys, "--config", str(elsewhere), "doctor", "llm-two", "--json")
    assert code == ExitCode.UNREACHABLE
    assert events == ["connect llm-two", "parse"]


def test_a_doctor_and_a_deploy_leave_quickly_other_commands_do_not(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], write_config: Any, events: Events
) -> None:
    write_config(VALID_HOST)
    assert run_entry(monkeypatch, capsys, "doctor", "llm-two")[2].endswith("quick exit\n")
    code, _, err = run_entry(monkeypatch, capsys, "deploy", "no-such-host", "--build", "/nonexistent")
    assert code == 2 and err.endswith("quick exit\n")  # the same exit code as without the quick exit
    code, out, err = run_entry(monkeypatch, capsys, "hosts")
    assert code == 0 and "llm-two" in out and "quick exit" not in err


def test_ctrl_c_while_connecting_early_is_an_interrupted_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], write_config: Any, events: Events
) -> None:
    def interrupted(_: early.EarlyExamination) -> None:
        raise KeyboardInterrupt

    write_config(VALID_HOST)
    monkeypatch.setattr(early.EarlyExamination, "wait_connected", interrupted)
    code, out, err = run_entry(monkeypatch, capsys, "doctor", "llm-two")
    assert code == ExitCode.INTERRUPTED
    assert (out, err) == ("", "quick exit\n")
    assert events == ["connect llm-two"]  # the connection it had started was waited for, not left running
