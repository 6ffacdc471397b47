"""`specops doctor ENGINE`: every rank examined as a host (in parallel), plus the engine's own checks.

The ranks' probes and the dist port test run at once, each rank on its own connections: rank 0 binds the dist
port for a few seconds while every other rank connects to it (specops/probe/dist_port.py). The engine's
verdicts (the same build, torch, CUDA, NCCL, driver and models on every rank; the GPUs; the dist port; RDMA)
are one more report, named `ENGINE (engine)`, after its ranks'.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from specops.cli.state import AppState
    from specops.config.loader import Config, Target
    from specops.doctor.model import CheckSpec
    from specops.doctor.runner import DoctorTarget, HostReport
    from specops.probe.dist_port import DistPortReport


def engine_targets(config: Config, name: str, profile: str | None) -> list[Target]:
    """The engine's ranks in order, rank 0's address as render and deploy take it (its ssh HostName)."""
    from specops.config.engine_targets import resolve_engine
    from specops.host.ssh.resolve import resolve_ssh_target

    return resolve_engine(config, name, profile, lambda spec: resolve_ssh_target(spec.ssh, jump=spec.jump).hostname)


def split_names(config: Config, names: list[str]) -> tuple[list[str], list[str]]:
    """(engines, the other names): engines named or in a named group; a group holding an engine gives its other
    members as hosts. Without engines, the names as given."""
    inventory = config.inventory
    engines: list[str] = []
    plain: list[str] = []
    for member in inventory.opened(names):
        (engines if member in inventory.engines else plain).append(member)
    if not engines:
        return [], list(names)
    return list(dict.fromkeys(engines)), plain


def doctor_targets(app_state: AppState, ranks: list[Target]) -> list[DoctorTarget]:
    from specops.doctor.runner import DoctorTarget

    return [
        DoctorTarget(name=rank.host.name, spec=rank.host, profile=rank.profile,
                     open_host=app_state.opener(rank.host), python=rank.host.python)
        for rank in ranks
    ]  # fmt: skip


def dist_port_test(app_state: AppState, ranks: list[Target]) -> DistPortReport:
    """Each rank's side of the dist port test on its own connection, all at once."""
    from specops.errors import SpecopsError
    from specops.probe.dist_port import DistPortReport, RankAnswer, Waiter, ask_every_rank, ask_rank, split_dist_addr

    first = ranks[0].rank
    assert first is not None
    address, port = split_dist_addr(first.dist_init_addr)

    def asker(index: int, target: Target) -> Callable[[Waiter], RankAnswer]:
        def ask(until: Waiter) -> RankAnswer:
            try:
                with app_state.opener(target.host)() as host:
                    return ask_rank(host, target.host.name, target.host.python, index, len(ranks),
                                    first.dist_init_addr, until)  # fmt: skip
            except SpecopsError as error:
                return RankAnswer(index, target.host.name, None, error.message)

        return ask

    answers = ask_every_rank([asker(index, target) for index, target in enumerate(ranks)])
    return DistPortReport(address, port, ranks[0].host.unit_name, answers)


def examine_engines(
    app_state: AppState,
    config: Config,
    engines: list[str],
    hosts: list[DoctorTarget],
    profile: str | None,
    plan: tuple[list[CheckSpec] | None, set[str] | None, bool],
) -> tuple[dict[str, HostReport], dict[str, HostReport]]:
    """The hosts' and every engine's ranks' reports (each host once), and one report per engine (by name)."""
    from specops.doctor.engine_checks import EngineFacts, RankFacts, engine_checks
    from specops.doctor.registry import select
    from specops.doctor.runner import Examination, HostReport

    chosen, engine_only, deep = plan
    ranks = {name: engine_targets(config, name, profile) for name in engines}
    targets = list(hosts)
    for engine_ranks in ranks.values():
        targets += [t for t in doctor_targets(app_state, engine_ranks) if t.name not in {x.name for x in targets}]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, len(ranks))) as pool, Examination(targets, deep) as examination:
        tests: dict[str, Future[DistPortReport]] = {
            name: pool.submit(dist_port_test, app_state, engine_ranks) for name, engine_ranks in ranks.items()
        }
        reports = examination.reports(chosen if chosen is not None else select(None))
        verdicts = {}
        for name, engine_ranks in ranks.items():
            first = engine_ranks[0].rank
            assert first is not None
            facts = EngineFacts(
                name, [RankFacts(i, t.host.name, reports[t.host.name].facts) for i, t in enumerate(engine_ranks)],
                first.tp_size, first.pp_size, tests[name].result(),
            )  # fmt: skip
            verdicts[name] = HostReport(name, engine_checks(facts, engine_only), seconds=time.monotonic() - started)
    return reports, verdicts
