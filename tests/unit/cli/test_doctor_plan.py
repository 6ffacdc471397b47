"""A plain doctor's remembered connection plan (specops/cli/early/plan.py): the same command line a second time
connects from the plan before the config's models load, and any change to what shaped the plan (the config,
a profile, the names) means the config is validated first again. A plan that does not match what the parsed
command validates is dropped, never used for the report.

The hosts refuse the connection (as in test_doctor_startup.py): what is asserted is what was connected to, how,
and what the operator sees."""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from specops.cli.early import plan as early_plan
from specops.errors import ExitCode
from tests.unit.cli.test_doctor_startup import run_entry
from tests.unit.conftest import VALID_HOST
from tests.unit.needs import need_root

Seen = list[tuple[str, str, str]]  # the `connects` fixture's (tests/unit/cli/conftest.py)


def plans() -> list[Path]:
    folder = early_plan.plan_dir()
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def stored(plan: Path) -> dict[str, Any]:
    """A plan file's JSON, after its tag line (specops/localdirs.py: write_private)."""
    content = plan.read_bytes()
    data: dict[str, Any] = json.loads(content.partition(b"\n")[2] if content.startswith(b"specops-tag ") else content)
    return data


def store(plan: Path, data: dict[str, Any]) -> None:
    """Write a changed plan as specops itself writes one (tagged): what only the checks can refuse."""
    early_plan.remember(plan.stem, data["hosts"])


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
    data = stored(plan)
    data["hosts"][0]["ssh"] = "root@somewhere-else"
    store(plan, data)
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
    assert stored(plan)["hosts"][0]["ssh"] == "root@llm-two"  # written again


def test_an_invalid_config_connects_nowhere_even_with_a_plan_for_its_old_text(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], write_config: Any, connects: Seen
) -> None:
    path = write_config(VALID_HOST)
    doctor(monkeypatch, capsys, "llm-two")
    path.write_text(VALID_HOST + "port = 0\n", encoding="utf-8")
    code, out, err = run_entry(monkeypatch, capsys, "doctor", "llm-two")
    assert code == ExitCode.CONFIG and out == "" and "hosts.llm-two.port" in err
    assert len(connects) == 1


# --- attacks on the plan file: each stops a plan someone else could have written from steering a connection


@pytest.fixture
def remembered(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], write_config: Any, connects: Seen
) -> Path:
    """The plan a first doctor of VALID_HOST kept."""
    write_config(VALID_HOST)
    doctor(monkeypatch, capsys, "llm-two")
    [plan] = plans()
    return plan


@contextlib.contextmanager
def saved_after_first_key(config: Path, text: str) -> Iterator[None]:
    """The operator saves the config (`text`) just after the early plan key was computed from its old bytes."""
    original, calls = early_plan.plan_key, []

    def saved_in_between(*args: Any, **kwargs: Any) -> str | None:
        key = original(*args, **kwargs)
        if not calls:
            config.write_text(text, encoding="utf-8")
        calls.append(key)
        return key

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(early_plan, "plan_key", saved_in_between)
        yield


def second_run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], connects: Seen) -> list[Any]:
    """The same doctor again: what it connected to (from a plan or the config) and its warning lines."""
    before = len(connects)
    code, _, err = run_entry(monkeypatch, capsys, "doctor", "llm-two", "--json")
    assert code == ExitCode.UNREACHABLE and "Traceback" not in err
    return [connects[before:], [line for line in err.splitlines() if line.startswith("warning:")]]


@pytest.mark.parametrize(
    ("key", "value", "refused"),
    [
        ("python", "/tmp/evil", "hosts[0].request: its python or unit is not the host's"),
        ("python", "/tmp/evil;id", "hosts[0].python: '/tmp/evil;id' is not an absolute path"),
        ("ssh", "ops@other-host$(id):22", "hosts[0].ssh: 'ops@other-host$(id):22' is not an ssh alias"),
        ("ssh", "-oProxyCommand=id", "hosts[0].ssh: '-oProxyCommand=id' starts with '-'"),
        ("jump", "bastion,$(id)", "hosts[0].jump: '$(id)' is not an ssh alias"),
        ("sudo_as", "#0", "hosts[0].sudo_as: '#0' is not a user or group name"),
        ("name", "../x", "hosts[0].name: '../x' is not a valid name"),
    ],
)
def test_a_tampered_plan_value_never_reaches_a_connection(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    connects: Seen,
    remembered: Path,
    key: str,
    value: str,
    refused: str | None,
) -> None:
    """Even a plan that carries a valid tag (as if written by this specops) is checked by specops.toml's rules
    before anything connects: the doctor validates the config and connects to the configured host only."""
    plan = remembered
    data = stored(plan)
    data["hosts"][0][key] = value
    store(plan, data)
    seen, warnings = second_run(monkeypatch, capsys, connects)
    assert seen == [("HostSpec", "llm-two", "root@llm-two")]
    assert len(warnings) == 1 and f"ignored connection plan {plan}: " in warnings[0]
    assert refused is None or refused in warnings[0]


@pytest.mark.parametrize(
    ("key", "value"),
    [("base_dir", "/opt/$(id)"), ("service", "sshd"), ("sglang_roots", {"x": "relative"}), ("deep", True),
     ("server_argv", ["--x\n"]), ("extra", 1)],
)  # fmt: skip
def test_a_tampered_probe_request_never_reaches_a_host(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    connects: Seen,
    remembered: Path,
    key: str,
    value: object,
) -> None:
    plan = remembered
    data = stored(plan)
    data["hosts"][0]["request"][key] = value
    store(plan, data)
    seen, warnings = second_run(monkeypatch, capsys, connects)
    assert seen == [("HostSpec", "llm-two", "root@llm-two")]
    assert len(warnings) == 1 and f"hosts[0].request.{key}" in warnings[0]


def test_a_plan_edited_by_someone_else_is_not_used(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], connects: Seen, remembered: Path
) -> None:
    """A plan file whose tag does not match (edited, or copied in from another machine or user) is ignored,
    however valid its values look: its interpreter is never started, its host never connected to."""
    plan = remembered
    data = stored(plan)
    data["hosts"][0]["ssh"] = "root@somewhere-else"
    data["hosts"][0]["python"] = data["hosts"][0]["request"]["python"] = "/tmp/evil"
    plan.write_text(json.dumps(data))
    seen, warnings = second_run(monkeypatch, capsys, connects)
    assert seen == [("HostSpec", "llm-two", "root@llm-two")]
    assert warnings == [
        f"warning: ignored cached file {plan} was not written by specops for you (its tag does not match)"
    ]


def test_a_plan_folder_another_user_can_write_is_not_trusted(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    write_config: Any,
    connects: Seen,
    config_dir: Path,
) -> None:
    """A pre-created 0777 plan folder (a shared $XDG_CACHE_HOME): nothing is kept in it or read from it."""
    folder = config_dir / "cache" / "specops" / "doctor-plans"
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    write_config(VALID_HOST)
    _, warnings = second_run(monkeypatch, capsys, connects)  # each run warns once (here: one process, once)
    second_run(monkeypatch, capsys, connects)
    assert [how for how, _, _ in connects] == ["HostSpec", "HostSpec"] and plans() == []
    assert warnings == [f"warning: ignored cache folder {folder} is writable by other users (mode 777); "
                        f"run `chmod go-w {folder}`"]  # fmt: skip
    assert stat.S_IMODE(folder.stat().st_mode) == 0o777  # left as it is: the operator decides


def test_a_plan_folder_owned_by_another_user_is_not_trusted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], connects: Seen, remembered: Path
) -> None:
    need_root("giving a folder to another user")
    plan = remembered
    os.chown(plan.parent, 65534, 65534)
    seen, warnings = second_run(monkeypatch, capsys, connects)
    assert seen == [("HostSpec", "llm-two", "root@llm-two")]
    assert warnings == [f"warning: ignored cache folder {plan.parent} belongs to uid 65534, not to you (uid 0)"]


def test_a_symlinked_plan_is_not_followed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], connects: Seen, remembered: Path
) -> None:
    plan = remembered
    elsewhere = plan.parent.parent / "elsewhere.json"
    plan.rename(elsewhere)
    plan.symlink_to(elsewhere)
    seen, _ = second_run(monkeypatch, capsys, connects)
    assert seen == [("HostSpec", "llm-two", "root@llm-two")]
    assert not plan.is_symlink()  # replaced by a fresh plan file, the symlink's target untouched
    assert elsewhere.read_bytes() == plan.read_bytes()


def test_the_plan_is_private_to_its_user(remembered: Path) -> None:
    plan = remembered
    assert (stat.S_IMODE(plan.parent.stat().st_mode), stat.S_IMODE(plan.stat().st_mode)) == (0o700, 0o600)
    assert [entry.name for entry in plan.parent.iterdir()] == [plan.name]  # no temporary file left behind


def test_a_config_saved_during_a_run_files_its_plan_under_its_own_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], write_config: Any, connects: Seen
) -> None:
    """The config is saved (version B) after the early key was computed from version A: B's hosts are filed
    under B's key, so the next run of version A never connects early to B's host."""
    path = write_config(VALID_HOST)
    with saved_after_first_key(path, VALID_HOST.replace("root@llm-two", "root@llm-two-b")):
        doctor(monkeypatch, capsys, "llm-two")
    write_config(VALID_HOST)  # version A again
    seen, _ = second_run(monkeypatch, capsys, connects)
    assert connects[0] == ("HostSpec", "llm-two", "root@llm-two-b")
    assert seen == [("HostSpec", "llm-two", "root@llm-two")]
