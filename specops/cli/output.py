"""How results and errors look: rich on a terminal, plain JSON with --json. Only the CLI prints.

Colour follows the reader: none when the stream is not a terminal (a pipe, a file, CI logs get plain text),
none when NO_COLOR is set (https://no-color.org; `--no-color` sets it for the run). rich's own detection
does both; `color_system` is forced to None here as well so a wrongly set TERM cannot bring colour back.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from specops.errors import ExitCode, SpecopsError

if TYPE_CHECKING:
    from rich.console import Console


def colour_wanted(stream: TextIO) -> bool:
    """Colour only for a person at a terminal who has not asked for none."""
    return not os.environ.get("NO_COLOR") and stream.isatty()


def stdout_console() -> Console:
    """Tables for people; when piped, plain and wide enough that nothing is cut or wrapped."""
    from rich.console import Console

    colour = colour_wanted(sys.stdout)
    return Console(highlight=False, width=None if sys.stdout.isatty() else 400,
                   color_system="auto" if colour else None)  # fmt: skip


def stderr_console() -> Console:
    from rich.console import Console

    colour = colour_wanted(sys.stderr)
    return Console(stderr=True, highlight=False, soft_wrap=True, color_system="auto" if colour else None)


def escape(text: str) -> str:
    """Text shown as-is inside rich markup (a journal line with `[brackets]` is not a style)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def print_json(data: Any) -> None:
    """Machine-readable output: one JSON document on stdout."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def print_raw(text: str) -> None:
    """Exact text (a unit file) with no markup, no wrapping, so it can be piped to a file."""
    sys.stdout.write(text)


def report_error(error: SpecopsError, as_json: bool) -> None:
    """The one place an error reaches the user: red lines, a hint, no traceback."""
    if as_json:
        lines = getattr(error, "lines", [error.message])
        print_json({"error": {"message": error.message, "lines": lines, "hint": error.hint,
                              "exit_code": int(error.exit_code)}})  # fmt: skip
        return
    from rich.markup import escape

    console = stderr_console()
    for line in error.message.splitlines() or [type(error).__name__]:
        console.print(f"[bold red]error:[/] {escape(line)}")
    if error.hint:
        console.print(f"[yellow]hint:[/] {escape(error.hint)}")


def report_internal_error(error: BaseException) -> int:
    """A bug in specops: say so in one line and how to get the traceback."""
    from rich.markup import escape

    stderr_console().print(
        f"[bold red]internal error:[/] {escape(type(error).__name__)}: {escape(str(error))}\n"
        "[yellow]hint:[/] re-run with --debug for the traceback, and report it"
    )
    return int(ExitCode.INTERNAL)
