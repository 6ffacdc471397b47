"""The dist port test in a multi-node engine's deploy (specops/deploy/engine_steps.py `_dist_port`): planned as a
step of its own after the preflight (what `--dry-run` shows is what runs), run by every rank at once, and a
problem on any rank fails every rank, naming the port, the ranks and their hosts, before anything stops."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

import pytest

from specops.commands.dist_port import dist_port_argv
from specops.config.inventory import HostSpec
from specops.deploy.engine_commands import DIST_PORT, dist_port_step
from specops.deploy.engine_run import EngineRun
from specops.deploy.engine_steps import EngineSteps
from specops.deploy.outcome import HostOutcome, Outcome
from specops.deploy.steps import Action, Condition, Handler, HostSteps
from specops.events import Recorder
from specops.host.recording import RecordingHost, reply

HOSTS = ["ds-a", "ds-b"]
ADDR = "10.1.0.11:5000"
PYTHON = "/opt/venv/bin/python"
UNREACHABLE = {"connected": False, "error": "ENETUNREACH: Network is unreachable"}


def _spec(name: str) -> HostSpec:
    return HostSpec(name=name, ssh=name, python=PYTHON, model_path="/m")


@dataclass
class _Options:
    engine: EngineRun | None
    skip_checks: tuple[str, ...] = ()
    force: bool = False


@dataclass
class _Rank(EngineSteps):
    """One rank's deploy state, as the deploy of one host holds it, with a scripted host."""

    options: _Options  # type: ignore[assignment]
    host: RecordingHost  # type: ignore[assignment]
    spec: HostSpec
    reporter: Recorder = field(default_factory=Recorder)
    checks_ok: bool = True

    def __post_init__(self) -> None:
        self.outcome = HostOutcome(host=self.spec.name, outcome=Outcome.DEPLOYED)
        self.steps = HostSteps(host=self.spec.name, profile="p", action=Action.DEPLOY, reason="", current=None,
                               release="r1", rollback_to=None, guard=False, push=None, unit_changed=False,
                               unit_diff="")  # fmt: skip


def _answers(rank0: dict[str, object], rank1: dict[str, object], **options: object) -> list[_Rank]:
    """Both ranks run their planned dist-port step at once, each host answering as the script would."""
    run = EngineRun("ds", HOSTS, dist_init_addr=ADDR)
    ranks = []
    for index, said in enumerate((rank0, rank1)):
        host = RecordingHost(name=HOSTS[index]).script([PYTHON, "-I", "-S", "-c"], reply(json.dumps(said) + "\n"))
        ranks.append(_Rank(_Options(run, **options), host, _spec(HOSTS[index])))  # type: ignore[arg-type]
    steps = [dist_port_step(rank.spec, index, 2, ADDR, ranks[index].options.skip_checks) for index, rank in
             enumerate(ranks)]  # fmt: skip
    threads = [threading.Thread(target=rank._dist_port, args=(step,)) for rank, step in zip(ranks, steps, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    for rank, step in zip(ranks, steps, strict=True):
        assert step is not None
        assert rank.host.commands == [command.argv for command in step.part(DIST_PORT)]  # the planned command
    return ranks


def test_the_step_is_planned_after_the_checks_with_each_ranks_own_side() -> None:
    listen, connect = (dist_port_step(_spec(host), index, 2, ADDR, ()) for index, host in enumerate(HOSTS))
    assert listen is not None and connect is not None
    assert (listen.handler, listen.when) == (Handler.DIST_PORT, Condition.CHECKS_PASS)
    assert listen.commands[0].argv == tuple(dist_port_argv(PYTHON, 0, 2, ADDR))
    assert listen.commands[0].argv[-4:] == ("listen", "5000", "20.0", "1")
    assert connect.commands[0].argv[-4:] == ("connect", "10.1.0.11", "5000", "15.0")
    assert "a problem on any rank stops every rank here, nothing stopped" in connect.summary


def test_skip_check_leaves_a_side_out_or_the_whole_step() -> None:
    half = dist_port_step(_spec("ds-b"), 1, 2, ADDR, ("engine.dist_reach",))
    assert half is not None and half.summary.endswith("skipped: engine.dist_reach")
    assert dist_port_step(_spec("ds-b"), 1, 2, ADDR, ("engine.dist_port", "engine.dist_reach")) is None


def test_a_worker_that_cannot_connect_fails_every_rank_naming_the_port_and_its_host() -> None:
    ranks = _answers({"bound": True, "accepted": []}, UNREACHABLE)
    line = "rank 1 (ds-b) cannot connect to rank 0 (ds-a) at 10.1.0.11:5000: ENETUNREACH: Network is unreachable"
    for rank in ranks:
        assert rank.checks_ok is False
        assert (rank.outcome.outcome, int(rank.outcome.exit_code)) == (Outcome.PREFLIGHT_FAILED, 1)
        assert rank.outcome.cause == f"engine ds: {line}; nothing was stopped on any rank: every rank serves as before"


def test_a_port_held_by_another_unit_is_named_with_its_holder() -> None:
    squatted = {"bound": False, "error": "EADDRINUSE", "holder": "pid 566 python", "unit": "squatter.service"}
    ranks = _answers(squatted, {"connected": True})
    for rank in ranks:
        assert rank.outcome.cause is not None
        assert rank.outcome.cause.startswith(
            "engine ds: dist port 5000 on rank 0 (ds-a) is held by pid 566 python (squatter.service), not by "
            "sglang.service;"
        ), rank.outcome.cause


def test_the_engines_own_listener_passes_and_a_skipped_side_is_not_judged() -> None:
    own = {"bound": False, "error": "EADDRINUSE", "holder": "pid 9 python", "unit": "sglang.service"}
    assert all(rank.checks_ok for rank in _answers(own, {"connected": True}))
    assert all(rank.checks_ok for rank in _answers(own, UNREACHABLE, skip_checks=("engine.dist_reach",)))


def test_force_goes_on_past_a_problem_naming_it() -> None:
    ranks = _answers({"bound": True}, UNREACHABLE, force=True)
    assert all(rank.checks_ok for rank in ranks)
    assert any("--force: rank 1 (ds-b) cannot connect" in message for message in ranks[0].reporter.messages())


@pytest.mark.parametrize("check", ["engine.dist_port", "engine.dist_reach"])
def test_skip_check_accepts_the_dist_port_tests_ids(check: str) -> None:
    from specops.cli.cmd_deploy import check_ids

    assert check_ids([check]) == (check,)
