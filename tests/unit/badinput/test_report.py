"""docs/reliability.md's figures are the suites' own: the block must count the cases, properties and sweep
that exist now (rewrite it with `python -m tests.unit.badinput.report`)."""

from __future__ import annotations

import re

from tests.unit.badinput.report import BEGIN, END, PAGE, structure


def _block() -> str:
    text = PAGE.read_text(encoding="utf-8")
    assert BEGIN in text and END in text
    return text.split(BEGIN, 1)[1].split(END, 1)[0]


def test_the_reliability_figures_match_the_suites() -> None:
    block, shape = _block(), structure()
    hint = "stale: run `python -m tests.unit.badinput.report` and commit docs/reliability.md"
    rows = dict(re.findall(r"^\| (\w+) \| (\d+) \| \d+ \|$", block, re.M))
    assert {family: int(count) for family, count in rows.items()} == shape["families"], hint
    total = sum(shape["families"].values())
    assert f"**{total} bad inputs: {total} clean**" in block, hint
    assert f"**{shape['properties']} of {shape['properties']} injection properties held over " in block, hint
    assert f"{shape['commands']} commands × {shape['modes']} modes: no secret leaked**" in block, hint
