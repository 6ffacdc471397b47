"""The error hierarchy and the one exit-code table.

Every failure that reaches the operator is a SpecopsError: a one-line message, a hint that says what to do,
and a documented exit code. The CLI turns it into output in exactly one place (specops/cli/main.py), so the
core never prints and never calls sys.exit.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Documented exit codes (docs/exit-codes.md and `specops --help` list the same table)."""

    OK = 0
    CHECKS_FAILED = 1
    USAGE = 2
    CONFIG = 3
    UNREACHABLE = 4
    REMOTE_FAILED = 5
    LOCK_HELD = 6
    INTERNAL = 70
    INTERRUPTED = 130


EXIT_CODE_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "success",
    ExitCode.CHECKS_FAILED: "a check or a gate failed",
    ExitCode.USAGE: "usage error (bad option or argument)",
    ExitCode.CONFIG: "configuration error (specops.toml, a profile, a secret)",
    ExitCode.UNREACHABLE: "a host could not be reached over SSH",
    ExitCode.REMOTE_FAILED: "a command on a host failed",
    ExitCode.LOCK_HELD: "another specops holds the host's lock",
    ExitCode.INTERNAL: "internal error in specops (a bug: re-run with --debug and report it)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C)",
}


class SpecopsError(Exception):
    """Base of every error the operator sees; carries a hint and an exit code."""

    exit_code: ExitCode = ExitCode.REMOTE_FAILED

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(SpecopsError):
    """The command line asks for something that cannot be done (unknown host, file exists, ...)."""

    exit_code = ExitCode.USAGE


class ConfigError(SpecopsError):
    """One or more configuration mistakes, each a `file: dotted.path: message` line."""

    exit_code = ExitCode.CONFIG

    def __init__(self, lines: list[str], hint: str = "") -> None:
        self.lines = list(lines)
        super().__init__("\n".join(self.lines), hint)


class ConnectError(SpecopsError):
    """A host could not be reached or authenticated."""

    exit_code = ExitCode.UNREACHABLE


class ChecksFailed(SpecopsError):
    """A doctor check or a gate failed; the details were already reported."""

    exit_code = ExitCode.CHECKS_FAILED
