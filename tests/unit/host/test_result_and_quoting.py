"""Result helpers, argv checks and the one-time quoting, tested against a real /bin/sh."""

from __future__ import annotations

import json
import sys

import pytest

from specops.config.secrets import Secret
from specops.errors import CommandFailed, ExitCode, RemoteTimeout
from specops.host.base import Result, checked_argv, display_command, wire_command, with_deadline, with_env
from specops.host.local import LocalHost

NASTY = ["two words", "it's", 'say "hi"', "$HOME", "a;b", "*", "line1\nline2", "back\\slash", "", "-n", "ünï"]


def _result(stderr: bytes = b"", stdout: bytes = b"", code: int = 1) -> Result:
    return Result(("systemctl", "restart", "sglang"), code, stdout, stderr, 0.25)


def test_result_helpers() -> None:
    result = _result(stdout=b"ok \xff\n", code=0)
    assert result.ok
    assert result.text == "ok \ufffd\n"
    assert not _result().ok
    assert result.command == "systemctl restart sglang"


def test_err_tail_keeps_the_last_lines() -> None:
    stderr = "".join(f"line {n}\n" for n in range(1, 31)).encode()
    assert _result(stderr).err_tail(3) == "line 28\nline 29\nline 30"
    assert _result(stderr).err_tail().splitlines()[0] == "line 11"
    assert _result(b"").err_tail() == ""


def test_command_failed_shows_where_what_and_the_stderr_tail() -> None:
    stderr = b"".join(f"noise {n}\n".encode() for n in range(40)) + b"Job for sglang.service failed.\n"
    error = CommandFailed(_result(stderr, code=1), host="llm-one")
    assert error.exit_code == ExitCode.REMOTE_FAILED == 5
    lines = error.message.splitlines()
    assert lines[0] == "llm-one: `systemctl restart sglang` exited with 1"
    assert lines[-1] == "  | Job for sglang.service failed."
    assert len(lines) == 21
    assert error.result.exit_code == 1


def test_remote_timeout_names_the_command() -> None:
    error = RemoteTimeout("sleep 300", 2.0, host="llm-one")
    assert error.exit_code == 5
    assert error.message == "llm-one: `sleep 300` did not finish within 2s and was killed"


def test_repr_never_shows_output_or_secrets() -> None:
    result = Result(("env-writer", Secret("hf_TOKEN123")), 0, b"hf_TOKEN123", b"", 0.1)
    assert "hf_TOKEN123" not in repr(result)
    assert "hf_TOKEN123" not in result.command
    assert result.command == "env-writer '***'"


def test_secret_reaches_the_wire_but_not_the_display() -> None:
    argv = ["echo", Secret("s3cr3t value")]
    assert wire_command(argv) == "echo 's3cr3t value'"
    assert display_command(argv) == "echo '***'"


def test_shell_strings_and_bad_words_are_refused() -> None:
    with pytest.raises(TypeError, match="not a shell string"):
        checked_argv("ls -l /tmp")
    with pytest.raises(ValueError, match="empty"):
        checked_argv([])
    with pytest.raises(ValueError, match="NUL"):
        checked_argv(["echo", "a\0b"])
    with pytest.raises(ValueError, match="environment variable name"):
        checked_argv(["true"], env={"BAD-NAME": "x"})


def test_quoted_once_argv_survives_a_real_posix_shell() -> None:
    """What sshd does with our command line: the login shell parses it. Every word must come back exact."""
    argv = [sys.executable, "-c", "import sys, json; print(json.dumps(sys.argv[1:]))", *NASTY]
    result = LocalHost().run(["sh", "-c", wire_command(argv)], check=True)
    assert json.loads(result.text) == NASTY


def test_env_and_deadline_prefixes_run_in_a_real_shell() -> None:
    argv = with_deadline(with_env(["sh", "-c", 'printf %s "$GREETING"'], {"GREETING": "hi there; $x"}), 5)
    assert argv[:4] == ["timeout", "-k", "5", "5.000"]
    assert LocalHost().run(["sh", "-c", wire_command(argv)], check=True).text == "hi there; $x"


def test_a_huge_output_is_cut_with_a_pointer_not_dumped() -> None:
    listing = b'{"ok":true,"releases":[' + b'{"id":"20260101-000000-abcdef12"},' * 700 + b"]}\n"
    error = CommandFailed(_result(b"", code=3, stdout=listing), host="llm-one")
    lines = error.message.splitlines()
    assert lines[0] == "llm-one: `systemctl restart sglang` exited with 3"
    assert lines[1].startswith("  | … 21,777 ") and "more characters not shown (run the command on the host" in lines[1]
    assert len(error.message) < 2300
    assert lines[-1].endswith("]}")


def test_an_audit_message_keeps_its_cause_and_cuts_the_output() -> None:
    from specops.ops.audit import new_entry

    message = "llm-one: the release script (session) exited with 1\n  | " + "x" * 30_000
    entry = new_entry("deploy", outcome="error", message=message)
    kept = entry["message"].splitlines()
    assert kept[0] == "llm-one: the release script (session) exited with 1"
    assert kept[1].startswith("… 27,956 more characters") and len(entry["message"]) < 2300
