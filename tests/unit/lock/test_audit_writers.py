"""Every audit line lands whole, whoever writes it: the deploy's append on the host (APPEND_SCRIPT), the local
copy on the operator's machine, and the host-side rollback, guard and watch. A write(2) may write less than it
was given (a signal, a nearly full disk); a writer that does not loop leaves half a line, and the next line is
glued to it: both unreadable in `specops audit`."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from specops.ops import audit
from specops.remote.release.rollback import append_audit

ENTRY = {"action": "rollback", "outcome": "restarted", "message": "x" * 300}
LINE = (json.dumps(ENTRY) + "\n").encode()


def _short_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every write(2) writes at most 7 bytes, as a kernel may."""
    write = os.write

    def short(fd: int, data: bytes | memoryview) -> int:
        return write(fd, bytes(data[:7]))

    monkeypatch.setattr(os, "write", short)


def _host_script(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["-c", str(path)])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(LINE)))
    exec(compile(audit.APPEND_SCRIPT, "<audit append>", "exec"), {"__name__": "__main__"})


def _local(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    audit.append_locally(path, LINE)


def _host_side_rollback(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    append_audit(str(path.parent), ENTRY)


WRITERS: dict[str, Callable[[Path, pytest.MonkeyPatch], None]] = {
    "the deploy's append on the host": _host_script,
    "the local copy": _local,
    "the host-side rollback and guard": _host_side_rollback,
}


@pytest.mark.parametrize("writer", WRITERS, ids=list(WRITERS))
def test_an_audit_line_cut_short_by_the_kernel_is_still_written_whole(
    writer: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_bytes(b'{"action":"deploy"}\n')  # an earlier line: appended to, never overwritten
    _short_writes(monkeypatch)
    WRITERS[writer](path, monkeypatch)
    monkeypatch.undo()
    first, second = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(first) == {"action": "deploy"}
    assert {k: v for k, v in json.loads(second).items() if k != "schema"} == ENTRY


def test_the_host_script_is_the_host_side_writer_itself() -> None:
    """One writer: the script the deploy sends carries append_line's own body, not a copy that could drift."""
    assert "def append_line(" in audit.APPEND_SCRIPT
    assert "while view:" in audit.APPEND_SCRIPT and '"""' not in audit.APPEND_SCRIPT  # short: one argv word
