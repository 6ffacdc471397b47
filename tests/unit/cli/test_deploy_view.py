"""What a deploy looks like on stderr while it runs: lines in logs and pipes, live rows and a push bar on a terminal."""

from __future__ import annotations

import io
import re
import threading
import time

import pytest
from rich.console import Console

from specops.cli.deploy_view import LiveReporter
from specops.events import DONE_PHASE, Event

MIB = 2**20
BAR = "━"  # what rich draws a progress bar with


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=100, highlight=False, soft_wrap=True), out


def _bytes(host: str, sent: int, total: int) -> Event:
    data = {"sent_bytes": sent, "total_bytes": total}
    return Event(host, "push", f"{sent / MIB:,.1f} of {total / MIB:,.1f} MiB sent", level="progress", data=data)


def _journal(host: str, line: str) -> Event:
    return Event(host, "readiness", line, level="progress", data={"phase": "loading"})


def _refresh_threads() -> list[threading.Thread]:
    """rich's live display redraws from its own thread while it runs."""
    return [thread for thread in threading.enumerate() if type(thread).__name__ == "_RefreshThread"]


def _no_live_display() -> bool:
    """A stopped display's thread exits at its next tick (rich does not join it); wait that long, no more."""
    for thread in _refresh_threads():
        thread.join(timeout=2)
    return _refresh_threads() == []


def _deploy(reporter: LiveReporter) -> None:
    reporter.event(Event("llm-two", "push", "sending the release"))
    reporter.event(_bytes("llm-two", 16 * MIB, 64 * MIB))
    reporter.event(_bytes("llm-two", 64 * MIB, 64 * MIB))
    reporter.event(Event("llm-two", "gates", "waiting for readiness, then the smoke gate"))
    reporter.event(_journal("llm-two", "Load weight end. mem usage=14.2 GB"))
    reporter.event(Event("llm-two", "smoke", "health check slow", level="warn"))


def test_line_mode_prints_phases_and_hides_journal_lines() -> None:
    console, out = _console(terminal=False)
    with LiveReporter(0, console) as reporter:
        _deploy(reporter)
    assert out.getvalue().splitlines() == [
        "llm-two push sending the release",
        "llm-two gates waiting for readiness, then the smoke gate",
        "llm-two smoke health check slow",
    ]


def test_line_mode_with_verbose_adds_journal_lines_but_never_byte_counts() -> None:
    console, out = _console(terminal=False)
    with LiveReporter(1, console) as reporter:
        _deploy(reporter)
    assert out.getvalue().splitlines() == [
        "llm-two push sending the release",
        "llm-two gates waiting for readiness, then the smoke gate",
        "llm-two readiness Load weight end. mem usage=14.2 GB",
        "llm-two smoke health check slow",
    ]
    assert "\x1b[" not in out.getvalue()  # forced plain: no colours, no cursor moves


def test_line_mode_starts_no_live_display() -> None:
    console, out = _console(terminal=False)
    reporter = LiveReporter(0, console)
    reporter.event(_bytes("llm-two", 16 * MIB, 64 * MIB))
    assert _no_live_display()
    reporter.close()
    assert out.getvalue() == ""


def test_terminal_shows_phase_line_and_spinner_row_with_last_journal_line() -> None:
    console, out = _console(terminal=True)
    with LiveReporter(0, console) as reporter:
        reporter.event(Event("llm-two", "gates", "waiting for readiness, then the smoke gate"))
        reporter.event(_journal("llm-two", "Capture cuda graph begin"))
        reporter.event(_journal("llm-two", "Load weight end. mem usage=14.2 GB"))
    lines, rows = _screen(out.getvalue())
    assert lines == ["llm-two gates waiting for readiness, then the smoke gate"]  # no journal lines without -v
    assert rows[0].split() == ["llm-two", "gates", "waiting", "for", "readiness,", "then", "the", "smoke", "gate"]
    assert rows[-1].split() == ["llm-two", "readiness", "Load", "weight", "end.", "mem", "usage=14.2", "GB"]


def test_terminal_truncates_long_journal_lines_to_the_width() -> None:
    console, out = _console(terminal=True)
    with LiveReporter(0, console) as reporter:
        reporter.event(_journal("llm-two", "x" * 300 + "\nsecond line"))
    _, rows = _screen(out.getvalue())
    assert rows
    assert all(len(row) <= 98 and row.endswith("x…") for row in rows)  # 100 less the spinner and its gap


def test_terminal_shows_a_bar_for_a_large_push_and_drops_it_when_done() -> None:
    console, out = _console(terminal=True)
    with LiveReporter(2, console) as reporter:
        reporter.event(Event("llm-two", "push", "sending the release"))
        reporter.event(_bytes("llm-two", 16 * MIB, 64 * MIB))
        _, rows = _screen(out.getvalue())
        reporter.event(_bytes("llm-two", 64 * MIB, 64 * MIB))
        done_at = len(out.getvalue())
    assert rows[-1].startswith("llm-two push ━")
    assert rows[-1].split()[3:5] == ["25%", "16.0/64.0"]
    assert "MiB" in rows[-1]
    lines, rows_after = _screen(out.getvalue()[done_at:])
    assert rows_after and all(
        row.split() == ["llm-two", "push", "64.0", "of", "64.0", "MiB", "sent"] for row in rows_after
    )
    lines, _ = _screen(out.getvalue())
    assert lines == ["llm-two push sending the release"]  # byte counts are never printed as lines, even with -vv


def test_terminal_shows_no_bar_for_a_small_push() -> None:
    console, out = _console(terminal=True)
    with LiveReporter(2, console) as reporter:
        reporter.event(Event("llm-two", "push", "sending the release"))
        reporter.event(_bytes("llm-two", 1 * MIB, 4 * MIB))
        reporter.event(_bytes("llm-two", 4 * MIB, 4 * MIB))
    _, rows = _screen(out.getvalue())
    assert rows[-1].split() == ["llm-two", "push", "4.0", "of", "4.0", "MiB", "sent"]  # the count is the row's message
    assert BAR not in out.getvalue()
    assert "%" not in out.getvalue()
    assert _screen(out.getvalue())[0] == ["llm-two push sending the release"]


def test_terminal_with_verbose_prints_journal_lines_above_the_rows() -> None:
    console, out = _console(terminal=True)
    with LiveReporter(1, console) as reporter:
        reporter.event(Event("llm-two", "gates", "waiting for readiness, then the smoke gate"))
        reporter.event(_journal("llm-two", "Load weight end. mem usage=14.2 GB"))
    assert _screen(out.getvalue())[0] == [
        "llm-two gates waiting for readiness, then the smoke gate",
        "llm-two readiness Load weight end. mem usage=14.2 GB",
    ]


def test_close_stops_the_live_display_and_is_idempotent() -> None:
    assert _no_live_display()
    console, out = _console(terminal=True)
    reporter = LiveReporter(0, console)
    reporter.event(_journal("llm-two", "Capture cuda graph begin"))
    assert len(_refresh_threads()) == 1
    reporter.close()
    reporter.close()
    assert _no_live_display()
    closed_at = len(out.getvalue())
    reporter.event(Event("llm-two", "smoke", "running the smoke gate"))
    reporter.event(_journal("llm-two", "a late journal line"))
    assert _screen(out.getvalue()[closed_at:]) == (["llm-two smoke running the smoke gate"], [])  # lines, no rows


def test_the_context_manager_closes_on_errors() -> None:
    console, _ = _console(terminal=True)
    try:
        with LiveReporter(0, console) as reporter:
            reporter.event(Event("llm-two", "push", "sending the release"))
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert _no_live_display()


def test_events_from_many_threads_at_once() -> None:
    for terminal in (True, False):
        console, out = _console(terminal)
        with LiveReporter(1, console) as reporter:
            start = threading.Barrier(8)

            def worker(host: str, reporter: LiveReporter = reporter, start: threading.Barrier = start) -> None:
                start.wait()
                reporter.event(Event(host, "push", "sending the release"))
                for sent in range(0, 65, 8):
                    reporter.event(_bytes(host, sent * MIB, 64 * MIB))
                for n in range(5):
                    reporter.event(_journal(host, f"line {n}"))
                reporter.event(Event(host, "smoke", "running the smoke gate"))

            threads = [threading.Thread(target=worker, args=(f"gpu-{n}",)) for n in range(8)]
            for thread in threads:
                thread.start()
            deadline = time.monotonic() + 60  # far beyond the ~1 s this takes on a loaded machine: a hang, not slowness
            for thread in threads:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
            assert not any(thread.is_alive() for thread in threads), _stacks()
        lines, _ = _screen(out.getvalue())
        assert len(lines) == 8 * 7
        for n in range(8):
            assert f"gpu-{n} push sending the release" in lines
            assert f"gpu-{n} readiness line 4" in lines
            assert f"gpu-{n} smoke running the smoke gate" in lines
    assert _no_live_display()


def _stacks() -> str:
    """Every thread's stack: where a hang in the live view waits (a lock, rich's refresh thread, a write)."""
    import faulthandler
    import tempfile

    with tempfile.TemporaryFile("w+") as dump:
        faulthandler.dump_traceback(dump, all_threads=True)
        dump.seek(0)
        return dump.read()


def _screen(text: str) -> tuple[list[str], list[str]]:
    """What was drawn: the permanent lines, and every drawing of a live row (spinner stripped), in order."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    lines, rows = [], []
    for line in re.split(r"[\r\n]", plain):
        if line.strip() and "\u2800" <= line[0] <= "\u28ff":  # rows start with the spinner (braille dots)
            rows.append(line[2:].rstrip())
        elif line.strip():
            lines.append(line.rstrip())
    return lines, rows


def test_a_finished_host_leaves_its_line_and_its_row_goes() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    with LiveReporter(0, console=console) as reporter:
        reporter.event(Event("llm-one", "gates", "waiting for readiness"))
        reporter.event(Event("llm-two", "gates", "waiting for readiness"))
        done_at = len(out.getvalue())
        reporter.event(Event("llm-one", DONE_PHASE, "deployed; serving r-02"))
        drawn = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue()[done_at:])
    lines, _ = _screen(drawn)
    # the live area also redraws itself 10 times a second: a redraw just before the event still has llm-one
    _, rows = _screen(drawn[drawn.index("deployed; serving r-02") :])
    assert lines[0] == "llm-one done deployed; serving r-02"
    assert rows and all(row.startswith("llm-two") for row in rows)  # redrawn at once, without llm-one


def test_a_hosts_error_is_named_once_with_no_class_name(capsys: pytest.CaptureFixture[str]) -> None:
    """A locked host's error already starts with its name; the summary and the live line do not add it again."""
    from specops.cli.deploy_view import print_summary
    from specops.deploy.outcome import HostOutcome, Outcome
    from specops.errors import ExitCode, LockHeld

    error = LockHeld("fd1: locked by deploy alice@laptop pid 42 for 3 min")
    print_summary({"fd1": HostOutcome("fd1", Outcome.LOCKED, ExitCode.LOCK_HELD, cause=error.message)})
    console, written = _console(terminal=False)
    with LiveReporter(verbose=0, console=console) as view:
        view.event(Event("fd1", DONE_PHASE, f"stopped: {ExitCode.cause(error)}", level="error"))
        view.event(Event("fd1", "lock", error.message, level="warn"))
    summary, lines = capsys.readouterr().out, written.getvalue()
    assert "fd1: locked by deploy alice@laptop" in summary and "fd1: fd1:" not in summary
    assert lines.splitlines() == [
        "fd1 done stopped: another specops holds the host's lock",
        "fd1 lock locked by deploy alice@laptop pid 42 for 3 min",
    ]
    assert "LockHeld" not in summary + lines
