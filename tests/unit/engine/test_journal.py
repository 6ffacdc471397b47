"""The journal/systemctl argv builders and their parsers (pure)."""

from __future__ import annotations

from specops.commands import journal


def test_poll_is_one_shell_command_with_the_unit_and_cursor_as_arguments() -> None:
    argv = journal.poll_argv("sglang.service", "s=ab;i=1f;b=9")
    assert argv[:4] == ["sh", "-c", journal.POLL_SCRIPT, "specops-poll"]
    assert argv[4] == "sglang.service"
    assert ["journalctl", *argv[5:]] == journal.journal_argv("sglang.service", "s=ab;i=1f;b=9")
    assert argv[-2:] == ["--after-cursor", "s=ab;i=1f;b=9"] and "s=ab" not in argv[2]


def test_time_positions_use_since_and_none_reads_everything() -> None:
    assert journal.journal_argv("x.service", "@1764400000")[-2:] == ["--since", "@1764400000"]
    assert "--since" not in journal.journal_argv("x.service") and "--after-cursor" not in journal.journal_argv("x")
    assert journal.journal_argv("x.service", lines=50)[-2:] == ["-n", "50"]


def test_parse_poll_splits_state_lines_and_cursor() -> None:
    text = (
        "ActiveState=activating\nSubState=auto-restart\nNRestarts=2\nExecMainStatus=1\nExecMainPID=77\nMainPID=0\n"
        f"{journal.POLL_MARKER}\nline one\nline=two\n-- cursor: s=1;i=2\n"
    )
    state, lines, cursor = journal.parse_poll(text)
    assert state == journal.UnitState("activating", "auto-restart", 2, 1, 77, 0)
    assert state.failed and not state.running
    assert lines == ["line one", "line=two"] and cursor == "s=1;i=2"


def test_no_new_entries_keeps_no_cursor() -> None:
    state, lines, cursor = journal.parse_poll(f"ActiveState=active\nMainPID=9\n{journal.POLL_MARKER}\n")
    assert state.running and lines == [] and cursor is None


def test_invocation_journal_reads_only_the_current_run() -> None:
    argv = journal.invocation_journal_argv("sglang.service", lines=100)
    assert argv[0:2] == ["sh", "-c"] and argv[-2:] == ["sglang.service", "100"]
    assert "_SYSTEMD_INVOCATION_ID=$id" in argv[2]
