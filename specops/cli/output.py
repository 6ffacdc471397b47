"""How results and errors look: rich on a terminal, plain JSON with --json. Only the CLI prints.

Colour follows the reader: none when the stream is not a terminal (a pipe, a file, CI logs get plain text),
none when NO_COLOR is set (https://no-color.org; `--no-color` sets it for the run). rich's own detection
does both; `color_system` is forced to None here as well so a wrongly set TERM cannot bring colour back.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import IO, TYPE_CHECKING, Any, Literal, TextIO, cast

from specops.errors import ExitCode, SpecopsError

if TYPE_CHECKING:
    from rich.console import Console


def colour_wanted(stream: TextIO) -> bool:
    """Colour only for a person at a terminal who has not asked for none."""
    return not os.environ.get("NO_COLOR") and stream.isatty()


PLAIN_WIDTH = 100_000  # wider than any table specops prints: off a terminal a table is never squeezed


class PlainStream:
    """A non-terminal stream as rich writes it, minus the spaces rich pads table cells with at a line's end.

    Why: off a terminal rich lays a table out as if the screen were PLAIN_WIDTH wide; its last column is padded
    to the widest cell, and `grep`/`diff`/a log file must not carry that padding. Trailing spaces of a write
    are held back until the next write shows whether the line goes on."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._held = ""

    def write(self, text: str) -> int:
        lines = (self._held + text).split("\n")
        last = lines.pop()
        kept = last.rstrip(" ")
        self._held = last[len(kept) :]
        self.stream.write("".join(line.rstrip(" ") + "\n" for line in lines) + kept)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        """The stream's own, so rich still draws ASCII tables for an ASCII-only reader (LANG=C)."""
        return getattr(self.stream, "encoding", None) or "utf-8"


def _console(stream: TextIO, stderr: bool) -> Console:
    """A terminal: rich's own width and wrapping. Anything else: plain lines, never padded, cut or wrapped.

    emoji=False: rich would turn `:ab:` in a PCI bus id (00000000:AB:00.0) or a path into an emoji."""
    from rich.console import Console

    colour: Literal["auto"] | None = "auto" if colour_wanted(stream) else None
    if stream.isatty():
        return Console(stderr=stderr, highlight=False, soft_wrap=stderr, color_system=colour, emoji=False)
    return Console(file=cast("IO[str]", PlainStream(stream)), highlight=False, width=PLAIN_WIDTH, soft_wrap=True,
                   color_system=colour, emoji=False)  # fmt: skip


def stdout_console() -> Console:
    """Tables and lines for people; when piped, plain and unpadded, so nothing is cut or wrapped."""
    return _console(sys.stdout, stderr=False)


def stderr_console() -> Console:
    """Errors and progress lines; on a terminal long lines flow on rather than being cut."""
    return _console(sys.stderr, stderr=True)


# What a terminal would act on rather than show: C0 controls but tab, DEL, C1 controls (U+0080..U+009F), the
# line and paragraph separators, and the bidirectional overrides that reorder what is shown.
_UNSHOWABLE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with every control character spelled out (`\\x1b`, `\\u2028`): an error quotes what the operator
    wrote (a config key, a value, a path), and an ESC from there must never reach the terminal as a command (set
    the title, move the cursor, hide the line that follows)."""
    return _UNSHOWABLE.sub(_spelled, text)


def _spelled(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str) -> str:
    """Text shown as-is inside rich markup (a journal line with `[brackets]` is not a style)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def unprefixed(host: str, text: str) -> str:
    """`text` without a leading `HOST: `, for a line the caller already starts with the host's name: an error
    message names its host for when it is shown alone, and `fd1: fd1: locked by ...` says it twice."""
    return text.removeprefix(f"{host}: ")


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
    lines = error.message.rstrip("\n").split("\n")  # only \n ends a line: U+2028 or \x85 is shown, not obeyed
    for line in lines if error.message else [ExitCode.cause(error)]:
        console.print(f"[bold red]error:[/] {escape(visible(line))}")
    if error.hint:
        console.print(f"[yellow]hint:[/] {escape(visible(error.hint))}")


def report_internal_error(error: BaseException) -> int:
    """A bug in specops: say so in one line and how to get the traceback."""
    from rich.markup import escape

    stderr_console().print(
        f"[bold red]internal error:[/] {escape(type(error).__name__)}: {escape(visible(str(error)))}\n"
        "[yellow]hint:[/] re-run with --debug for the traceback, and report it"
    )
    return int(ExitCode.INTERNAL)
