"""`specops releases HOST --mark-bad ID [--reason]` / `--unmark-bad ID` through the real CLI, the host being
this machine (LocalHost running the real host-side script): what the operator reads, and the usage errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from specops.host.base import Result
from specops.host.local import LocalHost
from tests.unit.clirun import run_cli
from tests.unit.release.hostfixture import add_release, point_current

OLD, NEW = "20261101T000000Z-aaaa", "20261102T000000Z-bbbb"


class HostWithoutSystemd(LocalHost):
    """This machine as the host, whose `systemctl show` says the engine's unit is stopped (no systemd here)."""

    def run(self, argv: Sequence[str], **kwargs: Any) -> Result:
        if argv and argv[0] == "systemctl":
            argv = ["printf", "ActiveState=inactive\nSubState=dead\nMainPID=0\n"]
        return super().run(argv, **kwargs)


@pytest.fixture
def host(config_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(config_dir / "state"))
    base = config_dir / "opt"
    (config_dir / "specops.toml").write_text(
        f'[hosts.llm-two]\nssh = "llm-two"\npython = "{sys.executable}"\nmodel_path = "/m"\nbase_dir = "{base}"\n\n'
        '[hosts.llm-one]\nssh = "llm-one"\npython = "/usr/bin/python3"\nmodel_path = "/m"\n\n'
        '[groups]\ngpu = ["llm-one", "llm-two"]\n'
    )
    service = base / "sglang"
    add_release(service, OLD)
    add_release(service, NEW)
    point_current(service, NEW)
    monkeypatch.setattr("specops.host.ssh.connection.connect", lambda spec: HostWithoutSystemd(spec.name))
    return service


def test_mark_then_list_then_unmark(capsys: pytest.CaptureFixture[str], host: Path) -> None:
    marked = run_cli(capsys, "releases", "llm-two", "--mark-bad", OLD, "--reason", "loops at temperature 0.7")
    assert (marked.code, marked.out.strip()) == (0, f"llm-two: {OLD} marked bad (loops at temperature 0.7)")
    table = run_cli(capsys, "releases", "llm-two")
    row = next(line for line in table.out.splitlines() if OLD in line)
    assert row.rstrip().endswith("bad: loops at temperature 0.7")
    listed = json.loads(run_cli(capsys, "releases", "llm-two", "--json").out)["releases"]
    bad = {release["id"]: release["bad"] for release in listed}
    assert bad[OLD]["reason"] == "loops at temperature 0.7" and bad[NEW] is None
    cleared = run_cli(capsys, "releases", "llm-two", "--unmark-bad", OLD, "--json")
    assert json.loads(cleared.out) == {"host": "llm-two", "release": OLD, "build": None, "bad": None}
    audit = run_cli(capsys, "audit", "llm-two")
    assert "mark-bad" in audit.out and "unmark-bad" in audit.out


def test_a_mark_without_a_reason_says_it_was_by_hand(capsys: pytest.CaptureFixture[str], host: Path) -> None:
    marked = run_cli(capsys, "releases", "llm-two", "--mark-bad", OLD)
    assert marked.out.strip() == f"llm-two: {OLD} marked bad (marked bad by hand)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("llm-two", "--mark-bad", OLD, "--unmark-bad", OLD), "--mark-bad and --unmark-bad: one of the two options"),
        (("llm-two", "--mark-bad", "../etc"), "'../etc' is not a release id"),
        (("llm-two", "--mark-bad", "20261103T000000Z-cccc"), "llm-two: no release 20261103T000000Z-cccc on the host"),
    ],
)
def test_usage_errors_exit_2_and_change_nothing(
    capsys: pytest.CaptureFixture[str], host: Path, args: tuple[str, ...], message: str
) -> None:
    result = run_cli(capsys, "releases", *args)
    assert result.code == 2, result.out + result.err
    assert message in result.err
    assert "Traceback" not in result.err
    listed = json.loads(run_cli(capsys, "releases", "llm-two", "--json").out)["releases"]
    assert all(release["bad"] is None for release in listed)


def test_a_group_mark_marks_each_host_that_has_the_release_and_names_the_one_that_has_not(
    capsys: pytest.CaptureFixture[str], host: Path
) -> None:
    """llm-two holds OLD; llm-one (another python, no such release) is an error row: exit 2, llm-two marked."""
    marked = run_cli(capsys, "releases", "gpu", "--mark-bad", OLD, "--reason", "wrong answers")
    assert marked.code == 2, marked.out + marked.err
    rows = {line.split()[0]: line for line in marked.out.splitlines()[1:3]}
    assert rows["llm-two"].split()[1:] == [OLD, "bad:", "wrong", "answers"]
    assert rows["llm-one"].split()[1] == "error"
    listed = json.loads(run_cli(capsys, "releases", "llm-two", "--json").out)["releases"]
    assert {release["id"]: (release["bad"] or {}).get("reason") for release in listed} == {OLD: "wrong answers",
                                                                                          NEW: None}  # fmt: skip


def test_prune_removes_a_dead_pushs_leftover_under_the_lock_and_keeps_current_and_the_rollback_target(
    capsys: pytest.CaptureFixture[str], host: Path, config_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import time

    monkeypatch.setattr("specops.ops.lock.DEFAULT_LOCK_ROOT", str(config_dir / "run" / "lock"))
    leftover = host / "releases" / "20261103T000000Z-cccc"
    leftover.mkdir()
    (leftover / "unfinished").touch()
    long_ago = time.time() - 3600
    for path in (leftover / "unfinished", leftover):
        os.utime(path, (long_ago, long_ago))
    pruned = run_cli(capsys, "releases", "llm-two", "--prune")
    assert (pruned.code, pruned.out.strip()) == (0, "llm-two: removed 1 release(s): 20261103T000000Z-cccc")
    assert sorted(p.name for p in (host / "releases").iterdir()) == [OLD, NEW]  # current and the rollback target
    again = run_cli(capsys, "releases", "llm-two", "--prune", "--json")
    assert json.loads(again.out) == {"host": "llm-two", "removed": []}
    assert not (config_dir / "run" / "lock").exists()  # the lock was released
    assert "pruned" in run_cli(capsys, "audit", "llm-two").out
    refused = run_cli(capsys, "releases", "gpu", "--prune")
    assert refused.code == 2 and "--prune takes one host" in refused.err
