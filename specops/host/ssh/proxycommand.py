"""ProxyCommand: the socket for a host is a local command's stdin/stdout (`ProxyCommand nc %h %p`).

Run without a shell when the command is plain words (the tokens %h %p %r %n %% expanded inside them); with
shell syntax (pipes, quotes, `$`...) it runs as OpenSSH runs it, `/bin/sh -c "exec COMMAND"`. A value put in for
a token is never quoted (quoting cannot work: the command's own quotes around the token would undo it); instead
a value with any character outside letters, digits and `._:%@[]-`, or one starting with `-` (an option of the
proxy program), is refused, as OpenSSH 9.6+ refuses such names, so a HostName or User from ~/.ssh/config can
never become shell code or an option. The command talks over a socketpair, so its end of file reaches the SSH
transport as a closed connection (paramiko's own ProxyCommand spins on it), and whatever it wrote to stderr
goes into the error message.
"""

from __future__ import annotations

import re
import socket
import subprocess
import threading
from collections.abc import Mapping

from specops.host.ssh.target import SshTarget

SAFE_VALUE = re.compile(r"[A-Za-z0-9._:%@\[\]-]+")
SHELL_SYNTAX = re.compile(r"""[|&;<>()$`\\"'*?\[\]#~={}!\n]""")
_TOKEN = re.compile(r"%(.)")
STDERR_KEPT = 2000
EXIT_WAIT_S = 0.5  # after a failed handshake: how long a ProxyCommand that is ending gets to finish


def proxy_argv(target: SshTarget) -> list[str]:
    """The argv that runs the target's ProxyCommand."""
    command = target.proxy_command or ""
    tokens = {"h": target.hostname, "p": str(target.port), "r": target.user, "n": target.alias}
    if not SHELL_SYNTAX.search(command):
        return [_expand(word, tokens) for word in command.split()]
    return ["/bin/sh", "-c", "exec " + _expand(command, tokens)]


def _expand(text: str, tokens: Mapping[str, str]) -> str:
    def token(found: re.Match[str]) -> str:
        name = found.group(1)
        if name == "%":
            return "%"
        if name not in tokens:
            raise ValueError(f"unknown token %{name} in ProxyCommand")
        return _safe(name, tokens[name])

    return _TOKEN.sub(token, text)


def _safe(name: str, value: str) -> str:
    """The value itself, when nothing in it means anything to a shell or to the proxy program's options."""
    if not SAFE_VALUE.fullmatch(value) or value.startswith("-"):
        raise ValueError(
            f"ProxyCommand %{name} would be {value!r}: refused, only letters, digits and ._:%@[]- may be put into "
            "the command, and not a leading -"
        )
    return value


class ProxySocket(socket.socket):
    """Our end of the socketpair; closing it also ends the command (it would exit on EOF; a stuck one is killed)."""

    process: subprocess.Popen[bytes] | None = None
    stderr_tail: bytearray
    stderr_reader: threading.Thread | None = None

    def close(self) -> None:
        super().close()
        process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def exit_status(self, wait_s: float = EXIT_WAIT_S) -> int | None:
        """The command's exit status if it ended by itself (waiting up to `wait_s` for it), its stderr then read to
        the end; None while it runs. Asked before `close`, which would end it: a ProxyCommand that exits at once
        (a wrong host, a bastion that refuses) must be reported as that, not as a server that did not answer."""
        process = self.process
        if process is None:
            return None
        try:
            status = process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return None
        if self.stderr_reader is not None:
            self.stderr_reader.join(timeout=wait_s)
        return status

    def errors(self) -> str:
        """What the command wrote to stderr (its last lines), for the error message."""
        return self.stderr_tail.decode(errors="replace").strip()


def start_proxy(argv: list[str]) -> ProxySocket:
    """Start the command with a socketpair as its stdin and stdout; raises OSError when it cannot start."""
    ours, theirs = socket.socketpair()
    sock = ProxySocket(ours.family, ours.type, fileno=ours.detach())
    sock.stderr_tail = bytearray()
    try:
        sock.process = subprocess.Popen(
            argv, stdin=theirs.fileno(), stdout=theirs.fileno(), stderr=subprocess.PIPE, start_new_session=True
        )
    except OSError:
        sock.close()
        raise
    finally:
        theirs.close()
    sock.stderr_reader = threading.Thread(target=_keep_stderr, args=(sock,), daemon=True)
    sock.stderr_reader.start()
    return sock


def _keep_stderr(sock: ProxySocket) -> None:
    process = sock.process
    assert process is not None and process.stderr is not None
    for line in process.stderr:
        sock.stderr_tail.extend(line)
        del sock.stderr_tail[:-STDERR_KEPT]
