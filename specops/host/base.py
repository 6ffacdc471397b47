"""What every transport offers the core: run an argv, put/get a file, close; and the Result it returns.

The core (deploy, doctor, rollback) only ever sees `Host`, so it runs the same against SSH, the local machine
(`doctor --local`) and a recording (dry-run, unit tests). Commands are argv lists, quoted exactly ONCE, here
at the edge (`wire_command`), because a remote command line is re-parsed by the login shell on the host:
a caller never builds a shell string, so a space, quote or `$` in a path cannot turn into a second command.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self, runtime_checkable

from specops.errors import CommandFailed

if TYPE_CHECKING:
    from specops.host.process import RunningCommand

DEFAULT_TIMEOUT_S = 60.0
SHORT_COMMAND_CHARS = 160
KILL_AFTER_S = 5.0
OUTPUT_KEPT_CHARS = 2048  # the most of a host command's output an error or audit entry carries (cut_output)
OUTPUT_POINTER = "run the command on the host for all of it"
TIMED_OUT_CODES = (124, 137)  # coreutils `timeout`: the command got TERM (124) or, ignoring it, KILL (128+9)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Atomic write: the bytes land in a temp file next to the target (same filesystem), get their mode, and only
# then replace the target with rename(2), so a reader (systemd, the engine) never sees half a file. umask 077
# keeps a secret's temp copy private even before chmod runs.
PUT_SCRIPT = (
    'umask 077; tmp="$1.specops-tmp.$$"; trap \'rm -f "$tmp"\' EXIT; '
    'cat > "$tmp" && chmod "$2" "$tmp" && mv -f "$tmp" "$1"'
)


def put_argv(remote_path: str, mode: int) -> list[str]:
    """The command every Host's `put` runs (its stdin: the bytes); a deploy's plan shows the same words."""
    return ["sh", "-c", PUT_SCRIPT, "specops-put", remote_path, f"{mode:o}"]


@dataclass(frozen=True)
class Result:
    """One finished command: a plain value (what ran, how it ended, what it printed, how long it took).

    The stdin `input` is deliberately NOT kept: it is how secrets travel, and a Result ends up in errors,
    logs and --json output. Args that are `specops.config.secrets.Secret` print as *** in `command` and repr.
    """

    argv: tuple[str, ...]
    exit_code: int
    stdout: bytes = field(repr=False)
    stderr: bytes = field(repr=False)
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def text(self) -> str:
        """stdout as text; undecodable bytes become U+FFFD instead of raising in the middle of a deploy."""
        return self.stdout.decode("utf-8", errors="replace")

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", errors="replace")

    @property
    def command(self) -> str:
        """The command for people (logs, errors): shell-quoted, secrets masked."""
        return display_command(self.argv)

    @property
    def short_command(self) -> str:
        """`command`, cut to one readable line (a `python -c` probe can be kilobytes long)."""
        return shorten(self.command)

    def err_tail(self, n: int = 20) -> str:
        """The last n lines of stderr: where a failing tool says why."""
        return _tail(self.stderr_text, n)

    def out_tail(self, n: int = 20) -> str:
        return _tail(self.text, n)

    def __repr__(self) -> str:
        return (
            f"Result(argv={self.command!r}, exit_code={self.exit_code}, stdout=<{len(self.stdout)} bytes>, "
            f"stderr=<{len(self.stderr)} bytes>, duration_s={self.duration_s:.3f})"
        )


@runtime_checkable
class Tunnel(Protocol):
    """A socket-like byte stream to a port on (or near) the host; `close()` it when done."""

    def sendall(self, data: bytes, /) -> None: ...
    def recv(self, size: int, /) -> bytes: ...
    def settimeout(self, timeout: float | None, /) -> None: ...
    def close(self) -> None: ...


class Host(Protocol):
    """A machine the core can act on. Implementations: SshHost, LocalHost, RecordingHost."""

    name: str

    def run(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        check: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> Result:
        """Run `argv` to the end and return its Result.

        A non-zero exit raises CommandFailed (exit code 5, naming the host and the command, with the last lines
        of stderr) unless the caller passes `check=False`: that is how a caller says "a non-zero exit is an
        answer I read myself" (`cat` of a file that may be missing, a script that reports refusals as JSON
        with exit 3). A caller that passes nothing never sees a failed command as a Result.
        """
        ...

    def stream(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S, env: Mapping[str, str] | None = None
    ) -> RunningCommand:
        """The command started and handed back running: write its stdin, read its stdout as it comes. Its
        `wait()` raises CommandFailed on a non-zero exit, like `run`, unless given `check=False`."""
        ...

    def put(self, data: bytes, remote_path: str, mode: int = 0o644) -> None: ...
    def get(self, remote_path: str) -> bytes: ...
    def open_tunnel(self, remote_host: str, remote_port: int) -> Tunnel: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class HostBase:
    """Shared behaviour of the real transports: run via stream (checked), put/get via run, context manager."""

    name: str

    def run(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        check: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> Result:
        """The one-shot case of `stream`: the whole input, then everything the command printed and its status
        (a non-zero exit raises CommandFailed unless `check=False`, see Host.run)."""
        with self.stream(argv, timeout=timeout, env=env) as command:
            if input:
                command.write(input)
            return command.wait(check=check)

    def stream(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S, env: Mapping[str, str] | None = None
    ) -> RunningCommand:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def put(self, data: bytes, remote_path: str, mode: int = 0o644, *, timeout: float = 300) -> None:
        """Write `data` to `remote_path` atomically with `mode`; the parent directory must exist."""
        self.run(put_argv(remote_path, mode), input=data, timeout=timeout)

    def get(self, remote_path: str, *, timeout: float = 300) -> bytes:
        return self.run(["cat", "--", remote_path], timeout=timeout).stdout

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def checked(result: Result, host: str, check: bool = True) -> Result:
    """The one place a finished command's exit is judged: non-zero raises CommandFailed naming `host`, unless
    the caller said `check=False` (it reads the exit itself)."""
    if check and not result.ok:
        raise CommandFailed(result, host=host)
    return result


def checked_argv(argv: Sequence[str], env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Reject what would be misquoted: a shell string instead of a list, an empty argv, NUL bytes, bad env names."""
    if isinstance(argv, str | bytes):
        raise TypeError("argv must be a list of words, not a shell string: use ['ls', '-l', path]")
    words = tuple(argv)
    if not words:
        raise ValueError("argv is empty")
    for word in words:
        if not isinstance(word, str):
            raise TypeError(f"argv words must be str, got {type(word).__name__}")
        if "\0" in word:
            raise ValueError("an argv word contains a NUL byte, which no command line can carry")
    for name in env or {}:
        if not _ENV_NAME.fullmatch(name):
            raise ValueError(f"not an environment variable name: {name!r}")
    return words


def with_env(argv: Sequence[str], env: Mapping[str, str] | None) -> list[str]:
    """Prefix `env NAME=value` (sshd ignores SendEnv unless AcceptEnv allows it). Values show in the remote
    process list, so secrets must go through `input`, never `env`."""
    if not env:
        return list(argv)
    return ["env", *(f"{name}={reveal(value)}" for name, value in env.items()), *argv]


def with_deadline(argv: Sequence[str], timeout: float) -> list[str]:
    """Prefix coreutils `timeout`, so the HOST kills the command (and its process group) when its time is up.

    Closing the SSH channel does not stop a command that is not writing, and sshd refuses the RFC 4254
    "signal" request for root logins (no privilege separation after auth), so the host enforces the deadline
    itself: TERM at `timeout`, KILL KILL_AFTER_S later, also if specops itself dies mid-command.
    """
    return ["timeout", "-k", f"{KILL_AFTER_S:g}", f"{timeout:.3f}", *argv]


def wire_command(argv: Sequence[str]) -> str:
    """The one place argv becomes a command line for the remote POSIX login shell (real values, not ***)."""
    return shlex.join(reveal(word) for word in argv)


def display_command(argv: Sequence[str]) -> str:
    """The command for people: like `wire_command`, but a Secret word prints as *** (its __str__)."""
    return shlex.join(str(word) for word in argv)


def reveal(word: str) -> str:
    """The real characters of a word, also for str subclasses (Secret) whose __str__ masks them."""
    return str.__str__(word)


def shorten(text: str, limit: int = SHORT_COMMAND_CHARS) -> str:
    one_line = text.replace("\n", "\\n")
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


def cut_output(text: str, lines: int = 20, max_chars: int = OUTPUT_KEPT_CHARS) -> str:
    """The end of a host's output as errors and audit entries carry it: the last `lines` lines and at most
    `max_chars` characters; when that cuts into them, a first line says how much was left out. Why: a session
    dropped mid-push prints a whole release listing (tens of KB on one line); a message that long buries the
    cause and bloats every audit log it reaches."""
    kept = text.rstrip("\n").splitlines()[-lines:] if lines > 0 else []
    tail = "\n".join(kept)
    if len(tail) <= max_chars:
        return tail  # only whole lines left out: the last lines are where a tool says why
    tail = tail[-max_chars:]
    left_out = len(text.rstrip("\n")) - len(tail)
    return f"… {left_out:,} more characters not shown ({OUTPUT_POINTER})\n{tail}"


def cut_message(text: str, lines: int = 40) -> str:
    """A message that may end in a host's output (an error's text in an audit entry): its first line (the
    cause) kept whole, the rest cut like cut_output."""
    head, _, rest = text.partition("\n")
    return head[:OUTPUT_KEPT_CHARS] + ("\n" + cut_output(rest, lines) if rest.strip() else "")


def _tail(text: str, n: int) -> str:
    return cut_output(text, n) if n > 0 else ""
