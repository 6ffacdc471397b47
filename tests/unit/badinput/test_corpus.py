"""Run the bad-input corpus (cases/*.toml) in CI: every case must end clean (see corpus.py for the rules)."""

from __future__ import annotations

import pytest

from tests.unit.badinput.corpus import Case, load_all, run_case
from tests.unit.badinput.engine_cases import EngineCase, load_engine_cases, run_engine_case

pytestmark = pytest.mark.corpus  # the whole-product sweeps: outside the fast suite (pytest -m "not corpus"), run by CI

CLI_CASES = load_all()
ENGINE_CASES = load_engine_cases()


def test_the_corpus_is_large_and_ids_are_unique() -> None:
    keys = [case.key for case in CLI_CASES] + [case.key for case in ENGINE_CASES]
    assert len(keys) >= 300
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize("case", CLI_CASES, ids=[case.key for case in CLI_CASES])
def test_a_bad_input_ends_clean(case: Case) -> None:
    outcome = run_case(case)
    assert not outcome.problems, f"exit {outcome.code}\nstdout:\n{outcome.out}\nstderr:\n{outcome.err}"


@pytest.mark.parametrize("case", ENGINE_CASES, ids=[case.key for case in ENGINE_CASES])
def test_a_hostile_engine_answer_ends_clean(case: EngineCase) -> None:
    outcome = run_engine_case(case)
    assert not outcome.problems, outcome.err


def test_the_judge_catches_a_dirty_outcome() -> None:
    """The rules themselves: a traceback, exit 70, a wrong code, a write on a host are each reported."""
    from tests.unit.badinput.corpus import Outcome, judge

    case = CLI_CASES[0]
    dirty = Outcome(70, "", "Traceback (most recent call last):\nerror: internal error", [], [])
    problems = judge(case, dirty, ["put /opt/specops/sglang/x"])
    assert any("exit 70" in p for p in problems)
    assert "internal error" in problems and "traceback shown" in problems
    assert any("a host was changed" in p for p in problems)
    assert "no `error:` and `hint:` lines" in problems
    spoken = Outcome(2, "", "error: unknown host 'x'\nhint: `specops hosts` lists them\n", [], [])
    assert "no `error:` and `hint:` lines" not in judge(case, spoken, [])
