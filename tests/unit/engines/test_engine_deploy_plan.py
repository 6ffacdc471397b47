"""`specops deploy ENGINE`'s plan: every rank's unit with its rank, one release id for the whole engine, and the
engine's ranks never deployed a second time as hosts of their own."""

from __future__ import annotations

from pathlib import Path

import pytest

from specops.config.loader import load_config
from specops.deploy.engine_plan import engine_lines, make_engine_plan
from tests.testbed.engine import BUILD_PYTHON
from tests.unit.clirun import run_cli
from tests.unit.engines.test_engine_config import BASE, ENGINE


def _plan(config_dir: Path, text: str = BASE + ENGINE):  # type: ignore[no-untyped-def]
    (config_dir / "specops.toml").write_text(text)
    config = load_config(config_dir / "specops.toml", config_dir)
    return make_engine_plan(config, "ds", None, BUILD_PYTHON, [], config_dir / "work", lambda spec: "10.1.0.11")


def test_every_rank_gets_its_own_unit_and_the_same_release_id(config_dir: Path) -> None:
    plan = _plan(config_dir)
    rank0, rank1 = plan.hosts
    assert [rank0.name, rank1.name] == ["ds-a", "ds-b"]
    assert "--node-rank 0" in rank0.unit_text and "--node-rank 1" in rank1.unit_text
    assert rank0.release_id is not None and rank0.release_id == rank1.release_id
    own = plan.staged.release_id(rank0.target.profile.name, rank0.unit_text, rank0.env_shown)
    assert rank0.release_id != own  # derived from every rank's unit: a change on any rank is a new engine release
    assert (
        engine_lines(plan)[0]
        == f"engine ds: 2 ranks (rank 0: ds-a, rank 1: ds-b), release {rank0.release_id} on every rank"
    )


def test_a_change_on_the_worker_alone_is_a_new_release_of_the_whole_engine(config_dir: Path) -> None:
    before = _plan(config_dir).hosts[0].release_id
    changed = BASE.replace('ssh = "root@ds-b"\n', 'ssh = "root@ds-b"\nenv = { NCCL_DEBUG = "INFO" }\n')
    after = _plan(config_dir, changed + ENGINE).hosts
    assert after[0].release_id == after[1].release_id != before


@pytest.mark.parametrize(
    ("names", "host", "rank"),
    [(["ds", "ds-a"], "ds-a", 0), (["both"], "ds-b", 1), (["ds-b", "fleet"], "ds-b", 1)],
)
def test_a_rank_named_with_its_own_engine_is_refused_not_deployed_twice(
    config_dir: Path, capsys: pytest.CaptureFixture[str], names: list[str], host: str, rank: int
) -> None:
    groups = '\n[groups]\nboth = ["ds", "ds-b"]\nfleet = ["ds", "solo"]\n'
    (config_dir / "specops.toml").write_text(BASE + ENGINE + groups)
    result = run_cli(capsys, "deploy", *names, "--build", str(BUILD_PYTHON), "--dry-run")
    assert result.code == 2, result
    assert (
        f"error: host '{host}' is rank {rank} of engine 'ds' (ds-a, ds-b), which is named too: it would be "
        "deployed twice"
    ) in result.err
