"""The multi-node engine's own doctor checks: differences between ranks named per rank, the GPUs against the
engine's parallelism, and the dist port test (run for real between two local "ranks")."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

from specops.commands.dist_port import LISTEN_S
from specops.doctor.engine_checks import EngineFacts, RankFacts, engine_checks
from specops.doctor.model import CheckResult, Status
from specops.host.local import LocalHost
from specops.host.recording import RecordingHost, reply
from specops.probe.dist_port import DistPortReport, RankAnswer, check_dist_port, parse_answer, split_dist_addr
from specops.probe.facts import HostFacts, PythonFacts, ReleaseFacts, TorchFacts
from specops.probe.facts_gpu import GpuFacts, NvidiaFacts


def facts(torch: str = "2.13.0+cu130", release: str = "20261203-a", gpus: int = 8) -> HostFacts:
    return HostFacts(
        probe_version=1,
        python=PythonFacts(executable="/opt/venv/bin/python", version="3.11.7", prefix="/opt/venv"),
        torch=TorchFacts(found=True, version=torch, cuda="13.0"),
        releases=ReleaseFacts(current_id=release),
        nvidia=NvidiaFacts(
            driver_version="580.65", gpus=[GpuFacts(index=i, name="H100", driver_version="580.65") for i in range(gpus)]
        ),
    )


def engine(*ranks: HostFacts, tp: int = 16, dist: DistPortReport | None = None) -> EngineFacts:
    return EngineFacts("ds", [RankFacts(i, f"ds-{i}", f) for i, f in enumerate(ranks)], tp, 1, dist)


def by_id(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {result.id: result for result in results}


def test_the_same_ranks_pass_and_a_torch_difference_is_named_per_rank() -> None:
    same = by_id(engine_checks(engine(facts(), facts())))
    assert same["engine.same_torch"].status == Status.PASS
    assert same["engine.same_build"].status == Status.PASS
    differ = by_id(engine_checks(engine(facts(), facts(torch="2.12.0+cu128"))))["engine.same_torch"]
    assert differ.status == Status.FAIL
    assert "rank 1 (ds-1)" in differ.summary
    assert differ.evidence == ["rank 0 (ds-0): torch 2.13.0+cu130 (CUDA 13.0)",
                               "rank 1 (ds-1): torch 2.12.0+cu128 (CUDA 13.0)"]  # fmt: skip


def test_a_release_difference_is_named() -> None:
    found = by_id(engine_checks(engine(facts(), facts(release="20261203-b"))))["engine.same_build"]
    assert found.status == Status.FAIL and "rank 1 (ds-1)" in found.summary
    assert any("20261203-b" in line for line in found.evidence)


def test_gpus_per_rank_times_ranks_must_be_the_parallelism() -> None:
    assert by_id(engine_checks(engine(facts(), facts())))["engine.gpu_count"].status == Status.PASS
    short = by_id(engine_checks(engine(facts(), facts(gpus=4))))["engine.gpu_count"]
    assert short.status == Status.FAIL and "rank 1 (ds-1)" in short.summary


def test_an_unprobed_rank_is_left_out_not_crashed_on() -> None:
    results = engine_checks(EngineFacts("ds", [RankFacts(0, "a", facts()), RankFacts(1, "b", None)], 16, 1))
    assert all(result.status != Status.ERROR for result in results)
    assert by_id(results)["engine.same_torch"].status == Status.SKIP


def report(rank0: RankAnswer, *others: RankAnswer) -> DistPortReport:
    return DistPortReport("10.1.0.11", 5000, "sglang.service", [rank0, *others])


def test_a_port_held_by_something_else_fails_naming_port_and_rank_0() -> None:
    held = report(
        RankAnswer(0, "ds-a", False, "EADDRINUSE", "pid 7 nc", "squatter.service"), RankAnswer(1, "ds-b", True)
    )
    found = by_id(engine_checks(engine(facts(), facts(), dist=held)))["engine.dist_port"]
    assert found.status == Status.FAIL
    assert (
        found.summary == "dist port 5000 on rank 0 (ds-a) is held by pid 7 nc (squatter.service), not by sglang.service"
    )


def test_the_engines_own_listener_is_fine() -> None:
    own = report(
        RankAnswer(0, "ds-a", False, "EADDRINUSE", "pid 7 python", "sglang.service"), RankAnswer(1, "ds-b", True)
    )
    assert own.problems() == []


def test_a_worker_that_cannot_connect_is_named_with_the_port() -> None:
    lost = report(RankAnswer(0, "ds-a", True), RankAnswer(1, "ds-b", False, "ENETUNREACH: Network is unreachable"))
    found = by_id(engine_checks(engine(facts(), facts(), dist=lost)))["engine.dist_reach"]
    assert found.status == Status.FAIL
    assert found.summary == "rank 1 (ds-b) cannot connect to rank 0 (ds-a) at 10.1.0.11:5000"
    assert lost.problems() == ["rank 1 (ds-b) cannot connect to rank 0 (ds-a) at 10.1.0.11:5000: "
                               "ENETUNREACH: Network is unreachable"]  # fmt: skip


def test_infiniband_needs_devices_and_peermem_on_every_rank() -> None:
    plain = report(RankAnswer(0, "a", True), RankAnswer(1, "b", True))
    assert by_id(engine_checks(engine(facts(), facts(), dist=plain)))["engine.infiniband"].status == Status.SKIP
    ib = report(RankAnswer(0, "a", True, rdma=["mlx5_0"], peermem=True), RankAnswer(1, "b", True, rdma=["mlx5_0"]))
    found = by_id(engine_checks(engine(facts(), facts(), dist=ib)))["engine.infiniband"]
    assert found.status == Status.FAIL and found.summary.startswith("rank 1 (b)")


def test_answers_that_are_not_json_say_why() -> None:
    assert parse_answer(1, "b", b"", b"Traceback\nOSError: boom\n") == RankAnswer(1, "b", None, "OSError: boom")
    assert split_dist_addr("[fd00::1]:5000") == ("fd00::1", 5000)


def test_the_real_test_binds_connects_and_names_a_holder() -> None:
    with LocalHost() as rank0, LocalHost() as rank1:
        free = socket.socket()
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
        free.close()
        found = check_dist_port(
            [rank0, rank1], ["a", "b"], f"127.0.0.1:{port}", unit="x.service", python=sys.executable
        )
        assert found.problems() == [] and found.ranks[0].ok and found.ranks[1].ok
        with socket.socket() as squatter:
            squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the first test's connection may linger
            squatter.bind(("127.0.0.1", port))
            squatter.listen()
            found = check_dist_port([rank0, rank1], ["a", "b"], f"127.0.0.1:{port}", unit="x.service",
                                    python=sys.executable)  # fmt: skip
        problem = found.port_problem()
        assert problem is not None and problem.startswith(f"dist port {port} on rank 0 (a) is held by pid ")


def test_a_worker_that_cannot_connect_ends_rank_0s_wait_and_frees_the_port() -> None:
    """A worker with no route answers at once; rank 0 is told to stop listening then (not at its 20 s end),
    and the port is free again when the report comes back: an engine started next can bind it."""
    unreachable = '{"role": "connect", "connected": false, "error": "ENETUNREACH: Network is unreachable"}\n'
    worker = RecordingHost("b").script(lambda words: "connect" in words, reply(unreachable))
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    began = time.monotonic()
    with LocalHost() as rank0:
        found = check_dist_port([rank0, worker], ["a", "b"], f"127.0.0.1:{port}", unit="x.service",
                                python=sys.executable)  # fmt: skip
    assert time.monotonic() - began < LISTEN_S / 2
    assert found.ranks[0].ok is True and found.port_problem() is None
    assert found.reach_problems() == [f"rank 1 (b) cannot connect to rank 0 (a) at 127.0.0.1:{port}: "
                                      "ENETUNREACH: Network is unreachable"]  # fmt: skip
    with socket.socket() as engine:
        engine.bind(("127.0.0.1", port))  # the listener is gone, not lingering for the rest of its wait


def test_check_ranks_takes_the_engines_resolved_ranks(config_dir: Path) -> None:
    """What a deploy's preflight calls with its open connections: a squatter on rank 0's dist port is named."""
    from specops.config.engine_targets import resolve_engine
    from specops.config.loader import load_config
    from specops.probe.dist_port import check_ranks
    from tests.unit.engines.test_engine_config import BASE

    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        text = BASE.replace('python = "/opt/venv/bin/python"', f'python = "{sys.executable}"')
        (config_dir / "specops.toml").write_text(
            text + f'\n[engines.ds]\nhosts = ["ds-a", "ds-b"]\ndist_port = {port}\ndist_addr = "127.0.0.1"\n'
        )
        ranks = resolve_engine(load_config(config_dir / "specops.toml", config_dir), "ds", None, lambda spec: "x")
        with LocalHost() as rank0, LocalHost() as rank1:
            found = check_ranks([rank0, rank1], ranks)
    assert [answer.host for answer in found.ranks] == ["ds-a", "ds-b"] and found.ranks[1].ok
    assert found.problems()[0].startswith(f"dist port {port} on rank 0 (ds-a) is held by pid ")
    assert found.problems()[0].endswith("not by sglang.service")
