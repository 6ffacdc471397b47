"""A command over hosts and multi-node engines at once (restart): the hosts asked in parallel as any fleet, each
engine's ranks all at once with the engine's meeting points (deploy/engine_run.py).

Why each rank in its own thread, outside the survey's bounded pool: the ranks wait for each other (rank 1 locks
after rank 0), so a rank left queued behind the others would keep them waiting. A rank whose command ended
however it ended (its host unreachable included) leaves the engine's run, so the others never wait for it.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from specops.config.inventory import HostSpec
from specops.deploy.engine_run import EngineRun
from specops.deploy.survey import Opener, Question, Reading, ask, survey

T = TypeVar("T")
Batch = tuple[list[HostSpec], EngineRun | None]  # plain hosts (None), or one engine's ranks, rank 0 first


def ask_members(batches: list[Batch], opener: Opener, question: Callable[[EngineRun | None], Question[T]],
                order: list[str]) -> dict[str, Reading[T]]:  # fmt: skip
    """Every batch at once; `question(run)`: the question for a batch's hosts. The readings keyed by host, in
    `order` (the inventory's)."""
    with ThreadPoolExecutor(max_workers=max(1, len(batches))) as pool:
        done = list(pool.map(lambda batch: _batch(batch, opener, question), batches))
    readings = {name: reading for found in done for name, reading in found.items()}
    return {name: readings[name] for name in order if name in readings}


def _batch(batch: Batch, opener: Opener, question: Callable[[EngineRun | None], Question[T]]) -> dict[str, Reading[T]]:
    specs, run = batch
    if run is None:
        return survey(specs, opener, question(None)) if specs else {}
    engine: EngineRun = run

    def rank(spec: HostSpec) -> Reading[T]:
        with engine.present(spec.name, "its command ended"):
            return ask(spec, opener, question(engine))

    with ThreadPoolExecutor(max_workers=len(specs)) as pool:
        return dict(zip((spec.name for spec in specs), pool.map(rank, specs), strict=True))
