"""A group holding engines and hosts: each engine is ONE member of the fleet (one row, one canary, one unit of
--parallel, one failure against --max-fail-percent), its ranks deployed side by side with the engine's run."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from specops.config.loader import load_config
from specops.deploy.engine_plan import engine_lines
from specops.deploy.engine_run import EngineRun
from specops.deploy.fleet import FleetOptions, fleet_exit_code
from specops.deploy.fleet_members import MemberFleet
from specops.deploy.members import Member, make_member_plan
from specops.deploy.outcome import HostOutcome, Outcome
from specops.deploy.plan import DeployPlan, HostPlan
from specops.errors import ExitCode
from tests.testbed.engine import BUILD_PYTHON
from tests.unit.engines.test_engine_config import BASE, ENGINE

SPARE = '\n[hosts.spare]\nssh = "root@spare"\n'
GROUPS = '\n[groups]\nfleet = ["spare", "ds", "solo"]\n'


def _plan(config_dir: Path) -> tuple[DeployPlan, list[Member]]:
    (config_dir / "specops.toml").write_text(BASE + SPARE + ENGINE + GROUPS)
    config = load_config(config_dir / "specops.toml", config_dir)
    return make_member_plan(config, ["fleet"], None, BUILD_PYTHON, [], config_dir / "work", lambda _: "10.1.0.11")


@pytest.fixture
def members(config_dir: Path) -> list[Member]:
    plan, found = _plan(config_dir)
    assert [host.name for host in plan.hosts] == ["ds-a", "ds-b", "solo", "spare"]
    return found


def test_the_dry_run_names_the_engine_and_its_ranks_among_the_hosts(config_dir: Path) -> None:
    plan, _ = _plan(config_dir)
    release = plan.hosts[0].release_id
    assert engine_lines(plan)[0] == f"engine ds: 2 ranks (rank 0: ds-a, rank 1: ds-b), release {release} on every rank"


class Runs:
    """A deploy per host: `failing` hosts roll back; each call notes its host and its engine's run (if a rank)."""

    def __init__(self, failing: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.failing, self.calls, self.lock = failing, list[tuple[str, str | None]](), threading.Lock()

    def __call__(self, host_plan: HostPlan, engine: EngineRun | None) -> HostOutcome:
        with self.lock:
            self.calls.append((host_plan.name, engine.engine if engine else None))
        if host_plan.name in self.failing:
            return HostOutcome(host_plan.name, Outcome.ROLLED_BACK, ExitCode.CHECKS_FAILED, cause="smoke gate failed")
        return HostOutcome(host_plan.name, Outcome.DEPLOYED, release="r1", attempted="r1")


def test_members_come_in_inventory_order_an_engine_where_its_rank_0_stands(members: list[Member]) -> None:
    assert [(m.name, m.engine, [h.name for h in m.hosts]) for m in members] == [
        ("ds", True, ["ds-a", "ds-b"]), ("solo", False, ["solo"]), ("spare", False, ["spare"])
    ]  # fmt: skip
    ranks = members[0].hosts
    assert ranks[0].release_id is not None and ranks[0].release_id == ranks[1].release_id
    assert "--node-rank 1" in ranks[1].unit_text and members[1].hosts[0].release_id is None


def test_an_engine_is_one_row_with_its_ranks_deployed_together(members: list[Member]) -> None:
    runs = Runs()
    fleet = MemberFleet(members, runs, None)
    hosts = fleet.run(FleetOptions())
    assert sorted(runs.calls) == [("ds-a", "ds"), ("ds-b", "ds"), ("solo", None), ("spare", None)]
    assert list(fleet.members) == ["ds", "solo", "spare"]  # the summary's rows
    assert fleet.members["ds"].outcome is Outcome.DEPLOYED and fleet.members["ds"].release == "r1"
    assert list(hosts) == ["ds-a", "ds-b", "solo", "spare"]  # --json, the audit, notifications: every host
    assert fleet.engines() == {"ds": ["ds-a", "ds-b"]}


def test_an_engine_is_one_canary_and_a_failed_rank_fails_it(members: list[Member]) -> None:
    runs = Runs(failing={"ds-b"})
    fleet = MemberFleet(members, runs, None)
    hosts = fleet.run(FleetOptions(canary=1, parallel=2))
    assert sorted(name for name, _ in runs.calls) == ["ds-a", "ds-b"]  # both ranks ran as the one canary
    engine = fleet.members["ds"]
    assert (engine.outcome, engine.exit_code) == (Outcome.ROLLED_BACK, ExitCode.CHECKS_FAILED)
    assert engine.cause == "rank 1 (ds-b): smoke gate failed"
    assert [hosts[name].outcome for name in ("solo", "spare")] == [Outcome.SKIPPED, Outcome.SKIPPED]
    assert hosts["solo"].cause == "the canary ds failed"
    assert fleet_exit_code(hosts) == ExitCode.CHECKS_FAILED


def test_a_passing_engine_canary_lets_the_hosts_go_on(members: list[Member]) -> None:
    runs = Runs()
    MemberFleet(members, runs, None).run(FleetOptions(canary=1))
    assert [name for name, _ in runs.calls][2:] == ["solo", "spare"]  # after both ranks: one canary, not two


def test_a_failed_engine_counts_once_against_the_failure_budget(members: list[Member]) -> None:
    """Both ranks fail: one member of three is 33%, within 40%, so the hosts still deploy."""
    runs = Runs(failing={"ds-a", "ds-b"})
    fleet = MemberFleet(members, runs, None)
    hosts = fleet.run(FleetOptions(max_fail_percent=40))
    assert hosts["solo"].outcome is hosts["spare"].outcome is Outcome.DEPLOYED
    stopped = MemberFleet(members, Runs(failing={"ds-a", "ds-b"}), None)
    assert stopped.run(FleetOptions(max_fail_percent=30))["solo"].outcome is Outcome.SKIPPED


def test_an_engine_skipped_leaves_every_rank_skipped_with_the_reason(members: list[Member]) -> None:
    reordered = [members[1], members[0], members[2]]  # solo first, as the canary
    hosts = MemberFleet(reordered, Runs(failing={"solo"}), None).run(FleetOptions(canary=1))
    assert hosts["ds-a"].outcome is hosts["ds-b"].outcome is Outcome.SKIPPED
    assert hosts["ds-b"].cause == "the canary solo failed"


def test_an_engine_blames_its_hosts_only_when_every_failed_rank_does() -> None:
    from specops.deploy.fleet_members import engine_outcome

    def rank(host: str, culprit: str, ok: bool = False) -> HostOutcome:
        if ok:
            return HostOutcome(host, Outcome.DEPLOYED)
        return HostOutcome(host, Outcome.ROLLED_BACK, ExitCode.CHECKS_FAILED, cause="gates failed", culprit=culprit)

    assert engine_outcome("ds", {"ds-a": rank("ds-a", "host"), "ds-b": rank("ds-b", "host")}).culprit == "host"
    assert engine_outcome("ds", {"ds-a": rank("ds-a", "", ok=True), "ds-b": rank("ds-b", "host")}).culprit == "host"
    assert engine_outcome("ds", {"ds-a": rank("ds-a", "host"), "ds-b": rank("ds-b", "build")}).culprit == "build"
    assert engine_outcome("ds", {"ds-a": rank("ds-a", "host"), "ds-b": rank("ds-b", "")}).culprit == ""
