"""The start-up path reads a plain `doctor` or `deploy` command line before typer loads, with a grammar generated
from the typer app (specops/cli/early/grammar_table.py). An option added to a command cannot be left out of it:
the table is stale (the first test fails) and regenerating it stops until the option's early/late decision is
made (specops/cli/early/grammar.py: DECISIONS)."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
import typer
import typer.main

from specops.cli.early import grammar
from specops.cli.early.command_line import ROOT, plain_run
from specops.cli.early.grammar_table import GRAMMAR
from specops.cli.main import build_app, command_named

EARLY_COMMANDS = ("doctor", "deploy")


def test_the_early_grammar_is_the_typer_apps() -> None:
    assert grammar.table_data() == GRAMMAR, "stale: run python -m specops.cli.cmd_completion"


def _command(name: str) -> Any:
    """A fresh click command of the typer app (changing it changes nothing else)."""
    return typer.main.get_command(build_app(name)).commands[name]


FreshOpt = Annotated[int, typer.Option("--fresh", "-f", help="An option added to a command.")]


def _fresh_option() -> Any:
    """`--fresh/-f` as the typer app would build it, to add to a command."""
    app = typer.Typer()

    @app.command()
    def new(fresh: FreshOpt = 0) -> None:
        """A command holding the new option."""

    return typer.main.get_command(app).params[0]


@pytest.mark.parametrize("name", EARLY_COMMANDS)
def test_an_option_added_to_an_early_command_without_a_decision_stops_the_generator(name: str) -> None:
    command = _command(name)
    command.params.append(_fresh_option())
    with pytest.raises(grammar.Undecided, match=rf"`specops {name}` --fresh: decide in DECISIONS whether a plain"):
        grammar.options(command, name)


def test_a_decision_for_an_option_that_is_gone_stops_the_generator() -> None:
    command = _command("deploy")
    command.params = [param for param in command.params if param.name != "reap"]
    with pytest.raises(grammar.Undecided, match=r"`specops deploy`: DECISIONS names 'reap', which is no option"):
        grammar.options(command, "deploy")


def _value(entry: dict[str, Any]) -> list[str]:
    """A value the parser accepts for the option (none for a flag)."""
    kind = entry["value"]
    return [] if not kind else ["x"] if kind == "text" else [str(entry.get("min", 1))]


@pytest.mark.parametrize(
    ("command", "option"), [(command, option) for command in EARLY_COMMANDS for option in GRAMMAR[command]]
)
def test_an_option_keeps_a_run_plain_exactly_when_it_is_decided_early(command: str, option: str) -> None:
    entry = GRAMMAR[command][option]
    args = [command, "llm-two", option, *_value(entry)]
    assert (plain_run(args, command) is not None) == entry["early"], args


@pytest.mark.parametrize("option", list(GRAMMAR[ROOT]))
def test_a_root_option_keeps_a_run_plain_exactly_when_it_is_decided_early(option: str) -> None:
    entry = GRAMMAR[ROOT][option]
    for command in EARLY_COMMANDS:
        args = [option, *_value(entry), command, "llm-two"]
        assert (plain_run(args, command) is not None) == entry["early"], args


@pytest.mark.parametrize(
    "args",
    [
        ["deploy", "llm-two", "--lock-wait", "86401"],  # beyond the option's max: the parser refuses it
        ["deploy", "llm-two", "--lock-wait", "inf"],
        ["deploy", "llm-two", "--parallel", "0"],
        ["deploy", "llm-two", "--parallel", "2.5"],  # not an integer
        ["deploy", "llm-two", "--canary=-1"],
        ["deploy", "llm-two", "--force=yes"],  # a flag given a value
        ["deploy", "llm-two", "--build="],
        ["deploy", "llm-two", "-p=ddtree"],  # a short option's `=` belongs to its value
        ["deploy", "llm-two", "--nonsense"],
        ["--no-color", "--config"],
        ["--debug", "status", "deploy"],
    ],
)
def test_a_value_or_word_the_parser_would_refuse_starts_nothing(args: list[str]) -> None:
    assert plain_run(args, "deploy") is None


def test_the_parsed_command_is_found_past_every_root_option_with_a_value() -> None:
    assert command_named(["--config", "deploy", "-v", "doctor", "llm-two"]) == "doctor"
    plain = plain_run(["--config=deploy", "--json", "deploy", "llm-two", "--lock-wait=30"], "deploy")
    assert plain is not None and (str(plain.config_path), plain.names, dict(plain.values)) == (
        "deploy", ["llm-two"], {"lock_wait": "30"})  # fmt: skip
