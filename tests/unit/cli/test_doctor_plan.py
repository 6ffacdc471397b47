"""A plain doctor's remembered connection plan (specops/cli/early_plan.py): the same command line a second time
connects from the plan before the config's models load, and any change to what shaped the plan (the config,
a profile, the names) means the config is validated first again. A plan that does not match what the parsed
command validates is dropped, never used for the report.

The hosts refuse the connection (as in test_doctor_startup.py): what is asserted is what was connected to, how,
and what the operator sees."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from specops.cli import early_plan
from specops.errors import ExitCode
from tests.unit.cli.test_doctor_startup import run_entry
from tests.unit.conftest import VALID_HOST

Seen = list[tuple[str, str, str]]  # the `connects` fixture's (tests/unit/cli/conftest.py)


def plans() -> list[Path]:
    folder = early_plan.plan_dir()
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def doctor(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *names: str) -> dict[str, Any]:
    code, out, _ = run_entry(monkeypatch, capsys, "doctor", *names, "--json")
    assert code == ExitCode.UNREACHABLE
    hosts: dict[str, Any] = json.loads(out)["hosts"]
    return hosts


def test_the_second_run_connects_from_the_plan_and_reports_the_same(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], write_config: Any, connects: Seen
) -> None:
    write_config(VALID_HOST)
    first = doctor(monkeypatch, capsys, "llm-two")
    assert connects == [("HostSpec", "llm-two", "root@llm-two")]
    [plan] = plans()
    assert stat.S_IMODE(os.stat(plan.parent).st_mode) == 0o700
    again = doctor(monkeypatch, capsys, "llm-two")
    assert connects[1:] == [("PlainReach", "llm-two", "root@llm-two")]  # once: the parsed command claimed it
    for report in (first, again):
        report["llm-two"].pop("seconds")
    assert again == first
    assert plans() == [plan]


@pytest.mark.parametrize(
    "change",
    ["the config", "a profile", "the names"],
)
def test_a_change_to_what_shaped_the_plan_validates_first_again(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    write_config: Any,
    config_dir: Path,
    connects: Seen,
    change: str,
) -> None:
    path = write_config(VALID_HOST + "[hosts.llm-three]\n" + VALID_HOST.split("\n", 1)[1])
    doctor(monkeypatch, capsys, "llm-two")
    names = ["llm-two"]
    if change == "the config":
        path.write_text(VALID_HOST.replace("root@llm-two", "root@llm-two-b"), encoding="utf-8")
    elif change == "a profile":
        (config_dir / "profiles").mkdir()
        (config_dir / "profiles" / "mine.toml").write_text('algorithm = "NEXTN"\n', encoding="utf-8")
    else:
        names = ["llm-two", "llm-three"]
    doctor(monkeypatch, capsys, *names)
    assert [how for how, _, _ in connects[1:]] == ["HostSpec"] * len(names)
    assert len(plans()) == 2


def test_a_plan_that_does_not_match_the_validated_config_is_dropped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], write_config: Any, connects: Seen
) -> None:
    """Whatever the plan connected to, the report comes from the hosts the validated config names."""
    write_config(VALID_HOST)
    doctor(monkeypatch, capsys, "llm-two")
    [plan] = plans()
    data = json.loads(plan.read_text())
    data["hosts"][0]["ssh"] = "root@somewhere-else"
    plan.write_text(json.dumps(data))
    report = doctor(monkeypatch, capsys, "llm-two")
    assert connects[1:] == [("PlainReach", "llm-two", "root@somewhere-else"), ("HostSpec", "llm-two", "root@llm-two")]
    assert "connection refused to root@llm-two " in report["llm-two"]["unreachable"]
    assert plans() == []  # the next run validates first, and remembers a plan again
    doctor(monkeypatch, capsys, "llm-two")
    assert connects[-1][0] == "HostSpec" and len(plans()) == 1


@pytest.mark.parametrize(
    "content", ["", "{not json", '{"schema": 1, "hosts": [{"name": "llm-two"}]}', '{"schema": 99}']
)
def test_an_unreadable_or_foreign_plan_is_ignored(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    write_config: Any,
    connects: Seen,
    content: str,
) -> None:
    write_config(VALID_HOST)
    doctor(monkeypatch, capsys, "llm-two")
    [plan] = plans()
    plan.write_text(content)
    doctor(monkeypatch, capsys, "llm-two")
    assert [how for how, _, _ in connects] == ["HostSpec", "HostSpec"]
    assert json.loads(plan.read_text())["hosts"][0]["ssh"] == "root@llm-two"  # written again


def test_an_invalid_config_connects_nowhere_even_with_a_plan_for_its_old_text(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], write_config: Any, connects: Seen
) -> None:
    path = write_config(VALID_HOST)
    doctor(monkeypatch, capsys, "llm-two")
    path.write_text(VALID_HOST + "port = 0\n", encoding="utf-8")
    code, out, err = run_entry(monkeypatch, capsys, "doctor", "llm-two")
    assert code == ExitCode.CONFIG and out == "" and "hosts.llm-two.port" in err
    assert len(connects) == 1
