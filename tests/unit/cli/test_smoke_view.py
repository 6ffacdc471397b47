"""`specops smoke` as the operator reads it: the sampled requests' figures under the gates (TTFT in ms, the
sampling settings, the speed-up), a warning marked as such, and a TTFT column for a group."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specops.engine.smoke import SmokeResult
from specops.engine.smoke_types import Gate, SmokeFigures
from specops.host.local import LocalHost
from tests.unit.clirun import run_cli

FIGURES: SmokeFigures = {
    "tokens_per_s": 400.0, "accept_length": 3.2, "sampled_requests": 4, "sampled_temperature": 0.7,
    "sampled_top_p": 0.95, "sampled_tokens_per_s": 1400.5, "ttft_p50_s": 0.012, "ttft_p99_s": 0.2,
    "speedup_vs_baseline": 2.5, "baseline_release": "r-nospec",
}  # fmt: skip
RESULT = SmokeResult(
    passed=True,
    gates=[
        Gate("sampled-output", True, "4 real texts", "real text at temperature 0.7, top_p 0.95"),
        Gate("ttft", True, "p50 12 ms vs 11 ms, p99 200 ms vs 20 ms", "p50 and p99 within +50% or +50 ms of the previous release",
             "warning: p99 rose 900% (20 ms -> 200 ms)", warn=True),
    ],
    figures=FIGURES,
    sampled=[{"request": 1, "ttft_s": 0.012}],
)  # fmt: skip


@pytest.fixture
def inventory(config_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    hosts = "".join(f'[hosts.{name}]\nssh = "{name}"\n\n' for name in ("llm-one", "llm-two"))
    (config_dir / "specops.toml").write_text(
        f'[defaults]\npython = "/usr/bin/python3"\nmodel_path = "/models/target"\ndraft_model_path = "/models/draft"\nprofile = "ddtree"\n\n{hosts}'
        '[groups]\ngpu = ["llm-one", "llm-two"]\n'
    )
    monkeypatch.setattr("specops.host.ssh.connection.connect", lambda spec: LocalHost(spec.name))
    monkeypatch.setattr("specops.ops.smoke_check.smoke_running", lambda host, spec, profile: RESULT)
    return config_dir


def test_one_host_shows_the_sampled_figures_and_the_warning(capsys: pytest.CaptureFixture[str], inventory: Path):
    result = run_cli(capsys, "smoke", "llm-one")
    assert result.code == 0, result.err
    ttft_row = next(line for line in result.out.splitlines() if "│ ttft " in line)
    assert "│ warn " in ttft_row and "warning: p99 rose 900%" in ttft_row
    lines = [line.strip() for line in result.out.splitlines()]
    assert "sampled:        4 concurrent at temperature 0.7, top_p 0.95" in lines
    assert "TTFT p50:       12 ms" in lines and "TTFT p99:       200 ms" in lines
    assert "sampled tok/s:  1400.5" in lines and "speed-up:       2.50x release r-nospec" in lines


def test_json_has_the_figures_and_each_sampled_answer(capsys: pytest.CaptureFixture[str], inventory: Path) -> None:
    document = json.loads(run_cli(capsys, "smoke", "llm-one", "--json").out)
    assert document["figures"]["ttft_p99_s"] == 0.2 and document["sampled"] == [{"request": 1, "ttft_s": 0.012}]
    assert document["reason"] == "all smoke gates passed (warning: ttft: p99 rose 900% (20 ms -> 200 ms))"
    assert [gate["warn"] for gate in document["gates"]] == [False, True]


def test_a_group_has_a_ttft_column(capsys: pytest.CaptureFixture[str], inventory: Path) -> None:
    rows = run_cli(capsys, "smoke", "gpu").out.splitlines()
    assert rows[0].split() == ["HOST", "PROFILE", "RESULT", "TOK/S", "ACCEPT", "TTFT", "P50", "FAILED", "GATES"]
    assert rows[1].split()[:7] == ["llm-one", "ddtree", "pass", "400.0", "3.2", "12", "ms"]
