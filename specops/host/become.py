"""Privilege escalation: act as root on a host whose login user is not root (`become = "sudo"`).

Cloud images disable root login and hand out a user with sudo (`ubuntu`, `ec2-user`); specops logs in as that
user and runs every command through sudo, so releases, the unit, the env file and the lock look exactly as
after a root login. Why one wrapping point (`Escalation.wrap`, applied by the transport to the whole command
line) instead of `sudo` in each builder: no command can forget it, the argv stays the same list of words
quoted once at the edge, and `timeout` runs INSIDE sudo, so the host's own deadline can still kill a command
that runs as root.

Why a check per connection (`establish`): sudo's answer decides how every later command is sent. With
NOPASSWD, `sudo -n` (never prompts: a rule that needs a password fails at once instead of hanging). With a
password (`--ask-become-pass`), `sudo -S -k -p ''`: the password is the first line of the command's stdin
(sudo reads it byte by byte up to the newline, so the rest of stdin, e.g. a pushed tar, reaches the command
intact), `-k` makes sudo ask for it every time (a cached credential would leave the password line unread, for
the command to swallow), and `-p ''` keeps any prompt out of the output. The password is never in argv, a
Result, a log or an error; it is verified once here, so a wrong one fails with a clear message before any
command's stdin could be read as a second attempt.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specops.errors import ConnectError
from specops.host.base import with_deadline

if TYPE_CHECKING:
    from specops.config.secrets import Secret
    from specops.host.base import Result

CHECK_TIMEOUT_S = 30.0
PRIVILEGE_CHECK = "ssh.privilege"  # the doctor's check id for what this module finds out
COMMAND_NOT_FOUND = 127
_PASSWORD_NEEDED = ("a password is required", "a terminal is required", "no askpass program")
_WRONG_PASSWORD = ("incorrect password", "sorry, try again")
_NOT_ALLOWED = ("not in the sudoers file", "is not allowed to", "may not run sudo", "unknown user")

RawRunner = Callable[[Sequence[str], "bytes | None"], "Result"]  # runs an argv as the login user, check=False


@dataclass(frozen=True)
class Become:
    """How to act as another user on one host: sudo to `user`, with the run's password if one was asked for."""

    user: str = "root"
    password: Secret | None = None


class BecomeError(ConnectError):
    """The login worked but sudo did not: the host cannot be acted on as root (exit 4, like an unreachable
    host: nothing was changed on it). `check_id` is the doctor check that reports it."""

    check_id = PRIVILEGE_CHECK


def nopasswd_prefix(user: str) -> list[str]:
    """`-n`: fail instead of prompting; `-H`: HOME of the target user, as after a login as that user."""
    return ["sudo", "-n", "-H", "-u", user, "--"]


def password_prefix(user: str) -> list[str]:
    """`-S`: the password from stdin's first line; `-k`: ask for it every time; `-p ''`: no prompt text."""
    return ["sudo", "-S", "-k", "-p", "", "-H", "-u", user, "--"]


class Escalation:
    """One connection's sudo: `establish` once (it asks the host), then `wrap` every command line."""

    def __init__(self, become: Become, host: str, login: str) -> None:
        self.become, self.host, self.login = become, host, login
        self.mode: str | None = None  # "nopasswd" or "password" once established
        self._lock = threading.Lock()

    def establish(self, run_raw: RawRunner) -> None:
        """Find out whether sudo works, and how; raise BecomeError naming the host and the fix if not."""
        with self._lock:
            if self.mode is not None:
                return
            user = self.become.user
            first = run_raw([*nopasswd_prefix(user), *self.probe()], None)
            if first.ok:
                self.mode = "nopasswd"
                return
            reason = _reason(first)
            if not _says(reason, _PASSWORD_NEEDED) or first.exit_code == COMMAND_NOT_FOUND:
                raise self._refused(first, reason)
            if self.become.password is None:
                raise self._password_required()
            second = run_raw([*password_prefix(user), *self.probe()], self.password_line())
            if not second.ok:
                raise self._refused(second, _reason(second), password_given=True)
            self.mode = "password"

    @staticmethod
    def probe() -> list[str]:
        """`timeout -k 5 30 true`: sudo is asked about the SAME program every real command runs under it (the
        transport's `timeout`), so a per-command sudoers rule (NOPASSWD or `!authenticate` for timeout alone)
        decides the check as it decides the commands. Checking plain `true` would choose password mode there,
        and sudo, not asking for the password, would hand the password line to the command's stdin."""
        return with_deadline(["true"], CHECK_TIMEOUT_S)

    def wrap(self, argv: Sequence[str]) -> tuple[list[str], bytes]:
        """The command line to send and the bytes to write on its stdin before anything else."""
        if self.mode is None:
            raise RuntimeError("Escalation.wrap before establish")  # a bug: the transport establishes first
        if self.mode == "password":
            return [*password_prefix(self.become.user), *argv], self.password_line()
        return [*nopasswd_prefix(self.become.user), *argv], b""

    def password_line(self) -> bytes:
        assert self.become.password is not None
        return self.become.password.reveal().encode("utf-8") + b"\n"

    def _password_required(self) -> BecomeError:
        return BecomeError(
            f"{self.host}: sudo needs a password for {self.login} on this host, and none was given",
            hint=(
                f"let {self.login} use sudo without a password (on the host: `echo '{self.login} ALL=(ALL) "
                f"NOPASSWD: ALL' > /etc/sudoers.d/{self.login}`, checked with `visudo -c`), or run specops "
                "with --ask-become-pass to type it once per run (`specops --ask-become-pass COMMAND ...`)"
            ),
        )

    def _refused(self, result: Result, reason: str, password_given: bool = False) -> BecomeError:
        user, login = self.become.user, self.login
        if result.exit_code == COMMAND_NOT_FOUND:
            return BecomeError(
                f'{self.host}: sudo is not installed (become = "sudo", logged in as {login})',
                hint="install it on the host (`apt-get install sudo`, `dnf install sudo`) and allow "
                f"{login} to use it, or log in as root (remove become)",
            )
        if password_given and _says(reason, _WRONG_PASSWORD):
            return BecomeError(
                f"{self.host}: sudo refused the password for {login} (wrong password)",
                hint="run again and type the password of the login user (not root's) at the prompt",
            )
        if _says(reason, _NOT_ALLOWED):
            return BecomeError(
                f"{self.host}: {login} may not run commands as {user} through sudo ({_one_line(reason)})",
                hint=f"add a sudoers rule on the host: `{login} ALL=({user}) NOPASSWD: ALL` in "
                f"/etc/sudoers.d/{login}, or log in as {user}",
            )
        return BecomeError(
            f"{self.host}: `sudo -u {user} true` failed as {login} (exit {result.exit_code}): "
            f"{_one_line(reason) or 'no message'}",
            hint=f"run `sudo -n -u {user} true` as {login} on the host to see why",
        )


def _reason(result: Result) -> str:
    return (result.stderr_text or result.text).strip()


def _says(reason: str, phrases: Sequence[str]) -> bool:
    lowered = reason.lower()
    return any(phrase in lowered for phrase in phrases)


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return "; ".join(lines[-3:])
