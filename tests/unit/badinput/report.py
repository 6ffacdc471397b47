"""Write the figures of docs/reliability.md from the suites' own results: `python -m tests.unit.badinput.report`.

It runs the bad-input corpus, the injection properties and the secrets sweep with pytest (in this process, so
the property tests' example counter can be read), counts what passed, and rewrites the generated block of
docs/reliability.md. tests/unit/badinput/test_report.py fails when the block no longer matches the suites'
size (cases per family, properties, commands x modes): run this again after changing them.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "reliability.md"
BEGIN, END = "<!-- BEGIN GENERATED: reliability -->", "<!-- END GENERATED: reliability -->"
SUITES = ["tests/unit/badinput/test_corpus.py", "tests/unit/test_injection.py", "tests/unit/test_injection_unit.py",
          "tests/unit/test_secrets_sweep.py"]  # fmt: skip
CASE_TESTS = ("test_a_bad_input_ends_clean", "test_a_hostile_engine_answer_ends_clean")
INJECTION_FILES = ("test_injection.py", "test_injection_unit.py")


@dataclass
class Figures:
    """What one run showed."""

    cases: Counter[str] = field(default_factory=Counter)  # family -> cases
    clean: Counter[str] = field(default_factory=Counter)  # family -> clean cases
    properties: set[str] = field(default_factory=set)
    properties_held: set[str] = field(default_factory=set)
    examples: int = 0
    sweep_runs: int = 0
    sweep_clean: int = 0


def structure() -> dict[str, Any]:
    """The suites' size, read from their data and code without running them (for the staleness test)."""
    from tests.unit import test_injection, test_injection_unit, test_secrets_sweep
    from tests.unit.badinput.corpus import load_all
    from tests.unit.badinput.engine_cases import load_engine_cases

    families = Counter(case.family for case in load_all())
    families["engine_answers"] = len(load_engine_cases())
    names = [
        name for module in (test_injection, test_injection_unit) for name in vars(module) if name.startswith("test_")
    ]
    sweep = test_secrets_sweep
    return {"families": dict(sorted(families.items())), "properties": len(set(names)),
            "commands": len(sweep.COMMANDS), "modes": len(sweep.MODES)}  # fmt: skip


class _Collector:
    """A pytest plugin keeping each test's outcome (the call phase, or the setup phase when it failed)."""

    def __init__(self, figures: Figures) -> None:
        self.figures = figures

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when != "call" and report.passed:
            return
        path, _, test = report.nodeid.partition("::")
        function, _, param = test.partition("[")
        ok = report.passed
        if function in CASE_TESTS:
            family = param.split("/")[0]
            self.figures.cases[family] += 1
            self.figures.clean[family] += ok
        elif path.endswith(INJECTION_FILES):
            self.figures.properties.add(test)
            if ok:
                self.figures.properties_held.add(test)
        elif function == "test_no_secret_leaks":
            self.figures.sweep_runs += 1
            self.figures.sweep_clean += ok


def run_suites() -> Figures:
    import pytest

    figures = Figures()
    pytest.main(["-q", "-p", "no:cacheprovider", "--no-header", *[str(ROOT / s) for s in SUITES]],
                plugins=[_Collector(figures)])  # fmt: skip
    from tests.unit import test_injection  # the module pytest ran, with its example counter

    figures.examples = sum(test_injection.EXAMPLES.values())
    return figures


def render(figures: Figures, shape: dict[str, Any]) -> str:
    total, clean = sum(figures.cases.values()), sum(figures.clean.values())
    leaked = figures.sweep_runs - figures.sweep_clean
    verdict = "no secret leaked" if leaked == 0 else f"{leaked} leaked"
    lines = [
        BEGIN,
        f"- **{total} bad inputs: {clean} clean** (the documented exit code, a path-qualified message, no "
        "traceback, no internal error, no raw control character, no writing command on any host)",
        f"- **{len(figures.properties_held)} of {len(figures.properties)} injection properties held over "
        f"{figures.examples} examples**",
        f"- **secrets sweep: {shape['commands']} commands × {shape['modes']} modes: {verdict}**",
        "",
        "| family | cases | clean |",
        "|---|---|---|",
    ]
    lines += [f"| {family} | {count} | {figures.clean[family]} |" for family, count in sorted(figures.cases.items())]
    return "\n".join([*lines, END])


def refresh(text: str, block: str) -> str:
    return re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)


def main() -> int:
    figures = run_suites()
    PAGE.write_text(refresh(PAGE.read_text(encoding="utf-8"), render(figures, structure())), encoding="utf-8")
    print(render(figures, structure()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
