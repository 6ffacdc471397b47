"""ProxyCommand: the socket for a host is a local command's stdin/stdout (`ProxyCommand nc %h %p`).

Run without a shell when the command is plain words (the tokens %h %p %r %n %% expanded inside them); with
shell syntax (pipes, quotes, `$`...) it runs as OpenSSH runs it, `/bin/sh -c "exec COMMAND"`, with each value put
in for a token quoted as one word, so a hostname can never become shell code. The command talks over a
socketpair, so its end of file reaches the SSH transport as a closed connection (paramiko's own ProxyCommand spins
on it), and whatever it wrote to stderr goes into the error message.
"""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import threading
from collections.abc import Mapping

from specops.host.target import SshTarget

SHELL_SYNTAX = re.compile(r"""[|&;<>()$`\\"'*?\[\]#~={}!\n]""")
_TOKEN = re.compile(r"%(.)")
STDERR_KEPT = 2000
EXIT_WAIT_S = 0.5  # after a failed handshake: how long a ProxyCommand that is ending gets to finish


def proxy_argv(target: SshTarget) -> list[str]:
    """The argv that runs the target's ProxyCommand."""
    command = target.proxy_command or ""
    tokens = {"h": target.hostname, "p": str(target.port), "r": target.user, "n": target.alias}
    if not SHELL_SYNTAX.search(command):
        return [_expand(word, tokens, quote=False) for word in command.split()]
    return ["/bin/sh", "-c", "exec " + _expand(command, tokens, quote=True)]


def _expand(text: str, tokens: Mapping[str, str], quote: bool) -> str:
    def token(found: re.Match[str]) -> str:
        name = found.group(1)
        if name == "%":
            return "%"
        if name not in tokens:
            raise ValueError(f"unknown token %{name} in ProxyCommand")
        return shlex.quote(tokens[name]) if quote else tokens[name]

    return _TOKEN.sub(token, text)


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
