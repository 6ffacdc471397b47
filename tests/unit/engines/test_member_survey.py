"""A restart over engines and hosts (deploy/member_survey.py): a rank whose host cannot be reached leaves its
engine's run, so the engine's other ranks stop at their turn instead of waiting for it forever."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from specops.config.inventory import HostSpec
from specops.config.loader import load_config
from specops.deploy.engine_run import EngineRun
from specops.deploy.member_survey import ask_members
from specops.deploy.survey import Question, Reading
from specops.errors import ConnectError, ExitCode
from tests.unit.engines.test_engine_config import BASE, ENGINE


def _opener(spec: HostSpec) -> Callable[[], AbstractContextManager[Any]]:
    def unreachable() -> AbstractContextManager[Any]:
        raise ConnectError(f"{spec.name}: connection refused")

    return unreachable if spec.name == "ds-a" else lambda: nullcontext(object())


def _take_turn(run: EngineRun | None) -> Question[str]:
    def question(host: object, spec: HostSpec) -> tuple[str, ExitCode]:
        if run is not None:
            run.take_turn(run.rank(spec.name))  # rank 1 locks only once rank 0 holds its lock
        return "restarted", ExitCode.OK

    return question


def test_an_unreachable_rank_0_stops_rank_1_at_its_turn_and_the_host_beside_them_goes_on(config_dir: Path) -> None:
    (config_dir / "specops.toml").write_text(BASE + ENGINE)
    hosts = load_config(config_dir / "specops.toml", config_dir).inventory.hosts
    run = EngineRun("ds", ["ds-a", "ds-b"])
    batches = [([hosts["solo"]], None), ([hosts["ds-a"], hosts["ds-b"]], run)]
    found: dict[str, Reading[str]] = {}
    worker = threading.Thread(
        target=lambda: found.update(ask_members(batches, _opener, _take_turn, ["ds-a", "ds-b", "solo"])), daemon=True
    )
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "rank 1 waited for the unreachable rank 0"
    assert list(found) == ["ds-a", "ds-b", "solo"]
    assert found["ds-a"].exit_code == ExitCode.UNREACHABLE
    assert found["ds-b"].exit_code == ExitCode.LOCK_HELD and "rank 0 (ds-a) was not locked" in found["ds-b"].error
    assert found["solo"].value == "restarted"
