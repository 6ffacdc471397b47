"""Colour only for a person at a terminal: NO_COLOR, --no-color and a pipe all give plain text."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.conftest import VALID_HOST

ESC = b"\x1b["


def _on_a_terminal(args: list[str], cwd: Path, **extra: str) -> bytes:
    """Run `specops ARGS` with stdout and stderr on a pseudo-terminal; what the terminal received."""
    env = {key: value for key, value in os.environ.items() if key not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    env.update(TERM="xterm-256color", **extra)
    master, slave = pty.openpty()
    try:
        subprocess.run([sys.executable, "-m", "specops", *args], stdout=slave, stderr=slave, cwd=cwd, env=env,
                       timeout=60, check=False)  # fmt: skip
    finally:
        os.close(slave)
    received = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child's side is closed and everything has been read
            break
        if not chunk:
            break
        received += chunk
    os.close(master)
    return received


@pytest.fixture
def inventory(config_dir: Path) -> Path:
    (config_dir / "specops.toml").write_text(VALID_HOST, encoding="utf-8")
    return config_dir


def test_a_terminal_gets_colour_unless_no_color_or_the_option_says_not(inventory: Path) -> None:
    coloured = _on_a_terminal(["render", "nope"], inventory)
    assert ESC + b"1;31merror:" in coloured
    for plain in (
        _on_a_terminal(["render", "nope"], inventory, NO_COLOR="1"),
        _on_a_terminal(["--no-color", "render", "nope"], inventory),
    ):
        assert ESC not in plain
        assert plain.startswith(b"error: unknown host 'nope' in specops.toml\r\n")


def test_a_pipe_gets_plain_text(inventory: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key not in ("NO_COLOR", "FORCE_COLOR")}
    for args in (["render", "nope"], ["hosts"]):
        done = subprocess.run([sys.executable, "-m", "specops", *args], capture_output=True, cwd=inventory,
                              env={**env, "TERM": "xterm-256color"}, timeout=60, check=False)  # fmt: skip
        assert ESC not in done.stdout + done.stderr
        assert (done.stdout + done.stderr).strip()


def test_no_color_option_does_not_leak_into_later_runs(
    capsys: pytest.CaptureFixture[str], inventory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.unit.clirun import run_cli

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert run_cli(capsys, "--no-color", "hosts").code == 0
    assert "NO_COLOR" not in os.environ


def test_a_pipe_gets_tables_never_padded_cut_or_wrapped(config_dir: Path) -> None:
    hostname = ".".join(["h" * 60] * 8)  # a row far wider than any screen
    wide = VALID_HOST + f'[hosts.far]\nssh = "root@{hostname}"\npython = "/p"\nmodel_path = "/m"\n'
    (config_dir / "specops.toml").write_text(wide, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "specops", "hosts"], capture_output=True, cwd=config_dir,
                          timeout=60, check=False, text=True)  # fmt: skip
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) == 3
    assert [line.split()[0] for line in lines] == ["HOST", "llm-two", "far"]
    assert hostname in lines[2]
    assert not [line for line in lines if line != line.rstrip()]


def test_padding_is_dropped_only_at_a_lines_end_even_across_writes() -> None:
    import io

    from specops.cli.output import PlainStream

    out = io.StringIO()
    stream = PlainStream(out)
    for chunk in ("a  b   \n", "cell   ", "\nkept ", " inside\n", "last   "):
        stream.write(chunk)
    assert out.getvalue() == "a  b\ncell\nkept  inside\nlast"
