"""Reading one journal line the way a person does: peel the prefixes, see whether it is traceback source code,
and know whether it belongs to a request or to an import SGLang chose to ignore.

Why: the same SGLang message reaches the journal wrapped in journald's `Nov 29 17:22:14 host unit[pid]:`, docker
compose's `sglang-1  | `, SGLang's own `[2025-11-01 16:50:36 TP0] `, vLLM's `(EngineCore_DP0 pid=1) ERROR ...]`, or
a CI timestamp. Patterns must match the message, not the line start. Python also prints the *source* of every
frame under `File "...", line N`; `raise RuntimeError(f"NCCL error: ...")` there is code, not a second error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Wrappers added by whatever carried the line (journald, docker, CI, a quote in an issue). Peeled repeatedly.
_OUTER = re.compile(
    r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]+ [\w@./-]+(?:\[\d+\])?: "  # journald short
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?(?: [\w.-]+ [\w@./-]+(?:\[\d+\])?:)? "  # iso
    r"|\[\d{4}-\d\d-\d\dT[^\]]*\] "  # [2025-11-06T02:08:27.278Z]
    r"|[\w.-]+ +\| "  # docker compose: sglang-1  |
    r"|> ?|\s+\| |- |E {3}"  # quoted, piped, listed, pytest
    r"|\[rank\d+\]: ?"  # torch elastic
    r"|\((?:\w+ )?pid=\d+\) )"  # vLLM / ray process tag
)
# Headers of one log record (the logger's own). Seeing one means a new record starts.
_RECORD = re.compile(
    r"^(?:\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[^\]]*\] "  # SGLang [2025-08-24 06:25:37 TP0]
    r"|\[\d\d-\d\d \d\d:\d\d:\d\d[^\]]*\] |\[\d\d:\d\d:\d\d(?: [^\]]*)?\] "  # [12-16 14:27:08], [23:23:54 TP7]
    r"|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w./-]+:\d+\]? "  # vLLM
    r"|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w./-]+:\d+\] ?"  # glog
    r"|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)(?: \([\w.]+\))?: +)"  # uvicorn / logging default
)
_FRAME = re.compile(r'^\s*File "([^"]+)"')
_CARETS = re.compile(r"^\s*[\^~]+\s*$")
# What Python prints after a frame when it is not the frame's source: the exception, or the next traceback.
_NOT_SOURCE = re.compile(r"^(?:[A-Za-z_][\w.]*(?::|$)|Traceback |During handling|The above exception)")
_SPEC_PATH = re.compile(r"speculative|spec_decode|eagle|dflash|ddtree|draft|mtp|nextn", re.IGNORECASE)
_OPENERS = (
    ("request", re.compile(r"Error in request:|Exception in ASGI application")),
    ("ignored", re.compile(r"Ignore import error when loading")),
)


@dataclass
class Line:
    """What a scanner needs to know about one line."""

    message: str  # the text with carrier and logger prefixes peeled
    code: bool  # traceback source code or a frame header: not a message
    context: str  # "request", "ignored" or "" (start-up / the process itself)
    spec_frames: bool  # the current traceback runs through speculative-decoding code


def peel(line: str) -> tuple[str, bool]:
    """The message without prefixes, and whether a logger's record header was among them (a new record)."""
    text, record = line.rstrip("\r\n"), False
    for _ in range(8):  # a bounded number of wrappers; each pass peels one
        outer = _OUTER.match(text)
        if outer and outer.end() > 0:
            text = text[outer.end() :]
            continue
        header = _RECORD.match(text)
        if header:
            text, record = text[header.end() :], True
            continue
        break
    return text, record


class LineReader:
    """Carries what one line tells about the next: a frame header makes the next indented line source code; an
    `Error in request:` or `Ignore import error` makes the rest of that record belong to it."""

    def __init__(self) -> None:
        self._after_frame = False
        self._context = ""
        self._spec_frames = False

    def read(self, raw: str) -> Line:
        message, record = peel(raw)
        if record:
            self._context = ""
        line_context = self._context
        for context, opener in _OPENERS:
            if opener.search(message):
                # The rest of the record is the lines up to the next record header; a log without headers
                # gives no such boundary, so there the context covers the opening line only.
                line_context, self._context = context, (context if record else "")
        code = self._is_code(message, record)
        return Line(message, code, line_context, self._spec_frames)

    def _is_code(self, message: str, record: bool) -> bool:
        frame = _FRAME.match(message)
        if frame:
            self._after_frame = True
            self._spec_frames = self._spec_frames or bool(_SPEC_PATH.search(frame.group(1)))
            return True
        if "Traceback (most recent call last)" in message:
            self._spec_frames = False
        # The line under a frame is its source code: indented, or flush left where a paste lost the indentation.
        # A logger's record (another rank's line, interleaved) is never source.
        source = self._after_frame and not record and (message[:1].isspace() or not _NOT_SOURCE.match(message))
        self._after_frame = False
        return source or bool(_CARETS.match(message))
