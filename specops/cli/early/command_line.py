"""The command line of a plain `doctor` or `deploy`, read before typer loads, with typer's own grammar.

The grammar is grammar_table.py, generated from the typer app (grammar.py): each option's aliases, whether it
takes a value, its numeric limits and whether a plain run may carry it. A command line is plain when it is
`specops [ROOT OPTIONS] COMMAND NAME... [OPTIONS]` and every option is one the early path may carry, with a
value the parser would accept where the value is a number. Anything else (an option the early path leaves to
the parser, a typo, a missing value, `--`, combined short flags) is not plain: the early path starts nothing
and the parsed command handles the command line as always.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specops.cli.early.grammar_table import GRAMMAR

ROOT = ""  # the root app's options, as in grammar.py
# the root options whose next word is their value, not a command (specops.cli.main: command_named)
ROOT_VALUE_OPTIONS = frozenset(option for option, entry in GRAMMAR[ROOT].items() if entry["value"])


@dataclass(frozen=True)
class PlainRun:
    """A plain `specops [ROOT OPTIONS] COMMAND NAME... [OPTIONS]`."""

    config_path: Path | None
    names: list[str]
    values: Mapping[str, str]  # the command's value options, by parameter name (the last one given)


def plain_run(args: list[str], command: str) -> PlainRun | None:
    """The run `args` ask for when they name `command`, at least one name, and only options a plain run may
    carry (else None)."""
    words = iter(args)
    root = _options(words, GRAMMAR[ROOT], [], until=command)
    names: list[str] = []
    values = _options(words, GRAMMAR[command], names) if root is not None else None
    if root is None or values is None or not names:
        return None
    config = root.get("config")
    return PlainRun(Path(config) if config is not None else None, names, values)


def _options(
    words: Iterator[str], grammar: Mapping[str, Any], names: list[str], until: str | None = None
) -> dict[str, str] | None:
    """The values of the options in `words` (up to the word `until`, or to the end), adding the other words to
    `names`; None at a word that makes the run not plain (or when `until` never comes)."""
    values: dict[str, str] = {}
    for word in words:
        if not word.startswith("-"):
            if until is not None:
                return values if word == until else None  # another command, or a root option's missing value
            names.append(word)
            continue
        option, equals, attached = word.partition("=") if word.startswith("--") else (word, "", "")
        entry = grammar.get(option)
        if entry is None or not entry["early"]:
            return None
        if not entry["value"]:
            if equals:  # a flag given a value: the parser refuses it
                return None
            continue
        value = attached if equals else next(words, None)
        if not value or not _accepted(entry, value):
            return None
        values[entry["name"]] = value
    return None if until is not None else values


def _accepted(entry: Mapping[str, Any], value: str) -> bool:
    """A numeric option's value as the parser takes it: a number of the option's kind within its limits."""
    kind = entry["value"]
    if kind not in ("int", "float"):
        return True
    try:
        number = int(value) if kind == "int" else float(value)
    except ValueError:
        return False
    return not math.isnan(number) and entry.get("min", -math.inf) <= number <= entry.get("max", math.inf)
