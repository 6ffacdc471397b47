"""The engine views: one status row from the ranks' readings, the journals merged by time and tagged by rank,
the engine's verdict from the ranks' (pure: readings in, cells and lines out)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specops.cli.engine_logs import merged
from specops.cli.engine_rows import EngineReading, Selection, engine_reading, fold, rank_cell
from specops.cli.engine_status import engine_status_notes, engine_status_row
from specops.deploy.survey import Reading
from specops.errors import ExitCode
from specops.ops.journal import JournalQuery, split_timed
from specops.ops.status import HostStatus
from tests.unit.clirun import run_cli

SELECTION = Selection([], {"ds": ["ds-a", "ds-b"]})


def status(host: str, release: str, state: str = "active", health: int | None = 200) -> HostStatus:
    return HostStatus(host=host, current=release, running_release=release, uses_current=True, verified=True,
                      profile="nextn", unit={"ActiveState": state, "SubState": "running", "NRestarts": "0"},
                      health=health)  # fmt: skip


def test_one_row_shows_each_ranks_release_and_state_and_rank_0s_health() -> None:
    ranks = [Reading("ds-a", status("ds-a", "20261203-aaaa")), Reading("ds-b", status("ds-b", "20261203-bbbb",
                                                                                    "failed", None))]  # fmt: skip
    row = engine_status_row(EngineReading(ranks))
    assert row[1] == "0:20261203-aaaa,1:20261203-bbbb"
    assert row[2] == "nextn" and row[6] == "200"
    assert row[4] == "0:active/running,1:failed/running"


def test_an_unreachable_rank_shows_in_the_row_and_its_error_below() -> None:
    ranks = [Reading("ds-a", status("ds-a", "r1")), Reading("ds-b", None, ExitCode.UNREACHABLE, "ds-b: timed out")]
    value = EngineReading(ranks)
    assert engine_status_row(value)[1] == "0:r1,1:unreachable"
    assert engine_status_notes(value) == ["rank 1 (ds-b): ds-b: timed out"]
    assert engine_reading("ds", ranks).exit_code == ExitCode.UNREACHABLE


def test_fold_puts_the_engine_where_its_first_rank_was() -> None:
    readings = {name: Reading(name, status(name, "r")) for name in ("solo", "ds-a", "ds-b")}
    folded = fold(readings, SELECTION, lambda ranks: engine_reading("ds", ranks))
    assert list(folded) == ["solo", "ds"]
    assert rank_cell(["x", "x"]) == "x" and rank_cell(["x", "x"], always=True) == "0:x,1:x"


def test_journals_merge_by_time_each_line_tagged_with_its_rank() -> None:
    rank0 = ["1764780000.100000 ds-a python[12]: loading", "1764780002.000000 ds-a python[12]: Timed out", "  more"]
    rank1 = ["1764780001.000000 ds-b python[40]: NCCL error: unhandled system error"]
    lines = merged([("ds-a", rank0), ("ds-b", rank1)], SELECTION)
    assert [(line.tag, line.text) for line in lines] == [
        ("r0 ds-a", "loading"), ("r1 ds-b", "NCCL error: unhandled system error"), ("r0 ds-a", "Timed out"),
        ("r0 ds-a", "more"),
    ]  # fmt: skip


def test_grep_on_timed_lines_matches_the_message_not_the_header() -> None:
    query = JournalQuery(grep="^Timed", timed=True)
    assert query.keep(["1764780002.000000 ds-a python[12]: Timed out", "1.0 h x[1]: loading"]) == [
        "1764780002.000000 ds-a python[12]: Timed out"]  # fmt: skip
    assert split_timed("not a header") == (None, "not a header")


def test_a_bad_grep_on_an_engine_is_a_usage_error_before_anything_connects(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """`logs` with a bad --grep on an engine is still a usage error before anything connects."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specops.toml").write_text(
        '[hosts.ds-a]\nssh = "root@ds-a"\npython = "/usr/bin/python3"\nmodel_path = "/m"\n'
        '[hosts.ds-b]\nssh = "root@ds-b"\npython = "/usr/bin/python3"\nmodel_path = "/m"\n'
        '[engines.ds]\nhosts = ["ds-a", "ds-b"]\ntp_size = 2\n'
    )
    result = run_cli(capsys, "logs", "ds", "--grep", "(")
    assert result.code == 2 and "--grep '('" in result.err, result


TOML = (
    '[hosts.ds-a]\nssh = "root@ds-a"\npython = "/usr/bin/python3"\nmodel_path = "/m"\n'
    '[hosts.ds-b]\nssh = "root@ds-b"\npython = "/usr/bin/python3"\nmodel_path = "/m"\n'
    '[hosts.solo]\nssh = "root@solo"\npython = "/usr/bin/python3"\nmodel_path = "/m"\n'
    '[engines.ds]\nhosts = ["ds-a", "ds-b"]\ntp_size = 2\n[groups]\nfleet = ["ds", "solo"]\nplain = ["solo"]\n'
)


def test_engines_are_found_by_name_through_groups_and_with_all(tmp_path: Path) -> None:
    from specops.cli.engine_rows import engine_selection
    from specops.config.loader import load_config

    (tmp_path / "specops.toml").write_text(TOML)
    config = load_config(tmp_path / "specops.toml", tmp_path)
    for names, everything in ((["ds"], False), (["fleet"], False), ([], True)):
        found = engine_selection(config, names, everything)
        assert found is not None and found.engines == {"ds": ["ds-a", "ds-b"]}, names
        assert found.rank_of("ds-b") == ("ds", 1) and found.rank_of("solo") is None
    assert [spec.name for spec in engine_selection(config, ["fleet"], False).specs] == ["ds-a", "ds-b", "solo"]  # type: ignore[union-attr]
    assert engine_selection(config, ["plain"], False) is None and engine_selection(config, ["ds-a"], False) is None


def test_the_engines_verdict_names_the_failed_ranks_and_puts_a_real_cause_first() -> None:
    from types import SimpleNamespace
    from typing import cast

    from specops.cli.engine_diagnose import engine_verdict
    from specops.diagnose.verdict import Verdict

    def verdict(host: str, kind: str, headline: str) -> Verdict:
        return cast(Verdict, SimpleNamespace(kind=kind, headline=headline, case=SimpleNamespace(host=host)))

    calm = [verdict("ds-a", "no failure", "fine"), verdict("ds-b", "no failure", "fine")]
    assert engine_verdict("ds", calm)["verdict"] == "no failure"
    found = engine_verdict("ds", [verdict("ds-a", "nothing changed", "rank 0 timed out waiting for clients"),
                                  verdict("ds-b", "environment drift", "environment drift: NCCL 2.21 -> 2.27")])  # fmt: skip
    assert found["verdict"] == "environment drift" and found["ranks"] == [0, 1]
    assert found["headline"] == ("rank 0 (ds-a), rank 1 (ds-b) failed; likely cause on rank 1 (ds-b): "
                                 "environment drift: NCCL 2.21 -> 2.27")  # fmt: skip


def test_only_takes_engine_check_ids_and_refuses_a_misspelt_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from specops.cli.cmd_doctor import _chosen_checks

    assert _chosen_checks("engine.dist_reach") == ([], {"engine.dist_reach"})
    host_checks, engine = _chosen_checks("engine,torchcodec")
    assert engine == {"engine"} and host_checks and all(c.id.startswith("torchcodec.") for c in host_checks)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specops.toml").write_text(TOML)
    result = run_cli(capsys, "doctor", "ds", "--only", "engine.dist_prot")
    assert result.code == 2 and "unknown check(s): engine.dist_prot" in result.err, result


def test_logs_follow_prints_the_merged_first_screen_then_each_new_batch_tagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from collections.abc import Iterator

    from specops.ops.journal import HostLines

    def fleet(specs: object, opener: object, query: JournalQuery, follow: bool) -> Iterator[HostLines]:
        assert query.timed and follow
        yield HostLines("ds-b", ["20.0 ds-b python[2]: worker up"], first=True)
        yield HostLines("ds-a", ["10.0 ds-a python[1]: store up", "30.0 ds-a python[1]: serving"], first=True)
        yield HostLines("ds-b", ["40.0 ds-b python[2]: NCCL error: unhandled system error"])

    monkeypatch.setattr("specops.ops.journal.journal_fleet", fleet)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specops.toml").write_text(TOML)
    result = run_cli(capsys, "logs", "ds", "-f")
    assert result.code == 0, result
    assert result.out.splitlines()[:4] == ["r0 ds-a | store up", "r1 ds-b | worker up", "r0 ds-a | serving",
                                           "r1 ds-b | NCCL error: unhandled system error"]  # fmt: skip


def test_smoke_takes_a_rank_named_by_its_host_as_its_engine_smoked_through_rank_0(tmp_path: Path) -> None:
    """A worker serves no HTTP: `smoke ds-b` (or a list naming it) smokes engine ds through rank 0, once."""
    from specops.cli.cmd_smoke import _single_target, fleet_targets
    from specops.config.loader import load_config

    (tmp_path / "specops.toml").write_text(TOML)
    config = load_config(tmp_path / "specops.toml", tmp_path)
    found = _single_target(config, ["ds-b"], False, "nextn")
    assert found is not None and (found[0].host.name, found[1], found[2]) == (
        "ds-a", "ds (rank 0: ds-a); ds-b is one of its ranks", "ds")  # fmt: skip
    assert found[0].rank is not None and found[0].rank.serves_http
    assert [_single_target(config, [name], False, "nextn")[1:] for name in ("ds-a", "ds", "solo")] == [  # type: ignore[index]
        ("ds (rank 0: ds-a)", "ds"), ("ds (rank 0: ds-a)", "ds"), ("solo", None)]  # fmt: skip
    assert _single_target(config, ["plain"], False, "nextn") is None
    rows = fleet_targets(config, ["ds-b", "solo", "ds-a"], False, "nextn")
    assert {host: (row, target.host.name) for host, (row, target) in rows.items()} == {
        "solo": ("solo", "solo"), "ds-a": ("ds", "ds-a")}  # fmt: skip


def test_diff_of_an_engine_takes_no_second_host_and_says_so_before_connecting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specops.toml").write_text(TOML)
    result = run_cli(capsys, "diff", "ds", "solo")
    assert result.code == 2, result
    assert "error: 'ds' is a multi-node engine: `specops diff ds` compares its ranks with rank 0" in result.err
