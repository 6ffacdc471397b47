"""The command conversation for real: the host-side runner (specops/remote/runner.py) started by this machine's
Python through LocalHost, answering the same way a plain exec would."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from specops.commands.conversation import conversation_argv
from specops.config.secrets import Secret
from specops.errors import CommandFailed, RemoteTimeout
from specops.host import conversation as conversation_module
from specops.host.base import Host
from specops.host.conversation import ConversationHost, ConversationLost, conversation
from specops.host.local import LocalHost


class CountingHost(LocalHost):
    """LocalHost that counts the commands it starts: each is one exec on a real host."""

    def __init__(self) -> None:
        super().__init__("box")
        self.started: list[tuple[str, ...]] = []

    def stream(self, argv, *, timeout=60.0, env=None):  # type: ignore[no-untyped-def]
        self.started.append(tuple(argv))
        return super().stream(argv, timeout=timeout, env=env)


@pytest.fixture
def plain() -> CountingHost:
    return CountingHost()


@pytest.fixture
def talk(plain: CountingHost) -> Iterator[Host]:
    with conversation(plain, conversation_argv(sys.executable), lifetime_s=120) as host:
        assert isinstance(host, ConversationHost)
        yield host


def test_many_commands_cost_one_exec(plain: CountingHost, talk: Host) -> None:
    outputs = [talk.run(["echo", str(n)]).text for n in range(20)]
    assert outputs == [f"{n}\n" for n in range(20)]
    assert len(plain.started) == 1


def test_answers_as_a_plain_exec_does(talk: Host, plain: CountingHost, tmp_path: Path) -> None:
    not_executable = tmp_path / "script.sh"
    not_executable.write_text("#!/bin/sh\necho ran\n")
    for argv in (
        ["sh", "-c", "echo out; echo err >&2; exit 3"],
        ["no-such-program-here"],
        [str(not_executable)],  # 126: a shell, the runner and LocalHost cannot execute it
        ["sh", "-c", "yes | head -n 1"],  # SIGPIPE ends `yes` quietly, as in a login shell (not ignored)
    ):
        want, got = plain.run(argv, check=False), talk.run(argv, check=False)
        assert (got.exit_code, got.stdout) == (want.exit_code, want.stdout), argv
    assert talk.run([str(not_executable)], check=False).exit_code == 126
    assert talk.run(["sh", "-c", "yes | head -n 1"]).stderr == b""  # ignored, `yes` would say "Broken pipe"
    assert talk.run(["sh", "-c", "kill $$"], check=False).exit_code == 128 + 15  # as a shell reports SIGTERM
    with pytest.raises(CommandFailed) as failed:
        talk.run(["sh", "-c", "echo 'disk full' >&2; exit 2"])
    assert failed.value.exit_code == 5 and "disk full" in failed.value.message and "box" in failed.value.message


def test_binary_stdin_and_output_and_env(talk: Host) -> None:
    data = bytes(range(256)) * 4096 + b"\n\n{}"
    assert talk.run(["cat"], input=data).stdout == data
    assert talk.run(["sh", "-c", 'printf %s "$A"'], env={"A": "two words; $x"}).text == "two words; $x"


def test_put_and_get_are_atomic_writes_with_their_mode(talk: Host, tmp_path: Path) -> None:
    target = tmp_path / "env"
    talk.put(b"TOKEN=x\n", str(target), mode=0o600)
    assert talk.get(str(target)) == b"TOKEN=x\n"
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in tmp_path.iterdir()] == ["env"]


def _running(pid: int) -> bool:
    """Alive and not a zombie (a killed child whose new parent has not reaped it yet is gone for good)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_command_past_its_timeout_is_killed_with_its_children(talk: Host, tmp_path: Path) -> None:
    pidfile = tmp_path / "child"
    with pytest.raises(RemoteTimeout) as late:
        talk.run(["sh", "-c", f"sleep 30 & echo $! > {pidfile}; sleep 30"], timeout=0.5)
    assert "did not finish within 0.5s" in late.value.message
    assert talk.run(["echo", "still here"]).text == "still here\n"  # the conversation goes on
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _running(child)  # the background child too: the whole process group got the signal


def test_a_secret_word_reaches_the_command_but_not_the_process_list(talk: Host, plain: CountingHost) -> None:
    secret = Secret("s3cr3t-token")
    assert talk.run(["echo", secret]).text == "s3cr3t-token\n"
    assert not any("s3cr3t" in word for argv in plain.started for word in argv)


def test_a_dead_runner_fails_its_request_and_later_commands_use_plain_execs(plain: CountingHost, talk: Host) -> None:
    pid = int(talk.run(["sh", "-c", "echo $PPID"]).text)
    with pytest.raises(ConversationLost) as lost:
        talk.run(["sh", "-c", f"kill -9 {pid}; sleep 5"])
    assert "whether that command ran is unknown" in lost.value.message
    assert talk.run(["echo", "again"]).text == "again\n"
    assert len(plain.started) == 2


def in_flight(talk: Host) -> None:
    """Wait until a request of another thread holds the conversation (a fixed sleep would race under load)."""
    assert isinstance(talk, ConversationHost)
    deadline = time.monotonic() + 30
    while not talk._busy.locked() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert talk._busy.locked()


def test_a_busy_conversation_does_not_hold_up_another_thread(
    plain: CountingHost, talk: Host, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After BUSY_WAIT_S (shortened here) the other thread's request goes its own way, a plain exec."""
    monkeypatch.setattr(conversation_module, "BUSY_WAIT_S", 0.2)
    done = tmp_path / "done"  # the slow command runs until the test says so: no race with a fixed sleep
    slow = threading.Thread(target=talk.run, args=(["sh", "-c", f"while [ ! -e {done} ]; do sleep 0.02; done"],))
    slow.start()
    in_flight(talk)
    assert talk.run(["echo", "beat"]).text == "beat\n"  # the lock's heartbeat, say
    assert slow.is_alive()  # the beat was answered while the slow command still held the conversation
    done.touch()
    slow.join(timeout=30)
    assert not slow.is_alive()
    assert len(plain.started) == 2


def test_an_interpreter_that_cannot_run_the_runner_leaves_plain_execs(plain: CountingHost, tmp_path: Path) -> None:
    with conversation(plain, conversation_argv(str(tmp_path / "missing-python")), lifetime_s=60) as host:
        assert host.run(["echo", "ok"]).text == "ok\n"
        assert host.run(["echo", "again"]).text == "again\n"
    assert [argv[0] for argv in plain.started] == [str(tmp_path / "missing-python"), "echo", "echo"]


def test_closing_ends_the_runner(plain: CountingHost) -> None:
    with conversation(plain, conversation_argv(sys.executable), lifetime_s=60) as host:
        pid = int(host.run(["sh", "-c", "echo $PPID"]).text)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_an_interrupted_request_is_never_answered_by_the_next_one(
    plain: CountingHost, talk: Host, tmp_path: Path
) -> None:
    def interrupt_once_sent() -> None:
        in_flight(talk)
        time.sleep(0.2)  # the request is on its way; its reply comes only after the interrupt
        os.kill(os.getpid(), signal.SIGINT)

    go = tmp_path / "go"  # the request answers once this exists: never before the interrupt, however loaded
    assert talk.run(["true"]).ok  # the runner is up: the interrupted request is an exchange, not the greeting
    threading.Thread(target=interrupt_once_sent, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        talk.run(["sh", "-c", f"while [ ! -e {go} ]; do sleep 0.05; done; echo late"], timeout=600)
    go.touch()  # the late reply is on its way now
    assert talk.run(["echo", "next"]).text == "next\n"  # not "late": the conversation was given up
    assert len(plain.started) == 2


def test_the_release_script_runs_in_a_fork_and_answers_as_its_own_interpreter(
    plain: CountingHost, talk: Host, tmp_path: Path
) -> None:
    """`python -IS -c SCRIPT ...` for the runner's own interpreter skips a new interpreter: same output, exit
    codes, stdin, umask and deadline as running it for real."""
    script = (
        "import os, sys\n"
        "data = sys.stdin.read()\n"
        "os.umask(0o077)\n"
        "print(sys.argv[1:], repr(data), sys.flags.isolated, sys.flags.no_site)\n"
        "print('to stderr', file=sys.stderr)\n"
        "sys.exit(int(sys.argv[1]))\n"
    )
    for code in ("0", "3"):
        argv = [sys.executable, "-IS", "-c", script, code, "two words"]
        want, got = plain.run(argv, input=b"in\n", check=False), talk.run(argv, input=b"in\n", check=False)
        assert (got.exit_code, got.stdout, got.stderr) == (want.exit_code, want.stdout, want.stderr)
    assert len(plain.started) == 3  # the runner, and the two real interpreters
    assert (
        talk.run(["sh", "-c", "umask"]).text == plain.run(["sh", "-c", "umask"]).text
    )  # the fork's umask stayed there
    raised = [sys.executable, "-IS", "-c", "raise ValueError('boom')"]
    failed = talk.run(raised, check=False)
    assert failed.exit_code == 1 and "ValueError: boom" in failed.stderr_text
    with pytest.raises(RemoteTimeout):
        talk.run([sys.executable, "-IS", "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert talk.run(["echo", "after"]).text == "after\n"


def test_ctrl_c_while_the_runner_starts_gives_the_conversation_up(
    plain: CountingHost, talk: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    import specops.host.conversation as module

    def interrupted(command: object) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "greeted", interrupted)
    with pytest.raises(KeyboardInterrupt):
        talk.run(["echo", "first"])
    assert talk.run(["echo", "second"]).text == "second\n"  # its greeting is never read as a reply
    assert len(plain.started) == 2


def test_an_inline_script_finds_its_modules_imported_by_the_runner_and_runs_only_in_its_fork(
    talk: Host, tmp_path: Path
) -> None:
    """The runner imports what the script's `import` lines name (a fork then skips those imports on every
    request), yet runs none of the script itself: its side effects happen once per request, in the fork."""
    runs = tmp_path / "runs"
    script = f"import sys\nprint('tarfile' in sys.modules)\nimport tarfile\nopen({str(runs)!r}, 'a').write('ran\\n')\n"
    argv = [sys.executable, "-IS", "-c", script]
    assert [talk.run(argv).text for _ in range(2)] == ["True\n", "True\n"]
    assert runs.read_text() == "ran\nran\n"


def test_a_fork_never_closes_a_file_of_the_script_for_what_the_runner_left_behind(talk: Host) -> None:
    """Each request's own bookkeeping (its poll set) is closed in the runner; left to the garbage collector,
    a fork that collects it would close whatever file then has its number: the script's own."""
    script = (
        "import gc, os, json, hashlib, shutil, subprocess, tarfile, tempfile\n"
        "fds = [os.open('/dev/null', os.O_RDONLY) for _ in range(300)]\n"
        "gc.collect()\n"
        "for fd in fds:\n"
        "    os.fstat(fd)\n"
        "print('all open')\n"
    )
    for _ in range(3):
        assert talk.run([sys.executable, "-IS", "-c", script]).text == "all open\n"
        assert talk.run(["true"]).ok
