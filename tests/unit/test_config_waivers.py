"""`waive` in specops.toml: a host's accepted check failures, each with a reason; mistakes are config errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from specops.config.loader import load_config
from specops.config.waivers import CHECK_IDS
from specops.doctor.registry import all_checks
from tests.unit.clirun import run_cli
from tests.unit.conftest import VALID_HOST

DEFAULTS = '[defaults]\nwaive = [{ check = "gpu.driver", reason = "the whole lab is CPU" }]\n\n'
OTHER_HOST = '\n[hosts.plain]\nssh = "root@plain"\npython = "/opt/venv/bin/python"\nmodel_path = "/models/target"\n'


def test_the_config_knows_exactly_the_doctors_check_ids_in_its_order() -> None:
    assert tuple(spec.id for spec in all_checks()) == CHECK_IDS


def test_a_host_waives_checks_with_reasons_and_inherits_or_replaces_the_defaults(config_dir: Path) -> None:
    own = 'waive = [{ check = "torch.variant", reason = "  CPU torch on purpose " }]\n'
    (config_dir / "specops.toml").write_text(DEFAULTS + VALID_HOST + own + OTHER_HOST)
    hosts = load_config(config_dir / "specops.toml", config_dir).inventory.hosts
    assert [(w.check, w.reason) for w in hosts["llm-two"].waive] == [("torch.variant", "CPU torch on purpose")]
    assert [(w.check, w.reason) for w in hosts["plain"].waive] == [("gpu.driver", "the whole lab is CPU")]


@pytest.mark.parametrize(
    ("waive", "expected"),
    [
        pytest.param(
            '[{ check = "gpu.drivr", reason = "CPU box" }]',
            [
                "hosts.llm-two.waive.0.check: unknown check 'gpu.drivr' (did you mean 'gpu.driver'?); "
                "`specops doctor --list` describes each check"
            ],
            id="unknown_id_with_suggestion",
        ),
        pytest.param(
            '[{ check = "nothing.like.it", reason = "x" }]',
            [
                f"hosts.llm-two.waive.0.check: unknown check 'nothing.like.it' (known: {', '.join(CHECK_IDS)}); "
                "`specops doctor --list` describes each check"
            ],
            id="unknown_id_lists_the_known",
        ),
        pytest.param(
            '[{ check = "gpu.driver", reason = "  " }]',
            ['hosts.llm-two.waive.0.reason: a waiver needs a reason, e.g. reason = "CPU staging box: no GPUs"'],
            id="blank_reason",
        ),
        pytest.param(
            '[{ check = "gpu.driver" }]',
            ["hosts.llm-two.waive.0.reason: required setting is missing"],
            id="no_reason",
        ),
        pytest.param(
            '[{ check = "limits", reason = "a" }, { check = "limits", reason = "b" }]',
            ["hosts.llm-two.waive: limits is waived twice; keep one entry with its reason"],
            id="waived_twice",
        ),
        pytest.param(
            '["gpu.driver"]',
            ["hosts.llm-two.waive.0: Input should be a valid dictionary or instance of Waiver (got 'gpu.driver')"],
            id="bare_id_without_reason",
        ),
        pytest.param(
            '[defaults]\nwaive = [{ check = "gpu.driver", reason = "" }]\n\n' + VALID_HOST,
            ['defaults.waive.0.reason: a waiver needs a reason, e.g. reason = "CPU staging box: no GPUs"'],
            id="in_defaults",
        ),
    ],
)
def test_a_bad_waiver_is_a_path_qualified_config_error(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path], waive: str, expected: list[str]
) -> None:
    write_config(waive if waive.startswith("[defaults]") else VALID_HOST + f"waive = {waive}\n")
    result = run_cli(capsys, "config", "check")
    assert result.code == 3
    *errors, hint = result.err.splitlines()
    assert errors == [f"error: specops.toml: {line}" for line in expected]
    assert hint.startswith("hint: ")
