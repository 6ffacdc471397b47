"""RecordingHost: records what the core would do and answers from a script (backs --dry-run and unit tests).

    host = RecordingHost("llm-one")
    host.script(["systemctl", "is-active"], reply(stdout="active\\n"))          # argv prefix
    host.script(lambda argv: argv[0] == "nvidia-smi", reply(exit_code=127))    # predicate
    host.script(["cat", "/proc/loadavg"], reply(stdout="1.0"), reply(stdout="9.0"))  # in turn, last repeats
    host.files["/opt/specops/sglang/current/manifest.json"] = b"{}"           # served by get()
    ... core code runs against `host` ...
    host.commands   # [('systemctl', 'is-active', 'sglang'), ...] in order; host.calls has puts/gets too

An unscripted command raises UnexpectedCommand (a test that forgot a rule fails loudly, naming the argv),
unless the host was made with `default=reply(...)` (dry-run: every mutation "succeeds"). A scripted non-zero
exit behaves as on a real host: `run` raises CommandFailed unless the caller passed `check=False`.
Inputs are recorded only as their size: they may carry secrets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from specops.errors import ExitCode, SpecopsError
from specops.host.base import DEFAULT_TIMEOUT_S, Host, HostBase, Result, Tunnel, checked, checked_argv, display_command
from specops.host.process import FinishedPipe, RunningCommand

Matcher = Callable[[tuple[str, ...]], bool]


class UnexpectedCommand(SpecopsError):
    """The recording has no rule for a command: a bug in a test script (or in the code it tests)."""

    exit_code = ExitCode.INTERNAL


@dataclass(frozen=True)
class Reply:
    """What a scripted command "printed"; becomes a Result carrying the real argv."""

    stdout: bytes = b""
    stderr: bytes = b""
    exit_code: int = 0
    duration_s: float = 0.0


def reply(stdout: bytes | str = b"", stderr: bytes | str = b"", exit_code: int = 0) -> Reply:
    as_bytes = [text.encode() if isinstance(text, str) else text for text in (stdout, stderr)]
    return Reply(stdout=as_bytes[0], stderr=as_bytes[1], exit_code=exit_code)


Answer = Reply | BaseException  # an exception instance is raised instead (RemoteTimeout, ConnectError...)


@dataclass(frozen=True)
class Call:
    """One recorded action: kind is "run", "put", "get" or "tunnel". `input_size` instead of the input."""

    kind: str
    argv: tuple[str, ...] = ()
    input_size: int | None = None
    path: str = ""
    mode: int | None = None
    timeout: float | None = None
    via: str = ""  # "conversation": sent as a request over the one exec that `conversation` opened

    @property
    def is_exec(self) -> bool:
        """Whether the host started a command (a channel and a login shell) for this call."""
        return self.kind == "conversation" or (self.kind in ("run", "put") and not self.via)

    def __repr__(self) -> str:
        if self.kind in ("run", "conversation"):
            size = "" if self.input_size is None else f", input=<{self.input_size} bytes>"
            return f"Call(run {display_command(self.argv)!r}{size})"
        return f"Call({self.kind} {self.path!r}, mode={self.mode and oct(self.mode)}, size={self.input_size})"


@dataclass
class _Rule:
    matches: Matcher
    label: str
    answers: list[Answer]
    used: int = 0

    def next_answer(self) -> Answer:
        answer = self.answers[min(self.used, len(self.answers) - 1)]
        self.used += 1
        return answer


@dataclass
class RecordingHost(HostBase):
    """A Host that runs nothing: it records calls and answers from `script` rules (first match wins)."""

    name: str = "recorded"
    default: Reply | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    tunnel_factory: Callable[[str, int], Tunnel] | None = None
    closed: bool = False
    _rules: list[_Rule] = field(default_factory=list, init=False, repr=False)

    def script(self, match: Sequence[str] | Matcher, *answers: Answer) -> RecordingHost:
        """Add a rule: an argv prefix (list/tuple) or a predicate; answers are used in turn, the last repeats."""
        if not answers:
            raise ValueError("a rule needs at least one answer")
        if callable(match):
            rule = _Rule(match, getattr(match, "__name__", "predicate"), list(answers))
        else:
            prefix = tuple(match)
            rule = _Rule(lambda argv: argv[: len(prefix)] == prefix, display_command(prefix), list(answers))
        self._rules.append(rule)
        return self

    @property
    def commands(self) -> list[tuple[str, ...]]:
        return [call.argv for call in self.calls if call.kind == "run"]

    @property
    def execs(self) -> list[Call]:
        """The calls that cost the host an exec (a conversation's requests do not)."""
        return [call for call in self.calls if call.is_exec]

    @contextmanager
    def conversation(self, argv: Sequence[str], *, lifetime_s: float) -> Iterator[Host]:
        """One recorded exec (kind "conversation"); the commands sent through the view it yields are recorded
        in order with the others, marked `via="conversation"` (see host/conversation.py)."""
        self.calls.append(Call("conversation", checked_argv(argv), timeout=lifetime_s))
        yield _RecordedConversation(self)

    def run(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        check: bool = True,
        env: Mapping[str, str] | None = None,
        via: str = "",
    ) -> Result:
        words = checked_argv(argv, env)
        self.calls.append(Call("run", words, None if input is None else len(input), timeout=timeout, via=via))
        answer = self._answer_for(words)
        if isinstance(answer, BaseException):
            raise answer
        result = Result(words, answer.exit_code, answer.stdout, answer.stderr, answer.duration_s)
        return checked(result, self.name, check)

    def stream(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S, env: Mapping[str, str] | None = None
    ) -> RunningCommand:
        """The scripted answer as a running command: its whole stdout is there to read at once, and whatever
        is written to it is accepted (recorded as one "run" call, like `run`)."""
        words = checked_argv(argv, env)
        self.calls.append(Call("run", words, None, timeout=timeout))
        answer = self._answer_for(words)
        if isinstance(answer, BaseException):
            raise answer
        pipe = FinishedPipe(answer.exit_code, answer.stderr, answer.stdout, reads_input=True)
        return RunningCommand(pipe, words, host=self.name, timeout=timeout, grace=0.0, started=time.monotonic())

    def _answer_for(self, words: tuple[str, ...]) -> Answer:
        for rule in self._rules:
            if rule.matches(words):
                return rule.next_answer()
        if self.default is not None:
            return self.default
        known = "; ".join(rule.label for rule in self._rules) or "none"
        raise UnexpectedCommand(
            f"{self.name}: no scripted reply for `{display_command(words)}`",
            hint=f"add host.script([...], reply(...)) for it (rules: {known})",
        )

    def put(self, data: bytes, remote_path: str, mode: int = 0o644, *, timeout: float = 300, via: str = "") -> None:
        """Recorded as one "put" (readable in a dry-run plan); the bytes become readable through get()."""
        self.calls.append(Call("put", path=remote_path, mode=mode, input_size=len(data), timeout=timeout, via=via))
        self.files[remote_path] = data

    def get(self, remote_path: str, *, timeout: float = 300) -> bytes:
        self.calls.append(Call("get", path=remote_path, timeout=timeout))
        if remote_path not in self.files:
            result = Result(("cat", "--", remote_path), 1, b"", f"cat: {remote_path}: No such file\n".encode(), 0)
            checked(result, self.name)
        return self.files[remote_path]

    def open_tunnel(self, remote_host: str, remote_port: int) -> Tunnel:
        self.calls.append(Call("tunnel", path=f"{remote_host}:{remote_port}"))
        if self.tunnel_factory is None:
            raise UnexpectedCommand(f"{self.name}: no tunnel_factory for {remote_host}:{remote_port}")
        return self.tunnel_factory(remote_host, remote_port)

    def close(self) -> None:
        self.closed = True


class _RecordedConversation(HostBase):
    """A recording's conversation: the same rules and files, each call marked as sent over the conversation."""

    def __init__(self, recording: RecordingHost) -> None:
        self.name, self.recording = recording.name, recording

    def run(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        check: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> Result:
        return self.recording.run(argv, input=input, timeout=timeout, check=check, env=env, via="conversation")

    def stream(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S, env: Mapping[str, str] | None = None
    ) -> RunningCommand:
        return self.recording.stream(argv, timeout=timeout, env=env)

    def put(self, data: bytes, remote_path: str, mode: int = 0o644, *, timeout: float = 300) -> None:
        self.recording.put(data, remote_path, mode, timeout=timeout, via="conversation")

    def get(self, remote_path: str, *, timeout: float = 300) -> bytes:
        return self.recording.get(remote_path, timeout=timeout)

    def open_tunnel(self, remote_host: str, remote_port: int) -> Tunnel:
        return self.recording.open_tunnel(remote_host, remote_port)

    def close(self) -> None:
        return None
