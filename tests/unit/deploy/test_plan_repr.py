"""A host's plan holds the revealed env file (its secrets in clear, for the host): a debug print, an assertion
message or an f-string of the plan must not show them."""

from __future__ import annotations

from pathlib import Path

import pytest

from specops.config.loader import load_config
from specops.deploy.plan import plan_host
from tests.unit.deploy.scene import CONFIG, HOST


def test_a_plans_repr_never_shows_the_secrets_its_env_file_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_s3cr3t_value")
    (tmp_path / "specops.toml").write_text(CONFIG + 'secrets = ["HF_TOKEN"]\n')
    plan = plan_host(load_config(tmp_path / "specops.toml", tmp_path), HOST, None)
    assert "hf_s3cr3t_value" in plan.env_text  # what the host gets
    assert "hf_s3cr3t_value" not in f"{plan}" and "hf_s3cr3t_value" not in repr(plan)
