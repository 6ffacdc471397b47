"""The sampled-smoke keys of a profile's [smoke] table: shipped defaults, and strict validation of bad values
(a user profile or a host override), each reported with its path and exit 3."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from specops.config.profile import Profile
from specops.config.shipped import data_dir
from specops.errors import ConfigError
from tests.unit.clirun import run_cli
from tests.unit.conftest import VALID_HOST

BAD_SMOKE_VALUES = [
    pytest.param("sampled_temperature = 0", "smoke.sampled_temperature: Input should be greater than 0", id="greedy"),
    pytest.param(
        "sampled_temperature = -0.5",
        "smoke.sampled_temperature: Input should be greater than 0",
        id="negative-temperature",
    ),
    pytest.param(
        "sampled_temperature = nan", "smoke.sampled_temperature: Input should be a finite number", id="nan-temperature"
    ),
    pytest.param("sampled_top_p = 1.5", "smoke.sampled_top_p: Input should be less than or equal to 1", id="top-p"),
    pytest.param("sampled_top_p = 0", "smoke.sampled_top_p: Input should be greater than 0", id="top-p-zero"),
    pytest.param(
        "sampled_requests = 4.0", "smoke.sampled_requests: Input should be a valid integer (got 4.0)", id="float-count"
    ),
    pytest.param(
        "sampled_requests = true", "smoke.sampled_requests: Input should be a valid integer (got True)", id="bool-count"
    ),
    pytest.param(
        "sampled_requests = 65", "smoke.sampled_requests: Input should be less than or equal to 64", id="too-many"
    ),
    pytest.param(
        "sampled_max_new_tokens = 0",
        "smoke.sampled_max_new_tokens: Input should be greater than or equal to 1",
        id="no-tokens",
    ),
    pytest.param(
        "sampled_prompts = []",
        "smoke.sampled_prompts: List should have at least 1 item after validation, not 0",
        id="no-prompts",
    ),
    pytest.param(
        'baseline_release = "../r1"',
        "smoke.baseline_release: String should match pattern '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'",
        id="release-id",
    ),
    pytest.param("min_speedup = 0", "smoke.min_speedup: Input should be greater than 0", id="speedup"),
]


@pytest.mark.parametrize(("line", "expected"), BAD_SMOKE_VALUES)
def test_bad_sampling_key_in_a_user_profile_is_reported_with_its_file(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path], config_dir: Path, line: str,
    expected: str,
) -> None:  # fmt: skip
    write_config(VALID_HOST.replace('profile = "ddtree"', 'profile = "fast"'))
    (config_dir / "profiles").mkdir()
    (config_dir / "profiles" / "fast.toml").write_text(f'algorithm = "NEXTN"\n[smoke]\n{line}\n', encoding="utf-8")
    result = run_cli(capsys, "config", "check")
    assert result.code == 3, result.err
    assert result.err.splitlines() == [f"error: profiles/fast.toml: {expected}", f"hint: {ConfigError.default_hint}"]


def test_bad_sampling_key_in_a_host_override_names_the_override(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    write_config(VALID_HOST + "\n[hosts.llm-two.overrides.ddtree.smoke]\nsampled_temperature = 0.0\n")
    result = run_cli(capsys, "config", "check")
    assert result.code == 3, result.err
    assert result.err.splitlines() == [
        "error: specops.toml: hosts.llm-two.overrides.ddtree.smoke.sampled_temperature: Input should be greater than 0",
        f"hint: {ConfigError.default_hint}",
    ]


def test_shipped_profiles_sample_at_a_production_temperature() -> None:
    files = sorted(data_dir("profiles").glob("*.toml"))
    assert [file.stem for file in files] == ["ddtree", "dflash", "nextn"]
    for file in files:
        smoke = Profile.model_validate({**tomllib.loads(file.read_text()), "name": file.stem}).smoke
        assert smoke.sampled_requests == 4 and smoke.sampled_temperature == 0.7, file
        assert smoke.sampled_top_p == 0.95 and smoke.sampled_max_new_tokens == 128, file
