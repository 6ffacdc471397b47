"""A run builds only the command it runs (specops/cli/main.py): same help, same options, same errors as the
whole app, and the root options that take a value are the ones the command finder skips."""

from __future__ import annotations

import pytest
import typer.main

from specops.cli.early.command_line import ROOT_VALUE_OPTIONS
from specops.cli.main import COMMANDS, build_app, command_named
from specops.errors import UsageError


def _outcome(app: typer.Typer, args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[object, str, str]:
    """What the app ends with (its exit code, or the refusal it hands to the error boundary) and printed."""
    capsys.readouterr()
    ended: object = None
    try:
        app(args=args, prog_name="specops")
    except SystemExit as exited:
        ended = exited.code
    except UsageError as refused:
        ended = (int(refused.exit_code), refused.message, refused.hint)
    captured = capsys.readouterr()
    return ended, captured.out, captured.err


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_alone_has_the_help_of_the_whole_app(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    whole = _outcome(build_app(), [name, "--help"], capsys)
    alone = _outcome(build_app(name), [name, "--help"], capsys)
    assert alone == whole and whole[0] == 0 and f"Usage: specops {name}" in str(whole[1])


def test_a_bad_option_is_the_same_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["doctor", "llm-two", "--no-such-option"]
    alone = _outcome(build_app("doctor"), args, capsys)
    assert alone == _outcome(build_app(), args, capsys)
    assert alone[0] == (2, "No such option: --no-such-option", "specops doctor --help")


def test_the_app_lists_exactly_the_commands_of_the_table() -> None:
    group = typer.main.get_command(build_app())
    assert isinstance(group, typer.main.TyperGroup)
    assert sorted(group.commands) == sorted(COMMANDS)


def test_the_root_options_that_take_a_value_are_known() -> None:
    root = typer.main.get_command(build_app())
    taking_value = {opt for param in root.params if not getattr(param, "is_flag", True) and not getattr(param, "count", False)
                    for opt in param.opts}  # fmt: skip
    assert taking_value == ROOT_VALUE_OPTIONS


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (["doctor", "llm-two"], "doctor"),
        (["--config", "x.toml", "-v", "lock", "show"], "lock"),
        (["--config", "status", "deploy", "h"], "deploy"),
        (["--config=x.toml", "status"], "status"),
        (["--help", "doctor"], None),
        (["--version"], None),
        (["doctr", "llm-two"], None),  # the whole app answers, with its suggestion
        ([], None),
    ],
)
def test_the_command_a_command_line_runs(args: list[str], command: str | None) -> None:
    assert command_named(args) == command
