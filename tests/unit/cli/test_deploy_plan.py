"""A deploy's remembered connection plan (specops/cli/early/deploy.py): the same deploy command line a second
time connects from the plan while specops loads and the build is staged; a change to what shaped the plan, or
a plan that does not match what the parsed command validates, means the deploy connects as it always did.

The hosts refuse the connection (as in test_doctor_plan.py): what is asserted is what was connected to, how
often, and what the operator sees."""

from __future__ import annotations

import json
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from specops.cli.early import deploy as early_deploy
from specops.cli.early import plan as early_plan
from specops.errors import ConnectError, ExitCode
from tests.unit.cli.test_doctor_plan import saved_after_first_key, store, stored
from tests.unit.cli.test_doctor_startup import run_entry
from tests.unit.conftest import VALID_HOST

Seen = list[tuple[str, str, str]]  # the `connects` fixture's (tests/unit/cli/conftest.py)


@pytest.fixture(autouse=True)
def wait_for_early_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    """The refused connections answer at once; waiting for them in full (not 1 s) keeps the order of the
    attempts the same on a busy machine, where a thread may take longer than that to get to its connect."""
    monkeypatch.setattr(early_deploy, "WAIT_STARTED_S", 60.0)


@pytest.fixture
def build(config_dir: Path) -> Path:
    root = config_dir / "build"
    (root / "sglang").mkdir(parents=True)
    (root / "sglang" / "__init__.py").write_text("__version__ = '0.0.1'\n")
    return root


def plans() -> list[Path]:
    folder = early_plan.plan_dir()
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def deploy(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], build: Path, *args: str) -> str:
    """`specops deploy ... --json` through the console script; the host's outcome and cause as the user sees them."""
    code, out, _ = run_entry(monkeypatch, capsys, "deploy", *args, "--build", str(build), "--json")
    assert code == ExitCode.UNREACHABLE
    hosts = json.loads(out)["hosts"]
    return " / ".join(f"{name}: {found['outcome']}: {found['cause']}" for name, found in sorted(hosts.items()))


@pytest.mark.parametrize(
    ("args", "names", "lock_wait"),
    [
        (["deploy", "llm-two", "--build", "b"], ["llm-two"], 0.0),
        (["--json", "deploy", "llm-two", "gpu", "--build=b", "--patch", "p", "--force", "--json"], ["llm-two", "gpu"], 0.0),
        (["--config", "deploy", "deploy", "-p", "ddtree", "llm-two", "--lock-wait", "30", "--reap"], ["llm-two"], 30.0),
        (["deploy", "llm-two", "--canary=1", "--parallel", "2", "--max-fail-percent", "10", "--no-rollback"],
         ["llm-two"], 0.0),
    ],
)  # fmt: skip
def test_a_plain_deploy_command_line_is_recognised(args: list[str], names: list[str], lock_wait: float) -> None:
    plan = early_deploy.plain_deploy(args)
    assert plan is not None and (plan.names, float(plan.values.get("lock_wait", 0))) == (names, lock_wait)


@pytest.mark.parametrize(
    "args",
    [
        ["deploy", "llm-two", "--dry-run"],  # connects its own way
        ["--ask-become-pass", "deploy", "llm-two"],  # a password to ask for first
        ["deploy", "llm-two", "--build"],  # a value missing: the parsed command says so
        ["deploy", "--build", "b"],  # no host
        ["deploy", "llm-two", "--lock-wait", "soon"],
        ["deploy", "llm-two", "--lock-wait", "nan"],
        ["deploy", "llm-two", "--lock-wait=-1"],
        ["deploy", "llm-two", "--help"],
        ["rollback", "llm-two"],
        ["doctor", "llm-two"],
    ],
)
def test_anything_else_starts_nothing_early(args: list[str]) -> None:
    assert early_deploy.plain_deploy(args) is None


def test_the_second_deploy_connects_once_from_the_plan_and_reports_the_same(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    write_config: Any,
    connects: Seen,
    build: Path,
) -> None:
    write_config(VALID_HOST)
    first = deploy(monkeypatch, capsys, build, "llm-two")
    assert connects == [("HostSpec", "llm-two", "root@llm-two")]
    [plan] = plans()
    record = stored(plan)["hosts"][0]
    assert (record["python"], record["service_dir"]) == ("/opt/venv/bin/python", "/opt/specops/sglang")
    again = deploy(monkeypatch, capsys, build, "llm-two")
    assert connects[1:] == [("PlainReach", "llm-two", "root@llm-two")]  # once: the parsed command claimed it
    assert again == first == "llm-two: unreachable: llm-two: connection refused to root@llm-two (by the test)"


def test_a_changed_config_or_other_names_connect_as_always(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    write_config: Any,
    connects: Seen,
    build: Path,
) -> None:
    path = write_config(VALID_HOST + "[hosts.llm-three]\n" + VALID_HOST.split("\n", 1)[1])
    deploy(monkeypatch, capsys, build, "llm-two")
    deploy(monkeypatch, capsys, build, "llm-two", "llm-three")
    path.write_text(VALID_HOST.replace("root@llm-two", "root@llm-two-b"), encoding="utf-8")
    deploy(monkeypatch, capsys, build, "llm-two")
    assert [how for how, _, _ in connects] == ["HostSpec"] * 4
    assert len(plans()) == 3


def test_a_plan_that_does_not_match_the_validated_config_is_closed_and_replaced(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    write_config: Any,
    connects: Seen,
    build: Path,
) -> None:
    """Whatever the plan connected to, the deploy goes to the host the validated config names."""
    write_config(VALID_HOST)
    deploy(monkeypatch, capsys, build, "llm-two")
    [plan] = plans()
    data = stored(plan)
    data["hosts"][0]["ssh"] = "root@somewhere-else"
    store(plan, data)
    outcome = deploy(monkeypatch, capsys, build, "llm-two")
    assert connects[1:] == [("PlainReach", "llm-two", "root@somewhere-else"), ("HostSpec", "llm-two", "root@llm-two")]
    assert "connection refused to root@llm-two " in outcome
    assert stored(plan)["hosts"][0]["ssh"] == "root@llm-two"  # the next run starts from this
    deploy(monkeypatch, capsys, build, "llm-two")
    assert connects[-1] == ("PlainReach", "llm-two", "root@llm-two")


@pytest.mark.parametrize("content", ["", "{not json", '{"schema": 1, "hosts": [{"name": "llm-two"}]}'])
def test_an_unreadable_or_foreign_plan_is_ignored(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    write_config: Any,
    connects: Seen,
    build: Path,
    content: str,
) -> None:
    write_config(VALID_HOST)
    deploy(monkeypatch, capsys, build, "llm-two")
    [plan] = plans()
    plan.write_text(content)
    deploy(monkeypatch, capsys, build, "llm-two")
    assert [how for how, _, _ in connects] == ["HostSpec", "HostSpec"]


def test_a_planning_error_closes_the_early_connections_and_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    write_config: Any,
    connects: Seen,
    build: Path,
    config_dir: Path,
) -> None:
    """A patch that does not apply stops the deploy (exit 2) before any host is used, early connection or not."""
    write_config(VALID_HOST)
    deploy(monkeypatch, capsys, build, "llm-two")
    patch = config_dir / "bad.patch"
    patch.write_text("--- a/sglang/missing.py\n+++ b/sglang/missing.py\n@@ -1 +1 @@\n-a\n+b\n")
    code, out, err = run_entry(monkeypatch, capsys, "deploy", "llm-two", "--build", str(build), "--patch", str(patch))
    assert code == ExitCode.USAGE and out == ""
    assert "missing.py" in err and "Traceback" not in err
    assert connects[1:] == [("PlainReach", "llm-two", "root@llm-two")]  # made early, then closed unused


def test_a_silent_host_connecting_early_does_not_hold_up_a_planning_error(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    write_config: Any,
    connects: Seen,
    build: Path,
    config_dir: Path,
) -> None:
    """The console script waits for early connections only briefly: a bad patch is reported while a silent
    host is still connecting, and that connection is dropped when it ends."""
    write_config(VALID_HOST)
    deploy(monkeypatch, capsys, build, "llm-two")
    answer, connecting = threading.Event(), threading.Event()
    seen: list[str] = []

    def silent(reach: Any, **_: Any) -> Any:
        seen.append("connecting")
        connecting.set()
        answer.wait(30)
        seen.append("answered" if answer.is_set() else "gave up")
        raise ConnectError(f"{reach.name}: timed out (by the test)")

    def limit_passes_while_connecting(_: Any, limit_s: float | None = None) -> None:  # the 1 s limit, not the second
        connecting.wait(30)

    monkeypatch.setattr("specops.host.ssh.connection.connect", silent)
    monkeypatch.setattr(early_deploy.EarlyConnections, "wait_started", limit_passes_while_connecting)
    patch = config_dir / "bad.patch"
    patch.write_text("--- a/sglang/missing.py\n+++ b/sglang/missing.py\n@@ -1 +1 @@\n-a\n+b\n")
    code, _, err = run_entry(monkeypatch, capsys, "deploy", "llm-two", "--build", str(build), "--patch", str(patch))
    assert (code, seen) == (ExitCode.USAGE, ["connecting"]) and "missing.py" in err
    answer.set()
    for thread in threading.enumerate():
        if thread.name.startswith("specops-early-"):
            thread.join(30)
    assert seen == ["connecting", "answered"]


def test_a_deploy_without_build_option_starts_from_the_same_plan_when_the_config_names_the_build(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    write_config: Any,
    connects: Seen,
    build: Path,
) -> None:
    """The plan holds the hosts, not the build: `deploy HOST` with the build named in specops.toml connects from
    it the second time like any plain deploy; without any build, the early connection is closed unused."""
    path = write_config(VALID_HOST.replace("[hosts.llm-two]\n", '[hosts.llm-two]\nbuild = "build"\n'))
    outcomes = []
    for _ in range(2):
        code, out, _ = run_entry(monkeypatch, capsys, "deploy", "llm-two", "--json")
        assert code == ExitCode.UNREACHABLE
        outcomes.append(json.loads(out)["hosts"]["llm-two"]["outcome"])
    assert outcomes == ["unreachable", "unreachable"]
    assert connects == [("HostSpec", "llm-two", "root@llm-two"), ("PlainReach", "llm-two", "root@llm-two")]
    assert len(plans()) == 1
    path.write_text(path.read_text().replace('build = "build"\n', ""))  # another config: no plan yet
    run_entry(monkeypatch, capsys, "deploy", "llm-two", "--build", str(build))
    code, out, err = run_entry(monkeypatch, capsys, "deploy", "llm-two")
    assert (code, out) == (ExitCode.USAGE, "")
    assert err.startswith("error: no build to deploy") and "hint: pass --build PATH" in err
    assert connects[2:] == [("HostSpec", "llm-two", "root@llm-two"), ("PlainReach", "llm-two", "root@llm-two")]


# --- attacks on the plan file: a deploy's plan starts the interpreter it names, as the sudo user, on the host it
# names, before the config is validated; only a plan this specops wrote for this user, with valid values, may


@pytest.fixture
def remembered(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], write_config: Any, connects: Seen, build: Path
) -> Path:
    """The plan a first deploy of VALID_HOST kept."""
    write_config(VALID_HOST)
    deploy(monkeypatch, capsys, build, "llm-two")
    [plan] = plans()
    return plan


def again(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], build: Path) -> list[str]:
    """The same deploy again: its warning lines."""
    code, _, err = run_entry(monkeypatch, capsys, "deploy", "llm-two", "--build", str(build), "--json")
    assert code == ExitCode.UNREACHABLE and "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("warning:")]


def test_a_plan_edited_by_someone_else_starts_nothing(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    connects: Seen,
    build: Path,
    remembered: Path,
) -> None:
    plan = remembered
    data = stored(plan)
    data["hosts"][0].update(python="/tmp/evil", ssh="root@somewhere-else")
    plan.write_text(json.dumps(data))
    warnings = again(monkeypatch, capsys, build)
    assert connects == [("HostSpec", "llm-two", "root@llm-two")] * 2
    assert warnings == [
        f"warning: ignored cached file {plan} was not written by specops for you (its tag does not match)"
    ]


@pytest.mark.parametrize(
    ("key", "value", "refused"),
    [
        ("ssh", "ops@other-host$(id):22", "hosts[0].ssh: 'ops@other-host$(id):22' is not an ssh alias"),
        ("python", "python3 -c evil", "hosts[0].python: 'python3 -c evil' is not an absolute path"),
        ("service_dir", "/opt/../etc", "hosts[0].service_dir: '/opt/../etc' contains '..'"),
        ("sudo_as", "-s", "hosts[0].sudo_as: '-s' is not a user or group name"),
        ("push_bytes", -1, "hosts[0].push_bytes: -1 is not a byte count"),
    ],
)
def test_a_plan_value_specops_toml_would_refuse_starts_nothing(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    connects: Seen,
    build: Path,
    remembered: Path,
    key: str,
    value: object,
    refused: str,
) -> None:
    """Even with a valid tag, each value goes through specops.toml's rules before anything connects."""
    plan = remembered
    data = stored(plan)
    data["hosts"][0][key] = value
    store(plan, data)
    warnings = again(monkeypatch, capsys, build)
    assert connects == [("HostSpec", "llm-two", "root@llm-two")] * 2
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: ignored connection plan {plan}: {refused}")


def test_the_deploy_plan_is_private_and_filed_under_the_validated_config(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    write_config: Any,
    connects: Seen,
    build: Path,
) -> None:
    """The config is saved (version B) after the early key was computed from version A: B's hosts are filed
    under B's key (0600, in a 0700 folder), and the next deploy of version A never connects early to B's host."""
    path = write_config(VALID_HOST)
    with saved_after_first_key(path, VALID_HOST.replace("root@llm-two", "root@llm-two-b")):
        deploy(monkeypatch, capsys, build, "llm-two")
    [plan] = plans()
    assert (stat.S_IMODE(plan.parent.stat().st_mode), stat.S_IMODE(plan.stat().st_mode)) == (0o700, 0o600)
    write_config(VALID_HOST)  # version A again
    again(monkeypatch, capsys, build)
    assert connects == [("HostSpec", "llm-two", "root@llm-two-b"), ("HostSpec", "llm-two", "root@llm-two")]
