"""The comparison of a candidate with production: greedy agreement per prompt and in total, ratios, verdict."""

from __future__ import annotations

from specops.commands.systemd import render_unit
from specops.commands.trial import service_settings, trial_start_argv, trial_unit_name
from specops.config.loader import Target
from specops.engine.trial_compare import Answer, compare, verdict
from tests.unit.doctor.factory import HOST, load_profile

PROMPTS = ("Why is the sky blue?", "Write a haiku.")


def _answer(tokens: list[int], rate: float = 100.0, accept: float | None = 2.5, ttft: float = 0.1) -> Answer:
    text = "".join(" w" + str(token) for token in tokens) if tokens[:1] != [0] else "!" * len(tokens)
    return Answer(text, tuple(tokens), ttft, rate, accept)


def test_a_candidate_that_writes_what_production_writes_agrees_with_its_speed_ratio() -> None:
    production = [_answer([1, 2, 3, 4]), _answer([5, 6, 7, 8])]
    candidate = [_answer([1, 2, 3, 4], rate=130.0, accept=3.2), _answer([5, 6, 7, 8], rate=130.0, accept=3.2)]
    comparison = compare(PROMPTS, production, candidate)
    assert comparison.agreement == 1.0
    assert (comparison.ratio("tokens_per_s"), comparison.ratio("accept_length")) == (1.3, 1.28)
    assert verdict(comparison, 0.9, 1.2) == []
    assert verdict(comparison, 0.9, 1.5) == ["slower than --min-speedup: 1.30x production's tokens/s (want >= 1.5x)"]


def test_agreement_is_the_common_prefix_and_a_late_divergence_is_counted_per_prompt() -> None:
    production = [_answer([1, 2, 3, 4]), _answer([5, 6, 7, 8])]
    comparison = compare(PROMPTS, production, [_answer([1, 2, 3, 9]), _answer([9, 6, 7, 8])])
    assert [(row.agreed, row.total) for row in comparison.prompts] == [(3, 4), (0, 4)]
    assert comparison.agreement == 3 / 8
    (cause,) = verdict(comparison, 0.9, None)
    assert cause.startswith("disagrees with production: 38% of greedy tokens agree (want >= 90%); "
                            "'Write a haiku.': candidate ' w9 w6 w7 w8', production ' w5 w6 w7 w8'")  # fmt: skip


def test_a_degenerate_candidate_is_named_with_its_answer() -> None:
    production = [_answer([1, 2, 3, 4] * 4)] * 2
    candidate = [_answer([0] * 16, rate=8.0, accept=1.0)] * 2
    causes = verdict(compare(PROMPTS, production, candidate), 0.9, None)
    assert causes[0].startswith("degenerate output on 2 of 2 prompt(s): ")
    assert "'!!!!!!!!!!!!!!!!'" in causes[0]
    assert causes[1].startswith("disagrees with production: 0% ")


def test_the_transient_unit_keeps_the_managed_units_hardening_and_runs_the_candidate() -> None:
    target = Target(HOST.model_copy(update={"gpus": "1", "port": 30001}), load_profile("ddtree"))
    settings = dict(service_settings(render_unit(target)))
    assert settings["NoNewPrivileges"] == "yes" and settings["ProtectSystem"] == "full"
    assert settings["KillMode"] == "mixed" and "Restart" not in settings and "ExecStart" not in settings
    unit = trial_unit_name("20261102T031200Z-9f1c2a7b-ddtree")
    argv = trial_start_argv(unit, list(settings.items()), {"CUDA_VISIBLE_DEVICES": "1"}, "/opt/r", ["py", "-m"], 600)
    assert argv[:3] == ["systemd-run", "--unit=specops-trial-20261102T031200Z-9f1c2a7b-ddtree.service", "--collect"]
    assert "--property=RuntimeMaxSec=600" in argv and "--setenv=CUDA_VISIBLE_DEVICES=1" in argv
    assert "--property=WorkingDirectory=/opt/r" in argv and argv[-3:] == ["--", "py", "-m"]
