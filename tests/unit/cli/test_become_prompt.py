"""--ask-become-pass: asked on the terminal only; without one, a clear usage error before any host is touched."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from specops.cli import become_prompt
from tests.unit.clirun import run_cli
from tests.unit.conftest import VALID_HOST


def test_without_a_terminal_the_option_is_refused_with_exit_2(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(VALID_HOST + 'become = "sudo"\n')
    monkeypatch.setattr(become_prompt, "has_terminal", lambda: False)
    asked: list[str] = []
    monkeypatch.setattr(become_prompt.getpass, "getpass", lambda prompt: asked.append(prompt) or "x")
    result = run_cli(capsys, "--ask-become-pass", "status", "llm-two")
    assert result.code == 2
    assert result.err.splitlines() == [
        "error: --ask-become-pass needs a terminal to ask for the sudo password, and this run has none",
        "hint: run it from a terminal, or allow the login user NOPASSWD sudo on the hosts (docs/configuration.md)",
    ]
    assert asked == []  # never getpass's fallback, which reads stdin with echo on


def test_the_password_is_asked_once_and_never_printed(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(VALID_HOST + 'become = "sudo"\n')
    monkeypatch.setattr(become_prompt, "has_terminal", lambda: True)
    asked: list[str] = []
    monkeypatch.setattr(become_prompt.getpass, "getpass", lambda prompt: asked.append(prompt) or "hunter2 secret")
    result = run_cli(capsys, "-K", "--json", "hosts")
    assert result.code == 0, result.err
    assert asked == ["sudo password (of the login user on the hosts): "]
    assert '"become": "sudo"' in result.out
    assert "hunter2" not in result.out + result.err


def test_end_of_input_at_the_prompt_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(VALID_HOST)
    monkeypatch.setattr(become_prompt, "has_terminal", lambda: True)

    def end_of_input(prompt: str) -> str:
        raise EOFError

    monkeypatch.setattr(become_prompt.getpass, "getpass", end_of_input)
    result = run_cli(capsys, "--ask-become-pass", "hosts")
    assert (result.code, result.err.splitlines()[0]) == (
        2,
        "error: no sudo password was typed (end of input at the prompt)",
    )
