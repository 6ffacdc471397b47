"""`specops --help` printed from a kept copy of typer's own rendering, without loading typer.

Why: `specops --help` is what an operator types first, and typer alone costs most of its time (the interpreter
starts in ~15 ms; typer and click take ~80 ms more). The screen depends only on specops's command-line code,
typer's version, the Python version and the width click wraps to, so the first `specops --help` renders it with
typer as always and keeps it; later ones at the same width print the kept text. The copy is a private file
(specops/localdirs.py: this user's folder and file, tagged with this user's key), named by a hash of everything
the screen depends on, so an upgrade of specops or typer renders it afresh. Any trouble with the copy (missing,
unreadable, not ours) only costs the render.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import sys
from importlib.util import find_spec
from pathlib import Path

HELP_ARGS = ["--help"]  # only the bare top-level help: options before it could change the screen
KEEP = 4  # renderings kept (a few terminal widths)
CLICK_MAX_WIDTH = 80  # click's HelpFormatter: the terminal's width, at most 80, less 2, at least 50


def help_width() -> int:
    """The width click wraps the help to (click.formatting.HelpFormatter's default, from the terminal's width as
    shutil.get_terminal_size reads it: $COLUMNS, else the terminal on stdout, else 80; shutil itself costs more
    to import than this whole screen takes to print)."""
    return max(min(_columns(), CLICK_MAX_WIDTH) - 2, 50)


def _columns() -> int:
    with contextlib.suppress(ValueError):
        columns = int(os.environ.get("COLUMNS", "0"))
        if columns > 0:
            return columns
    try:
        columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 0
    except (AttributeError, ValueError, OSError):
        columns = 0
    return columns or 80


def help_key(width: int) -> str:
    """A hash of what the screen depends on: specops's CLI sources, typer's and click's installed code (by file
    identity: a new version is new files), the Python version and the width."""
    digest = hashlib.sha256(f"{sys.version}\0{width}\0".encode())
    cli = Path(__file__).parent
    for source in sorted([*cli.rglob("*.py"), cli.parent / "__init__.py"]):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    spec = find_spec("typer")
    if spec is None or spec.origin is None:
        raise OSError("typer is not installed")
    for module in sorted(Path(spec.origin).parent.rglob("*.py")):
        status = module.stat()
        digest.update(f"{module}\0{status.st_size}\0{status.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:32]


def _name(width: int) -> str:
    return f"help-{help_key(width)}.txt"


def _folder() -> Path:
    from specops.localdirs import cache_root

    return cache_root() / "help"


def kept_help() -> str | None:
    """The kept screen for this width, or None (then typer renders it)."""
    from specops.localdirs import read_private

    try:
        data = read_private(_folder(), _name(help_width()))
        return data.decode("utf-8") if data is not None else None
    except (OSError, UnicodeDecodeError):
        return None


def render_and_keep() -> int:
    """Run `specops --help` through typer, print it and keep it; the exit code as typer gave it."""
    from specops.cli.main import main

    screen = io.StringIO()
    with contextlib.redirect_stdout(screen):
        code = main(list(HELP_ARGS))
    text = screen.getvalue()
    sys.stdout.write(text)
    if code == 0 and text:
        with contextlib.suppress(OSError):
            from specops.localdirs import write_private

            write_private(_folder(), _name(help_width()), text.encode("utf-8"), siblings="help-*.txt", keep=KEEP)
    return code


def print_help() -> int:
    """`specops --help`: the kept screen when there is one for this width, else typer's (then kept)."""
    text = kept_help()
    if text is None:
        return render_and_keep()
    sys.stdout.write(text)
    return 0
