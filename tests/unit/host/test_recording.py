"""RecordingHost: scripted answers, recorded calls, loud failures for unscripted commands."""

from __future__ import annotations

import pytest

from specops.errors import CommandFailed, ExitCode, RemoteTimeout
from specops.host.recording import RecordingHost, UnexpectedCommand, reply


def test_prefix_and_predicate_rules_answer_in_order() -> None:
    host = RecordingHost("llm-one")
    host.script(["systemctl", "is-active"], reply(stdout="active\n"))
    host.script(lambda argv: argv[0] == "nvidia-smi", reply(stderr="not found", exit_code=127))
    assert host.run(["systemctl", "is-active", "sglang"]).text == "active\n"
    failed = host.run(["nvidia-smi", "-L"], check=False)
    assert (failed.exit_code, failed.stderr, failed.argv) == (127, b"not found", ("nvidia-smi", "-L"))
    assert host.commands == [("systemctl", "is-active", "sglang"), ("nvidia-smi", "-L")]


def test_answers_are_used_in_turn_and_the_last_repeats() -> None:
    host = RecordingHost().script(["cat", "/proc/loadavg"], reply(stdout="1"), reply(stdout="2"))
    assert [host.run(["cat", "/proc/loadavg"]).text for _ in range(3)] == ["1", "2", "2"]


def test_an_unscripted_command_fails_loudly_with_its_argv() -> None:
    host = RecordingHost("llm-one").script(["true"], reply())
    with pytest.raises(UnexpectedCommand) as caught:
        host.run(["rm", "-rf", "/opt/specops"])
    assert caught.value.message == "llm-one: no scripted reply for `rm -rf /opt/specops`"
    assert caught.value.exit_code == ExitCode.INTERNAL
    assert "true" in caught.value.hint


def test_default_reply_backs_a_dry_run() -> None:
    host = RecordingHost(default=reply())
    assert host.run(["systemctl", "daemon-reload"]).ok


def test_check_and_scripted_exceptions_behave_like_a_real_host() -> None:
    host = RecordingHost("llm-one")
    host.script(["false"], reply(stderr="boom", exit_code=1))
    host.script(["sleep"], RemoteTimeout("sleep 9", 1.0, host="llm-one"))
    with pytest.raises(CommandFailed, match="boom") as caught:
        host.run(["false"])
    assert caught.value.message.startswith("llm-one: `false` exited with 1")
    assert host.run(["false"], check=False).exit_code == 1
    with pytest.raises(RemoteTimeout):
        host.run(["sleep", "9"])


def test_inputs_are_recorded_by_size_only() -> None:
    host = RecordingHost(default=reply())
    host.run(["tee", "/opt/specops/sglang/env"], input=b"HF_TOKEN=hf_abc123\n")
    host.put(b"HF_TOKEN=hf_abc123\n", "/opt/specops/sglang/env", mode=0o600)
    shown = repr(host.calls)
    assert "hf_abc123" not in shown
    assert "input=<19 bytes>" in shown and "mode=0o600" in shown


def test_put_then_get_and_a_missing_file() -> None:
    with RecordingHost("llm-one", files={"/etc/os-release": b"ID=debian\n"}) as host:
        host.put(b"[Unit]\n", "/etc/systemd/system/sglang.service")
        assert host.get("/etc/systemd/system/sglang.service") == b"[Unit]\n"
        assert host.get("/etc/os-release") == b"ID=debian\n"
        with pytest.raises(CommandFailed, match="No such file"):
            host.get("/nope")
    assert host.closed
    assert [call.kind for call in host.calls] == ["put", "get", "get", "get"]
