"""become = "sudo": how sudo is checked once per connection, and what every command line then looks like."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from specops.config.secrets import Secret
from specops.errors import ExitCode
from specops.host.base import Result, with_deadline
from specops.host.become import Become, BecomeError, Escalation
from specops.host.recording import RecordingHost, reply
from specops.host.ssh.target import SshTarget

PASSWORD = "pa ss'$word"
NEEDS_PASSWORD = reply(stderr="sudo: a password is required\n", exit_code=1)
PROBE = ("timeout", "-k", "5", "30.000", "true")  # what sudo is asked about: the wrapper every command runs under


def _escalation(password: str | None = None, user: str = "root") -> Escalation:
    secret = Secret(password) if password is not None else None
    return Escalation(Become(user=user, password=secret), "llm-two (ubuntu@10.0.0.5:22)", "ubuntu")


def _runner(host: RecordingHost) -> object:
    def run(argv: Sequence[str], data: bytes | None) -> Result:
        return host.run(argv, input=data, check=False)

    return run


def _establish(escalation: Escalation, host: RecordingHost) -> None:
    escalation.establish(_runner(host))  # type: ignore[arg-type]


def test_nopasswd_sudo_wraps_every_command_with_sudo_n_and_sends_nothing_first() -> None:
    host = RecordingHost("llm-two").script(["sudo", "-n"], reply())
    escalation = _escalation()
    _establish(escalation, host)
    _establish(escalation, host)  # once per connection
    assert host.commands == [("sudo", "-n", "-H", "-u", "root", "--", *PROBE)]
    line, preamble = escalation.wrap(["timeout", "-k", "5", "60.000", "systemctl", "restart", "sglang"])
    assert line == ["sudo", "-n", "-H", "-u", "root", "--", "timeout", "-k", "5", "60.000", "systemctl", "restart",
                    "sglang"]  # fmt: skip
    assert preamble == b""
    assert escalation.mode == "nopasswd"


def test_a_nopasswd_rule_for_the_wrapper_alone_never_gets_the_password_on_stdin() -> None:
    """sudoers: a password for ALL, but NOPASSWD for /usr/bin/timeout. sudo then reads no password for the real
    commands (all `timeout ...`), so password mode would hand the password line to the command's stdin (the
    probe's Python would echo it in a NameError). The check must ask sudo about the same wrapper."""
    wrapper = ["sudo", "-n", "-H", "-u", "root", "--", "timeout"]
    host = RecordingHost("llm-two").script(wrapper, reply()).script(["sudo", "-S"], reply())
    host.script(["sudo"], NEEDS_PASSWORD)
    escalation = _escalation(PASSWORD)
    _establish(escalation, host)
    line, preamble = escalation.wrap(with_deadline(["python3", "-I", "-"], 60))
    assert preamble == b""
    assert line[: len(wrapper)] == wrapper
    assert host.commands[0][: len(wrapper)] == tuple(wrapper)


def test_password_only_sudo_without_ask_become_pass_names_the_host_and_both_fixes() -> None:
    host = RecordingHost("llm-two").script(["sudo", "-n"], NEEDS_PASSWORD)
    with pytest.raises(BecomeError) as caught:
        _establish(_escalation(), host)
    assert caught.value.exit_code is ExitCode.UNREACHABLE
    assert caught.value.check_id == "ssh.privilege"
    assert caught.value.message == (
        "llm-two (ubuntu@10.0.0.5:22): sudo needs a password for ubuntu on this host, and none was given"
    )
    assert "ubuntu ALL=(ALL) NOPASSWD: ALL" in caught.value.hint
    assert "specops --ask-become-pass COMMAND" in caught.value.hint


def test_the_password_is_checked_once_then_sent_as_stdins_first_line_never_in_argv() -> None:
    host = RecordingHost("llm-two").script(["sudo", "-n"], NEEDS_PASSWORD).script(["sudo", "-S"], reply())
    escalation = _escalation(PASSWORD)
    _establish(escalation, host)
    assert [call.argv for call in host.calls] == [
        ("sudo", "-n", "-H", "-u", "root", "--", *PROBE),
        ("sudo", "-S", "-k", "-p", "", "-H", "-u", "root", "--", *PROBE),
    ]
    assert [call.input_size for call in host.calls] == [None, len(PASSWORD) + 1]
    line, preamble = escalation.wrap(["sh", "-c", "cat > x", "put"])
    assert line == ["sudo", "-S", "-k", "-p", "", "-H", "-u", "root", "--", "sh", "-c", "cat > x", "put"]
    assert preamble == PASSWORD.encode() + b"\n"
    assert not any(PASSWORD in word for word in line)
    assert PASSWORD not in repr(escalation.become)


@pytest.mark.parametrize(
    ("answer", "message", "hint_part"),
    [
        (reply(stderr="sudo: 1 incorrect password attempt\n", exit_code=1),
         "llm-two (ubuntu@10.0.0.5:22): sudo refused the password for ubuntu (wrong password)",
         "the password of the login user"),
        (reply(stderr="ubuntu is not in the sudoers file.  This incident will be reported.\n", exit_code=1),
         "llm-two (ubuntu@10.0.0.5:22): ubuntu may not run commands as root through sudo (ubuntu is not in the "
         "sudoers file.  This incident will be reported.)",
         "ubuntu ALL=(root) NOPASSWD: ALL"),
    ],
)  # fmt: skip
def test_a_wrong_password_or_a_missing_rule_says_which(answer: object, message: str, hint_part: str) -> None:
    host = RecordingHost("llm-two").script(["sudo", "-n"], NEEDS_PASSWORD).script(["sudo", "-S"], answer)  # type: ignore[arg-type]
    with pytest.raises(BecomeError) as caught:
        _establish(_escalation(PASSWORD), host)
    assert caught.value.message == message
    assert hint_part in caught.value.hint
    assert PASSWORD not in caught.value.message + caught.value.hint


def test_no_sudo_on_the_host_is_named_as_such() -> None:
    host = RecordingHost("llm-two").script(
        ["sudo"], reply(stderr="bash: line 1: sudo: command not found\n", exit_code=127)
    )
    with pytest.raises(BecomeError) as caught:
        _establish(_escalation(PASSWORD), host)
    assert (
        caught.value.message
        == 'llm-two (ubuntu@10.0.0.5:22): sudo is not installed (become = "sudo", logged in as ubuntu)'
    )
    assert "apt-get install sudo" in caught.value.hint
    assert len(host.calls) == 1  # the password is never sent to a host without sudo


def test_a_sudo_failure_of_another_kind_quotes_sudo() -> None:
    host = RecordingHost("llm-two").script(
        ["sudo"], reply(stderr="sudo: unable to resolve host\nsudo: boom\n", exit_code=1)
    )
    with pytest.raises(BecomeError) as caught:
        _establish(_escalation(user="svc"), host)
    assert caught.value.message == (
        "llm-two (ubuntu@10.0.0.5:22): `sudo -u svc true` failed as ubuntu (exit 1): sudo: unable to resolve host; "
        "sudo: boom"
    )


def test_wrap_before_establish_is_a_bug_not_a_silent_root_less_command() -> None:
    with pytest.raises(RuntimeError):
        _escalation().wrap(["true"])


def test_ssh_host_sends_the_whole_line_deadline_and_env_inside_sudo_and_the_password_first() -> None:
    from specops.host.ssh.channels import SshHost

    client = _FakeClient(answers=[(1, b"sudo: a password is required\n"), (0, b""), (0, b"")])
    target = SshTarget(alias="gpu-a", hostname="10.0.0.5", user="ubuntu", port=22, identity_files=())
    host = SshHost("llm-two", target, client)  # type: ignore[arg-type]
    host.become(Become(password=Secret(PASSWORD)))
    result = host.run(["cat", "--", "/opt/a b"], input=b"payload", env={"LANG": "C"}, timeout=30)
    assert result.argv == ("cat", "--", "/opt/a b")  # what errors and logs show: never sudo, never the password
    assert client.lines[-1] == ("sudo -S -k -p '' -H -u root -- timeout -k 5 30.000 env LANG=C cat -- '/opt/a b'")
    assert client.stdin[-1] == PASSWORD.encode() + b"\npayload"
    assert client.lines[:2] == [  # the check, once per connection, as the login user
        "timeout -k 5 30.000 sudo -n -H -u root -- timeout -k 5 30.000 true",
        "timeout -k 5 30.000 sudo -S -k -p '' -H -u root -- timeout -k 5 30.000 true",
    ]
    assert client.stdin[:2] == [b"", PASSWORD.encode() + b"\n"]
    assert not [line for line in client.lines if PASSWORD in line]


class _FakeChannel:
    """Just enough of a paramiko exec channel: records the command line and stdin, answers with an exit."""

    def __init__(self, client: _FakeClient) -> None:
        self.client = client
        self.status_event = threading.Event()
        self.exit_status = 0
        self._stderr = b""
        self._sent = bytearray()

    def settimeout(self, timeout: float) -> None:
        return None

    def exec_command(self, line: str) -> None:
        self.client.lines.append(line)
        self.exit_status, self._stderr = self.client.answers.pop(0)
        self.status_event.set()

    def send(self, data: bytes) -> int:
        self._sent += data
        return len(data)

    def recv(self, size: int) -> bytes:
        return b""

    def recv_stderr(self, size: int) -> bytes:
        data, self._stderr = self._stderr, b""
        return data

    def shutdown_write(self) -> None:
        self.client.stdin.append(bytes(self._sent))

    def close(self) -> None:
        return None


class _FakeClient:
    def __init__(self, answers: list[tuple[int, bytes]]) -> None:
        self.answers, self.lines, self.stdin = answers, list[str](), list[bytes]()

    def get_transport(self) -> _FakeClient:
        return self

    def is_active(self) -> bool:
        return True

    def open_session(self, timeout: float) -> _FakeChannel:
        return _FakeChannel(self)
