"""Host.stream on LocalHost (real processes) and RecordingHost (scripted answers)."""

from __future__ import annotations

import sys

from specops.host.local import LocalHost
from specops.host.recording import RecordingHost, reply
from tests.unit.host import stream_cases


def test_a_conversation_on_one_command() -> None:
    stream_cases.conversation(LocalHost(), sys.executable)


def test_writing_to_a_command_that_exited_returns_false_and_wait_tells_how_it_ended() -> None:
    stream_cases.write_to_a_command_that_exited(LocalHost())


def test_read_line_past_the_deadline_is_a_remote_timeout_and_kills_the_command() -> None:
    stream_cases.read_line_past_the_deadline(LocalHost())


def test_a_missing_program_streams_like_exit_127() -> None:
    with LocalHost().stream(["no-such-program-specops"]) as command:
        assert not command.write(b"input")
        result = command.wait(check=False)
    assert result.exit_code == 127
    assert b"no-such-program-specops" in result.stderr


def test_recording_streams_the_scripted_answer_and_records_the_command() -> None:
    host = RecordingHost("box").script(["python3"], reply(stdout="one\ntwo\n", exit_code=3))
    with host.stream(["python3", "-c", "x"]) as command:
        assert command.read_line() == b"one\n"
        assert command.write(b"anything")
        assert command.read_line() == b"two\n"
        assert command.read_line() == b""
        assert command.wait(check=False).exit_code == 3
    assert host.commands == [("python3", "-c", "x")]
