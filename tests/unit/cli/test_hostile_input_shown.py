"""Bad input, the last few: what an error quotes from the config cannot command the terminal, every line break
the docs promise to reject is rejected, a `name` key is a typo like any other, and --debug keeps the exit code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.clirun import run_cli
from tests.unit.conftest import VALID_HOST

TITLE = "\\u001b]0;owned\\u0007"  # in TOML: ESC ] 0 ; owned BEL sets the terminal's title


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (f'"bad{TITLE}key" = 1', "hosts.llm-two.bad\\x1b]0;owned\\x07key: unknown key"),
        ('"x\\u009b31m" = 1', "hosts.llm-two.x\\x9b31m: unknown key"),  # C1 CSI: ESC [ in one byte
        ('"x\\u2028error: all fine" = 1', "hosts.llm-two.x\\u2028error: all fine: unknown key"),
        ('"x\\u202ey" = 1', "hosts.llm-two.x\\u202ey: unknown key"),  # right-to-left override
    ],
)
def test_a_control_character_in_a_config_key_is_shown_spelled_out_never_sent_to_the_terminal(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path], line: str, shown: str
) -> None:
    write_config(VALID_HOST + line + "\n")
    result = run_cli(capsys, "config", "check")
    assert result.code == 3
    assert f"error: specops.toml: {shown}" in result.err.splitlines()[0]
    assert not any(char in result.err for char in "\x1b\x07\x9b\u2028\u202e")


@pytest.mark.parametrize("char", ["\\u0085", "\\u2028", "\\u2029", "\\u009b"])
def test_a_line_separator_in_a_value_is_rejected_like_a_newline(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path], char: str
) -> None:
    """systemd and sglang never see U+0085, U+2028 or U+2029 as a line break, but Python's splitlines, editors and
    log viewers do: `--served-model-name x<U+2028>--api-key y` reads as two lines to the one reviewing it."""
    write_config(VALID_HOST + f'extra_args = ["--log-level", "info{char}--enable-metrics"]\n')
    result = run_cli(capsys, "config", "check")
    assert result.code == 3
    spelled = char.replace("\\u00", "\\x")
    assert f"error: specops.toml: hosts.llm-two.extra_args.1: contains a control character ('{spelled}')" in result.err


def test_a_name_key_in_a_host_table_is_an_unknown_key(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    """`name = "llm-2"` looks like it renames the host; it was silently replaced by the table's name."""
    write_config(VALID_HOST + 'name = "llm-2"\n')
    result = run_cli(capsys, "config", "check")
    assert result.code == 3
    assert "error: specops.toml: hosts.llm-two.name: unknown key (a host's name is its table's: [hosts.llm-two])" in (
        result.err.splitlines()
    )


def test_debug_shows_the_traceback_and_keeps_the_exit_code(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    write_config(VALID_HOST)
    usage = run_cli(capsys, "--debug", "render", "no-such-host")
    assert usage.code == 2
    assert "Traceback (most recent call last):" in usage.err
    assert "error: unknown host 'no-such-host' in specops.toml" in usage.err.splitlines()
    write_config(VALID_HOST + f'"bad{TITLE}" = 1\n')
    config = run_cli(capsys, "--debug", "config", "check")
    assert config.code == 3 and "Traceback" in config.err and "\x1b" not in config.err


def test_an_emoji_code_in_shown_text_stays_text(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    """A PCI bus id like 00000000:AB:00.0 (or a key, a path) holds `:ab:`, which rich would draw as an emoji."""
    write_config(VALID_HOST + '"bus:AB:00" = 1\n')
    result = run_cli(capsys, "config", "check")
    assert result.code == 3
    assert "hosts.llm-two.bus:AB:00: unknown key" in result.err, result.err
