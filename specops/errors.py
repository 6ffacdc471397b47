"""The error hierarchy and the one exit-code table.

Every failure that reaches the operator is a SpecopsError: a one-line message, a hint that says what to do,
and a documented exit code. The CLI turns it into output in exactly one place (specops/cli/main.py), so the
core never prints and never calls sys.exit.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specops.host.base import Result


class ExitCode(IntEnum):
    """Documented exit codes (docs/exit-codes.md and `specops --help` list the same table)."""

    OK = 0
    CHECKS_FAILED = 1
    USAGE = 2
    CONFIG = 3
    UNREACHABLE = 4
    REMOTE_FAILED = 5
    LOCK_HELD = 6
    ROLLBACK_FAILED = 7
    INTERNAL = 70
    HANGUP = 129
    INTERRUPTED = 130
    TERMINATED = 143

    @staticmethod
    def cause(error: BaseException) -> str:
        """Why a run stopped, in words for a person (never an exception's class name)."""
        if isinstance(error, KeyboardInterrupt):  # SIGTERM and SIGHUP arrive as one that carries their name
            name = getattr(error, "name", None)
            return f"interrupted ({name})" if isinstance(name, str) else EXIT_CODE_MEANINGS[ExitCode.INTERRUPTED]
        if isinstance(error, SpecopsError):
            return EXIT_CODE_MEANINGS[error.exit_code]
        return "internal error in specops"


EXIT_CODE_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "success",
    ExitCode.CHECKS_FAILED: "a check or a gate failed",
    ExitCode.USAGE: "usage error (bad option or argument)",
    ExitCode.CONFIG: "configuration error (specops.toml, a profile, a secret)",
    ExitCode.UNREACHABLE: "a host could not be reached over SSH",
    ExitCode.REMOTE_FAILED: "a command on a host failed",
    ExitCode.LOCK_HELD: "another specops holds the host's lock",
    ExitCode.ROLLBACK_FAILED: "a rollback failed: no verified release serves on the host",
    ExitCode.INTERNAL: "internal error in specops (a bug: re-run with --debug and report it)",
    ExitCode.HANGUP: "interrupted by SIGHUP (the terminal or session closed)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C, SIGINT)",
    ExitCode.TERMINATED: "interrupted by SIGTERM (`kill`, a CI job cancelled)",
}


class SpecopsError(Exception):
    """Base of every error the operator sees; carries a hint and an exit code.

    Every error shows an `error:` and a `hint:` line (docs/exit-codes.md): a raise site that knows what to do
    says so in `hint`; otherwise the class's `default_hint` says where to look next."""

    exit_code: ExitCode = ExitCode.REMOTE_FAILED
    default_hint = "the lines above name the host and what failed on it; `specops logs HOST` shows its journal"

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint or self.default_hint


class UsageError(SpecopsError):
    """The command line asks for something that cannot be done (unknown host, file exists, ...)."""

    exit_code = ExitCode.USAGE
    default_hint = "`specops --help` lists the commands; `specops COMMAND --help` a command's arguments and options"


class ConfigError(SpecopsError):
    """One or more configuration mistakes, each a `file: dotted.path: message` line."""

    exit_code = ExitCode.CONFIG
    default_hint = "fix what each line above names (a file, a setting), then `specops config check` checks it all"

    def __init__(self, lines: list[str], hint: str = "") -> None:
        self.lines = list(lines)
        super().__init__("\n".join(self.lines), hint)


class ConnectError(SpecopsError):
    """A host could not be reached or authenticated."""

    exit_code = ExitCode.UNREACHABLE
    default_hint = "check the host's ssh settings with `specops hosts HOST` and try `ssh HOST true`"


class ChecksFailed(SpecopsError):
    """A doctor check or a gate failed; the details were already reported."""

    exit_code = ExitCode.CHECKS_FAILED
    default_hint = "the lines above name each failed check or gate and what to do about it"


class CommandFailed(SpecopsError):
    """A command on a host exited non-zero; carries its Result and shows the last lines of its stderr."""

    exit_code = ExitCode.REMOTE_FAILED

    def __init__(self, result: Result, host: str = "", hint: str = "", tail_lines: int = 20) -> None:
        self.result = result
        self.host = host
        where = f"{host}: " if host else ""
        message = f"{where}`{result.short_command}` exited with {result.exit_code}"
        tail = result.err_tail(tail_lines) or result.out_tail(tail_lines)
        if tail:
            message += "\n" + "\n".join(f"  | {line}" for line in tail.splitlines())
        super().__init__(message, hint or COMMAND_FAILED_HINT)


COMMAND_FAILED_HINT = "the `|` lines are what the command printed on the host: fix that there, then run specops again"


UPGRADE_HINT = "upgrade specops on this machine to the version that deployed the host (`specops --version` shows yours)"


class HostDataTooNew(SpecopsError):
    """A file on a host carries a schema version above what this specops reads: written by a newer specops.
    Refused rather than guessed at (docs/deploy.md "Files on the host")."""

    exit_code = ExitCode.REMOTE_FAILED
    default_hint = UPGRADE_HINT


class RemoteTimeout(SpecopsError):
    """A command on a host ran past its timeout and was killed."""

    exit_code = ExitCode.REMOTE_FAILED

    def __init__(self, command: str, timeout_s: float, host: str = "", hint: str = "") -> None:
        self.command = command
        self.timeout_s = timeout_s
        self.host = host
        where = f"{host}: " if host else ""
        super().__init__(
            f"{where}`{command}` did not finish within {timeout_s:g}s and was killed",
            hint or "the host may be overloaded or the command stuck; raise the timeout only if it is known to be slow",
        )


class LockHeld(SpecopsError):
    """Another specops holds the host's deploy lock (and is alive); the message names the holder."""

    exit_code = ExitCode.LOCK_HELD
    default_hint = "wait for that run to end (or give --lock-wait SECONDS); `specops lock status HOST` shows the holder"


class BuildError(SpecopsError):
    """The build cannot be staged: no sglang package, a bad wheel, a patch that does not apply."""

    exit_code = ExitCode.USAGE
    default_hint = "--build takes sglang's python/ folder, a folder holding sglang, or a .whl; --patch, a diff of it"


class ReleaseError(SpecopsError):
    """A release operation on a host was refused or failed (push, switch, prune, manifest update)."""

    exit_code = ExitCode.REMOTE_FAILED
    default_hint = "`specops releases HOST` lists the releases on the host and which one `current` names"


class ReleaseVerifyFailed(ReleaseError):
    """The pushed release's tree hash differs from the staged one; the release stays `unfinished`."""

    def __init__(self, message: str, expected: str, actual: str, hint: str = "") -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(message, hint)
