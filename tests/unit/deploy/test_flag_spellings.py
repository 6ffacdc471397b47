"""A flag SGLang renamed is rendered under the name the staged build's own parser declares."""

from __future__ import annotations

import shutil
from pathlib import Path

from specops.build.server_flags import speculative_flags
from specops.config.loader import load_config
from specops.deploy.host_state import manifest_fields
from specops.deploy.plan import make_plan
from tests.testbed.engine import BUILD_PYTHON
from tests.unit.conftest import VALID_HOST

OLD, NEW = "--speculative-dflash-draft-window-size", "--speculative-draft-window-size"


def _build(tmp_path: Path, old_spelling: bool) -> Path:
    build = tmp_path / "build"
    shutil.copytree(BUILD_PYTHON, build, ignore=shutil.ignore_patterns("__pycache__"))
    if old_spelling:  # a 0.5.11-like build: only the older name, as a literal and as a field
        args = build / "sglang" / "srt" / "server_args.py"
        text = (
            args.read_text()
            .replace(NEW, OLD)
            .replace("speculative_draft_window_size", "speculative_dflash_draft_window_size")
        )
        args.write_text(text)
    return build


def _plan(tmp_path: Path, build: Path):  # type: ignore[no-untyped-def]
    (tmp_path / "specops.toml").write_text(VALID_HOST.replace('profile = "ddtree"', 'profile = "dflash"'))
    config = load_config(tmp_path / "specops.toml", tmp_path)
    return make_plan(config, ["llm-two"], None, build, [], tmp_path / "work")


def test_a_build_that_knows_only_the_older_name_gets_it_in_its_unit_and_manifest(tmp_path: Path) -> None:
    plan = _plan(tmp_path, _build(tmp_path, old_spelling=True))
    (host,) = plan.hosts
    assert f"{OLD} 2048" in host.unit_text and NEW not in host.unit_text
    assert manifest_fields(host)["flag_spellings"] == {NEW: OLD}


def test_a_build_that_knows_the_current_name_keeps_it(tmp_path: Path) -> None:
    build = _build(tmp_path, old_spelling=False)
    assert NEW in (speculative_flags(build) or set())
    (host,) = _plan(tmp_path, build).hosts
    assert f"{NEW} 2048" in host.unit_text and OLD not in host.unit_text
    assert manifest_fields(host)["flag_spellings"] == {}


def test_a_build_without_server_args_renames_nothing(tmp_path: Path) -> None:
    assert speculative_flags(tmp_path) is None
