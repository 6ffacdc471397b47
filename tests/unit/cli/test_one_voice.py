"""Every refusal speaks the same way: an `error:` line, a `hint:` line and a documented exit code, whether it is
one of specops's own errors (every SpecopsError class in the package) or the command-line parser's (a missing
argument, an unknown option or command, a bad value); and every command's help names its values by metavar
(`HOST`, `HOST|GROUP...`, `SECONDS`), never by a Python type."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from pathlib import Path

import pytest

import specops
from specops.cli import cmd_init
from specops.cli.main import COMMANDS
from specops.errors import SpecopsError, UsageError
from tests.unit.clirun import run_cli

EXIT_CODES_DOC = Path(__file__).parents[3] / "docs" / "exit-codes.md"


def _every_error_class() -> list[type[SpecopsError]]:
    """Every SpecopsError subclass defined anywhere in the package (each module imported, subclasses walked)."""
    for module in pkgutil.walk_packages(specops.__path__, "specops."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    found: list[type[SpecopsError]] = []
    todo = [SpecopsError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.append(sub)
                todo.append(sub)
    return sorted(found, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


ERROR_CLASSES = _every_error_class()


def _documented_codes() -> set[int]:
    rows = re.findall(r"^\| (\d+) \| .+ \|$", EXIT_CODES_DOC.read_text(encoding="utf-8"), re.MULTILINE)
    return {int(code) for code in rows}


def test_the_walk_finds_the_error_classes_of_every_layer() -> None:
    modules = {cls.__module__ for cls in ERROR_CLASSES}
    assert len(ERROR_CLASSES) >= 20
    assert {"specops.errors", "specops.engine.client", "specops.host.become", "specops.ops.unit"} <= modules


@pytest.mark.parametrize("error_class", ERROR_CLASSES, ids=[cls.__name__ for cls in ERROR_CLASSES])
def test_every_error_reaches_the_user_with_error_hint_and_its_documented_code(
    error_class: type[SpecopsError], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Raised with a message only (its class's own constructor bypassed: a site that gives no hint), through
    the one error boundary: the class or its ancestors supply the hint."""
    error = error_class.__new__(error_class)
    SpecopsError.__init__(error, f"llm-two: {error_class.__name__} happened")

    def failing() -> None:
        raise error

    monkeypatch.setattr(cmd_init, "init", failing)
    result = run_cli(capsys, "init")
    assert result.code == int(error_class.exit_code) and result.code in _documented_codes()
    lines = result.err.splitlines()
    assert f"error: llm-two: {error_class.__name__} happened" in lines
    hints = [line for line in lines if line.startswith("hint: ")]
    assert len(hints) == 1 and len(hints[0]) > len("hint: ") + 10, result.err
    as_json = run_cli(capsys, "--json", "init")
    document = json.loads(as_json.out)["error"]
    assert document["hint"] == hints[0].removeprefix("hint: ") and document["exit_code"] == result.code


def test_a_usage_error_without_a_hint_of_its_own_names_the_commands_help(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refusing() -> None:
        raise UsageError("that cannot be done")

    monkeypatch.setattr(cmd_init, "init", refusing)
    result = run_cli(capsys, "init")
    assert result.code == 2
    assert result.err.splitlines() == [
        "error: that cannot be done",
        "hint: specops init --help",
    ]


@pytest.mark.parametrize(
    ("args", "error", "hint"),
    [
        (["deploy"], "Missing argument 'HOST|GROUP'.", "specops deploy --help"),
        (["diagnose"], "Missing argument 'HOST|ENGINE'.", "specops diagnose --help"),
        (["deploy", "llm-two", "--build", ".", "--forse"], "No such option: --forse", "specops deploy --help"),
        (["diff"], "Missing argument 'HOST|ENGINE'.", "specops diff --help"),
        (
            ["deploy", "llm-two", "--build", ".", "--canary", "x"],
            "Invalid value for '--canary'",
            "specops deploy --help",
        ),
        (["logs", "llm-two", "-n", "0"], "Invalid value for '-n' / '--lines'", "specops logs --help"),
        (["completion", "tcsh"], "Invalid value for 'SHELL'", "specops completion --help"),
        (["nosuch"], "No such command 'nosuch'.", "specops --help"),
        (["deplyo", "llm-two"], "No such command 'deplyo'. Did you mean 'deploy'?", "specops --help"),
        (["--bogus", "status"], "No such option: --bogus", "specops --help"),
        (["config", "show"], "No such command 'show'.", "specops config --help"),
        (["lock", "release"], "Missing argument 'HOST'.", "specops lock release --help"),
    ],
)
def test_a_parser_refusal_has_error_and_hint_lines_and_exits_2(
    args: list[str], error: str, hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(capsys, *args)
    assert result.code == 2 and result.out == ""
    lines = result.err.splitlines()
    assert lines[0].startswith(f"error: {error}") and lines[-1] == f"hint: {hint}", result.err
    assert "Usage:" not in result.err and "Try '" not in result.err


def test_a_parser_refusal_with_json_is_the_json_error_document(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "--json", "diagnose")
    document = json.loads(result.out)["error"]
    assert result.code == 2 and result.err == ""
    assert document == {"message": "Missing argument 'HOST|ENGINE'.", "lines": ["Missing argument 'HOST|ENGINE'."],
                        "hint": "specops diagnose --help", "exit_code": 2}  # fmt: skip


def test_a_bare_command_line_still_shows_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    for args in ([], ["lock"]):
        result = run_cli(capsys, *args)
        assert result.code == 2 and "Usage: specops" in result.out + result.err and "error:" not in result.err


def _every_command() -> list[list[str]]:
    commands: list[list[str]] = [[]]
    for name, (module_name, attribute, is_group) in COMMANDS.items():
        if not is_group:
            commands.append([name])
            continue
        group = getattr(importlib.import_module(f"specops.cli.{module_name}"), attribute)
        commands += [[name, sub.name] for sub in group.registered_commands if sub.name]
    return commands


PYTHON_TYPE_MARKERS = (
    re.compile(r"\{[A-Za-z_|]+\}"),  # {names}, {host}: typer's required argument
    re.compile(r"<[a-z][A-Za-z_\[\]| ]*>"),  # <str>, <list[str]>, <float range>, <path>, <bash|zsh|fish>
    re.compile(r"\[(str|int|float|Path)\]"),
)


@pytest.mark.parametrize("command", _every_command(), ids=lambda words: " ".join(words) or "specops")
def test_every_help_names_values_by_metavar_not_by_python_type(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(capsys, *command, "--help")
    assert result.code == 0 and "Usage: specops" in result.out
    for marker in PYTHON_TYPE_MARKERS:
        assert not marker.search(result.out), f"{marker.pattern} in:\n{result.out}"


def test_the_help_shows_the_metavars(capsys: pytest.CaptureFixture[str]) -> None:
    deploy = run_cli(capsys, "deploy", "--help").out
    assert "Usage: specops deploy [OPTIONS] HOST|GROUP..." in deploy
    for shown in ("--build PATH", "--patch PATH", "-p, --profile NAME", "--lock-wait SECONDS", "--canary N"):
        assert shown in deploy
    assert "Usage: specops rollback [OPTIONS] [HOST]\n" in run_cli(capsys, "rollback", "--help").out
    assert "--only ID[,ID]" in run_cli(capsys, "doctor", "--help").out
    assert "Usage: specops diff [OPTIONS] HOST|ENGINE [OTHER]\n" in run_cli(capsys, "diff", "--help").out
    assert "--config PATH" in run_cli(capsys, "--help").out


def _documented_refusals() -> list[tuple[str, list[str]]]:
    """Each `$ specops ...` example in exit-codes.md and troubleshooting.md's code blocks, with the lines the
    docs show under it."""
    examples: list[tuple[str, list[str]]] = []
    for page in ("exit-codes.md", "troubleshooting.md"):
        text = (EXIT_CODES_DOC.parent / page).read_text(encoding="utf-8")
        for block in re.findall(r"^```\n(.*?)^```$", text, re.MULTILINE | re.DOTALL):
            for example in re.split(r"^(?=\$ specops )", block, flags=re.MULTILINE):
                if example.startswith("$ specops "):
                    command, *shown = example.rstrip("\n").splitlines()
                    examples.append((command.removeprefix("$ specops "), shown))
    return examples


@pytest.mark.parametrize(("command", "shown"), _documented_refusals(), ids=lambda value: str(value)[:40])
def test_the_documented_parser_refusals_are_what_specops_prints(
    command: str, shown: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(capsys, *command.split())
    assert result.code == 2 and result.err.splitlines() == shown


def test_the_docs_show_parser_refusals() -> None:
    assert len(_documented_refusals()) >= 3
