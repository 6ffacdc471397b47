"""The fleet runner's rules: canary first, failure budget, per-host outcomes, the fleet's exit code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specops.config.loader import load_config
from specops.deploy.fleet import FleetOptions, fleet_exit_code, run_fleet
from specops.deploy.outcome import HostOutcome, Outcome
from specops.deploy.plan import HostPlan, plan_host
from specops.errors import ConnectError, ExitCode, LockHeld

HOSTS = ["a", "b", "c", "d"]


@pytest.fixture
def plans(tmp_path: Path) -> list[HostPlan]:
    blocks = [
        f'[hosts.{name}]\nssh = "{name}"\npython = "/usr/bin/python3"\nmodel_path = "/m/t"\nprofile = "nextn"\n'
        for name in HOSTS
    ]
    path = tmp_path / "specops.toml"
    path.write_text("\n".join(blocks))
    config = load_config(path, tmp_path)
    return [plan_host(config, name, None) for name in HOSTS]


def _runner(failing: set[str], calls: list[str], error: Exception | None = None):  # type: ignore[no-untyped-def]
    def run(host_plan: HostPlan) -> HostOutcome:
        calls.append(host_plan.name)
        if error is not None and host_plan.name in failing:
            raise error
        if host_plan.name in failing:
            return HostOutcome(host_plan.name, Outcome.ROLLED_BACK, ExitCode.CHECKS_FAILED, cause="smoke gate failed")
        return HostOutcome(host_plan.name, Outcome.DEPLOYED)

    return run


def test_failing_canary_skips_every_other_host(plans: list[HostPlan]) -> None:
    calls: list[str] = []
    results = run_fleet(plans, _runner({"a"}, calls), FleetOptions(canary=1, parallel=2))
    assert calls == ["a"]
    assert [results[name].outcome for name in HOSTS] == ["rolled-back", "skipped", "skipped", "skipped"]
    assert results["b"].cause == "the canary a failed"
    assert fleet_exit_code(results) == ExitCode.CHECKS_FAILED


def test_failure_budget_stops_new_batches(plans: list[HostPlan]) -> None:
    calls: list[str] = []
    results = run_fleet(plans, _runner({"b"}, calls), FleetOptions(canary=1, parallel=1, max_fail_percent=0))
    assert calls == ["a", "b"]
    assert results["c"].outcome == results["d"].outcome == "skipped"
    assert "too many hosts failed" in results["c"].cause


def test_within_budget_all_hosts_run(plans: list[HostPlan]) -> None:
    calls: list[str] = []
    results = run_fleet(plans, _runner({"b"}, calls), FleetOptions(parallel=2, max_fail_percent=50))
    assert sorted(calls) == HOSTS
    assert [results[name].outcome for name in HOSTS] == ["deployed", "rolled-back", "deployed", "deployed"]


def test_unreachable_and_locked_hosts_become_outcomes_with_their_exit_codes(plans: list[HostPlan]) -> None:
    unreachable = run_fleet(plans[:1], _runner({"a"}, [], ConnectError("a: connection refused")), FleetOptions())
    assert (unreachable["a"].outcome, unreachable["a"].exit_code) == ("unreachable", ExitCode.UNREACHABLE)
    locked = run_fleet(plans[:1], _runner({"a"}, [], LockHeld("a: locked by x@y")), FleetOptions())
    assert (locked["a"].outcome, locked["a"].exit_code) == ("locked", ExitCode.LOCK_HELD)
    assert fleet_exit_code({**unreachable, "b": locked["a"]}) == ExitCode.UNREACHABLE
    assert fleet_exit_code({"a": HostOutcome("a", Outcome.UNCHANGED)}) == ExitCode.OK


def test_a_host_whose_deploy_raises_still_ends_with_a_done_event(plans: list[HostPlan]) -> None:
    """The live view drops a host's row on its `done` event; a host that cannot even connect must send one too,
    and the error still reaches the fleet runner (which turns it into the host's outcome)."""
    from specops.deploy.execute import deploy_host
    from specops.deploy.plan import DeployOptions, DeployPlan
    from specops.events import DONE_PHASE, Recorder

    def unreachable() -> Any:
        raise ConnectError("a: cannot connect to a:22: Connection refused")

    recorder = Recorder()
    plan = DeployPlan(staged=None, hosts=plans[:1])  # type: ignore[arg-type]  # never reached: no connection
    with pytest.raises(ConnectError):
        deploy_host(plan, plans[0], DeployOptions(), recorder, unreachable, lambda _name: plans[0].target.profile)
    last = recorder.events[-1]
    assert (last.host, last.phase, last.message, last.level) == (
        "a",
        DONE_PHASE,
        "stopped: a host could not be reached over SSH",
        "error",
    )


def test_a_lost_lock_is_its_own_outcome_with_the_lock_exit_code(plans: list[HostPlan]) -> None:
    from specops.deploy.execute import LockLost

    lost = run_fleet(plans[:1], _runner({"a"}, [], LockLost("a: lost the lock")), FleetOptions())
    assert (lost["a"].outcome, lost["a"].exit_code, lost["a"].cause) == ("lock-lost", ExitCode.LOCK_HELD,
                                                                          "a: lost the lock")  # fmt: skip
    assert lost["a"].to_json()["outcome"] == "lock-lost"


def test_a_canary_failed_on_its_host_still_stops_the_fleet_and_the_skipped_hosts_say_the_release_was_not_judged(
    plans: list[HostPlan],
) -> None:
    """An environment fault on the canary is often the whole fleet's (the same image): the others are not started,
    but what they say does not blame the release."""
    calls: list[str] = []

    def run(host_plan: HostPlan) -> HostOutcome:
        calls.append(host_plan.name)
        return HostOutcome(host_plan.name, Outcome.ROLLED_BACK, ExitCode.CHECKS_FAILED, culprit="host",
                           cause="readiness: torchcodec cannot load its FFmpeg libraries")  # fmt: skip

    results = run_fleet(plans, run, FleetOptions(canary=1, parallel=2))
    assert calls == ["a"]
    assert [results[name].outcome for name in HOSTS] == ["rolled-back", "skipped", "skipped", "skipped"]
    assert results["c"].cause == "the canary a failed on its host, not on the release: the release was not judged"
    assert results["a"].to_json()["culprit"] == "host" and results["c"].to_json()["culprit"] is None
