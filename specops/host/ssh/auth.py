"""Public-key authentication with paramiko, in the order keyorder.py decides: ssh-agent's keys, then key files
(a passphrase asked once per key and run, passphrase.py), each with its certificate when one matches.

Why apart from connection.py: the choice of keys is OpenSSH's rules (pure, in keyorder.py and passphrase.py);
what is left here is handing those keys to paramiko, and that an agent that does not answer, or a file that is
not a key paramiko can read, is skipped as OpenSSH skips it, instead of failing the connection.
"""

from __future__ import annotations

import contextlib
import functools
import socket
from collections.abc import Sequence

from specops.host.ssh.keyorder import key_order
from specops.host.ssh.paramiko_import import lean_paramiko_import
from specops.host.ssh.passphrase import KeyUnlocker
from specops.host.ssh.target import SshTarget

with lean_paramiko_import():
    import paramiko
    import paramiko.agent

AGENT_TIMEOUT_S = 10.0  # an ssh-agent that has not answered by then is skipped

__all__ = ["authenticate"]

_unlocker = KeyUnlocker()


def authenticate(transport: paramiko.Transport, target: SshTarget) -> list[str]:
    """Public-key authentication in OpenSSH's order (keyorder.py); returns what it tried, for the error."""
    tried: list[str] = []
    agent = _agent(target)
    agent_keys = list(agent.get_keys()) if agent is not None else []
    described = [(key.asbytes(), f"{key.get_name()} {key.comment or ''}") for key in agent_keys]
    try:
        for candidate in key_order(target, described):
            key: paramiko.PKey | None = (
                agent_keys[candidate.agent_index]
                if candidate.agent_index is not None
                else _load_key(candidate.path or "", target.certificate_files)
            )
            if key is None:
                continue
            tried.append(candidate.label)
            with contextlib.suppress(paramiko.AuthenticationException):
                transport.auth_publickey(target.user, key)
            if transport.is_authenticated():
                break
    finally:
        if agent is not None:
            agent._close()  # type: ignore[attr-defined]  # paramiko's AgentSSH has no public close
    return tried


def _agent(target: SshTarget) -> paramiko.agent.AgentSSH | None:
    """ssh-agent at SSH_AUTH_SOCK or IdentityAgent; an agent that does not answer is skipped, as OpenSSH does."""
    if not target.agent_socket:
        return None
    agent = paramiko.agent.AgentSSH()
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(AGENT_TIMEOUT_S)
        conn.connect(target.agent_socket)
        agent._connect(conn)  # type: ignore[attr-defined]  # (the one way to use a socket other than $SSH_AUTH_SOCK)
    except (OSError, paramiko.SSHException):
        return None
    return agent


def _load_key(path: str, certificates: Sequence[str]) -> paramiko.PKey | None:
    """The key file (asking for its passphrase once per run), with its certificate when one matches."""
    try:
        key: paramiko.PKey = paramiko.PKey.from_path(path)
    except (paramiko.PasswordRequiredException, TypeError):  # cryptography says TypeError for a missing passphrase
        key = _unlocker.unlock(path, functools.partial(_decrypt, path))  # type: ignore[assignment]
    except (paramiko.SSHException, ValueError, OSError):
        return None  # not a key paramiko can read: OpenSSH skips it too
    for certificate in (*certificates, f"{path}-cert.pub"):
        with contextlib.suppress(OSError, ValueError, paramiko.SSHException):
            key.load_certificate(certificate)
            break
    return key


def _decrypt(path: str, passphrase: str) -> paramiko.PKey:
    try:
        return paramiko.PKey.from_path(path, passphrase.encode())  # type: ignore[arg-type]  # bytes, not str
    except (paramiko.SSHException, ValueError, TypeError) as error:
        raise ValueError("wrong passphrase") from error
