"""What the summaries say serves at the end: read from the host, a failed rollback's own outcome and exit code,
a host that went silent mid-deploy, a canary that is only locked, and an interrupted fleet's summary so far."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from specops.config.loader import load_config
from specops.deploy.fleet import FLEET_OUTCOMES, FleetOptions, fleet_exit_code, run_fleet
from specops.deploy.outcome import HostOutcome, Outcome
from specops.deploy.plan import HostPlan, plan_host
from specops.deploy.rollback import RollbackResult
from specops.deploy.serving import Serving, lost_line
from specops.errors import EXIT_CODE_MEANINGS, ExitCode, LockHeld, RemoteTimeout
from specops.ops.interrupts import Interrupted

NOON = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
HOSTS = ["a", "b", "c"]


@pytest.fixture
def plans(tmp_path: Path) -> list[HostPlan]:
    blocks = [
        f'[hosts.{name}]\nssh = "{name}"\npython = "/usr/bin/python3"\nmodel_path = "/m/t"\nprofile = "nextn"\n'
        for name in HOSTS
    ]
    (tmp_path / "specops.toml").write_text("\n".join(blocks))
    config = load_config(tmp_path / "specops.toml", tmp_path)
    return [plan_host(config, name, None) for name in HOSTS]


def test_the_serving_line_says_release_verified_and_engine_as_read() -> None:
    assert Serving("r2", True, True).line() == "serving r2 (verified, engine active)"
    assert Serving("r2", False, True).line() == "serving r2 (NOT verified, engine active)"
    assert Serving("r2", True, False).line() == "NOTHING SERVES: r2 is current (verified) but its engine is not running"
    assert Serving(None, False, False).line() == "NOTHING SERVES: no release is current"


def test_a_failed_rollback_is_its_own_outcome_with_its_own_exit_code_and_says_nothing_serves() -> None:
    outcome = HostOutcome("h1", Outcome.FAILED, ExitCode.CHECKS_FAILED, release="r2", attempted="r2", previous="r1")
    outcome.rolled_back(RollbackResult(False, "r2", "r1", None, error="readiness: libtorchcodec failed", stopped=True))
    assert (outcome.outcome, outcome.exit_code, outcome.release) == ("rollback-failed", ExitCode.ROLLBACK_FAILED, None)
    assert outcome.final_line() == ("h1: NOTHING SERVES: the rollback to r1 failed (readiness: libtorchcodec failed); "
                                    "`specops logs h1` shows why")  # fmt: skip
    assert outcome.to_json()["now"] == outcome.final_line()
    assert int(ExitCode.ROLLBACK_FAILED) == 7 and "no verified release serves" in EXIT_CODE_MEANINGS[ExitCode(7)]
    assert fleet_exit_code({"h1": outcome, "h2": HostOutcome("h2", Outcome.ERROR, ExitCode.REMOTE_FAILED)}) == 7


def test_a_clean_rollback_names_what_serves_and_keeps_its_outcome() -> None:
    outcome = HostOutcome("h1", Outcome.FAILED, ExitCode.CHECKS_FAILED, release="r2", attempted="r2", previous="r1")
    outcome.rolled_back(RollbackResult(True, "r2", "r1", None, stopped=True))
    assert (outcome.outcome, outcome.release, outcome.final_line()) == ("rolled-back", "r1", "")
    outcome.serving = Serving("r1", True, True)
    assert outcome.final_line() == "h1: serving r1 (verified, engine active)"


def test_a_host_lost_after_the_switch_names_the_phase_the_guard_target_and_its_deadline() -> None:
    line = lost_line("h1", "gates", "r2", "r1", switched=True, previous="r1", now=NOON)
    assert line == ("connection lost during the gates phase: r2 is unverified; the host-side guard rolls back to r1 "
                    "by 12:01:45 UTC (within 105 s), once the lock's heartbeat is stale")  # fmt: skip
    before = lost_line("h1", "push", "r2", None, switched=False, previous="r1", now=NOON)
    assert before == "connection lost during the push phase, before `current` was switched: r1 is still current " \
                     "(not read again)"  # fmt: skip
    unguarded = lost_line("h1", "gates", "r2", None, switched=True, previous="r1", now=NOON)
    assert "no rollback guard is armed" in unguarded and "`specops status h1`" in unguarded


def test_a_lost_host_in_a_fleet_is_not_said_to_serve_its_unverified_release(plans: list[HostPlan]) -> None:
    def run(host_plan: HostPlan) -> HostOutcome:
        partial = HostOutcome(host_plan.name, Outcome.ERROR, release="r2", attempted="r2", previous="r1")
        partial.guard_to = "r1"
        partial.after = partial.lost("gates")
        error = RemoteTimeout("journalctl -n 1", 30, host=host_plan.name)
        error.host_outcome = partial  # type: ignore[attr-defined]  # as deploy_host attaches it
        raise error

    results = run_fleet(plans[:1], run, FleetOptions())
    assert (results["a"].outcome, results["a"].release) == ("error", None)
    assert results["a"].final_line().startswith("a: connection lost during the gates phase: r2 is unverified; ")


def _locking(locked: set[str], calls: list[str]):  # type: ignore[no-untyped-def]
    def run(host_plan: HostPlan) -> HostOutcome:
        calls.append(host_plan.name)
        if host_plan.name in locked:
            raise LockHeld(f"{host_plan.name}: locked by deploy bob@ci pid 7 for 2 min")
        return HostOutcome(host_plan.name, Outcome.DEPLOYED)

    return run


def test_a_locked_canary_is_locked_not_failed_and_the_next_host_is_the_canary(plans: list[HostPlan]) -> None:
    calls: list[str] = []
    results = run_fleet(plans, _locking({"a"}, calls), FleetOptions(canary=1))
    assert calls == ["a", "b", "c"]
    assert [results[name].outcome for name in HOSTS] == ["locked", "deployed", "deployed"]
    assert results["a"].cause == "a: locked by deploy bob@ci pid 7 for 2 min (not a failed canary: b is the canary in " \
                                 "its place)"  # fmt: skip
    assert fleet_exit_code(results) == ExitCode.LOCK_HELD


def test_a_locked_host_after_the_canary_skips_no_other_host(plans: list[HostPlan]) -> None:
    results = run_fleet(plans, _locking({"b"}, []), FleetOptions(canary=1, max_fail_percent=0))
    assert [results[name].outcome for name in HOSTS] == ["deployed", "locked", "deployed"]


def test_every_host_locked_leaves_none_to_be_the_canary(plans: list[HostPlan]) -> None:
    results = run_fleet(plans[:1], _locking({"a"}, []), FleetOptions(canary=1))
    assert results["a"].cause.endswith("(not a failed canary: no host is left to be the canary)")


def test_an_interrupted_fleet_carries_each_hosts_outcome_so_far(plans: list[HostPlan]) -> None:
    def run(host_plan: HostPlan) -> HostOutcome:
        if host_plan.name == "b":
            partial = HostOutcome("b", Outcome.ERROR, release="r2", attempted="r2", previous="r1")
            partial.after = "b: r2 is unverified: the host-side guard rolls back to r1 by 12:00:15 UTC (within 15 s)"
            interruption = Interrupted(15)
            interruption.host_outcome = partial  # type: ignore[attr-defined]
            raise interruption
        return HostOutcome(host_plan.name, Outcome.DEPLOYED)

    with pytest.raises(KeyboardInterrupt) as raised:
        run_fleet(plans, run, FleetOptions(canary=1))
    so_far = getattr(raised.value, FLEET_OUTCOMES)
    assert [so_far[name].outcome for name in HOSTS] == ["deployed", "interrupted", "skipped"]
    assert (so_far["b"].exit_code, so_far["b"].cause) == (ExitCode.TERMINATED, "interrupted (SIGTERM)")
    assert so_far["b"].final_line().endswith("rolls back to r1 by 12:00:15 UTC (within 15 s)")
    assert so_far["c"].cause == "interrupted before it started"


def test_the_summary_ends_each_host_with_what_serves(capsys: pytest.CaptureFixture[str]) -> None:
    from specops.cli.deploy_view import print_summary

    good = HostOutcome("h1", Outcome.DEPLOYED, release="r2", attempted="r2", serving=Serving("r2", True, True))
    failed = HostOutcome("h2", Outcome.FAILED, ExitCode.CHECKS_FAILED, attempted="r2", previous="r1")
    failed.rolled_back(RollbackResult(False, "r2", "r1", None, error="its gates failed", stopped=True))
    print_summary({"h1": good, "h2": failed})
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:3] for line in out.splitlines()[1:3]}
    assert rows == {"h1": ["deployed", "r2"], "h2": ["rollback-failed", "-"]}
    assert out.splitlines()[-1].startswith("h2: NOTHING SERVES: the rollback to r1 failed (its gates failed)")
    assert "h1: serving r2 (verified, engine active)" in out.splitlines()


def test_an_interrupted_fleet_deploy_prints_the_summary_so_far_then_goes_on_interrupted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from specops.cli.cmd_deploy import _summary_when_interrupted

    done = HostOutcome("a", Outcome.DEPLOYED, release="r2", attempted="r2", serving=Serving("r2", True, True))
    cut = HostOutcome("b", Outcome.INTERRUPTED, ExitCode.INTERRUPTED, attempted="r2", cause="interrupted (SIGINT)")
    cut.after = "b: r2 is unverified: the host-side guard rolls back to r1 by 12:00:15 UTC (within 15 s)"
    never = HostOutcome("c", Outcome.SKIPPED, ExitCode.CHECKS_FAILED, cause="interrupted before it started")
    interruption = KeyboardInterrupt()
    setattr(interruption, FLEET_OUTCOMES, {"a": done, "b": cut, "c": never})
    with pytest.raises(KeyboardInterrupt), _summary_when_interrupted(fleet=True):
        raise interruption
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:4]}
    assert rows == {"a": "deployed", "b": "interrupted", "c": "skipped"}
    assert "b: r2 is unverified: the host-side guard rolls back to r1 by 12:00:15 UTC (within 15 s)" in out
    assert "c: interrupted before it started" in out
    with pytest.raises(KeyboardInterrupt), _summary_when_interrupted(fleet=False):  # one host: the error says it
        raise interruption
    assert capsys.readouterr().out == ""


def test_an_interrupted_parallel_batch_keeps_the_outcome_of_every_host_that_finished(plans: list[HostPlan]) -> None:
    def run(host_plan: HostPlan) -> HostOutcome:
        if host_plan.name == "b":
            raise Interrupted(2)
        return HostOutcome(host_plan.name, Outcome.DEPLOYED)

    with pytest.raises(KeyboardInterrupt) as raised:
        run_fleet(plans, run, FleetOptions(canary=1, parallel=2))
    so_far = getattr(raised.value, FLEET_OUTCOMES)
    assert [so_far[name].outcome for name in HOSTS] == ["deployed", "interrupted", "deployed"]
    assert so_far["b"].exit_code == ExitCode.INTERRUPTED
