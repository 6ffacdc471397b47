"""The SSH failures an operator meets, as ConnectError (exit 4) with the target and what to do next.

Kept apart from ssh.py so the wording is easy to read and review, and so ssh.py stays about the protocol.
Every message names `user@host:port`: "connection refused" is useless without knowing where.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Sequence

from specops.errors import ConnectError
from specops.host.target import SshTarget


def _ssh_command(target: SshTarget) -> str:
    return f"ssh -v {target.alias}"


def proxy_unsupported(target: SshTarget) -> ConnectError:
    via = f"ProxyJump {target.proxy_jump}" if target.proxy_jump else f"ProxyCommand {target.proxy_command}"
    return ConnectError(
        f"{target.alias}: ~/.ssh/config reaches this host through {via}, which specops does not support yet",
        hint="give specops a host it can reach directly (e.g. a local port forward: ssh -L) ",
    )


def socket_failed(target: SshTarget, error: OSError, timeout: float) -> ConnectError:
    where = target.address
    if isinstance(error, socket.gaierror):
        return ConnectError(
            f"{where}: cannot resolve host name {target.hostname!r} ({error.strerror})",
            hint="check the spelling, or the HostName for this alias in ~/.ssh/config",
        )
    if isinstance(error, TimeoutError):
        return ConnectError(
            f"{where}: no answer within {timeout:g}s (connect timed out)",
            hint="is the host up and the port open through firewalls? raise ConnectTimeout in ~/.ssh/config",
        )
    if isinstance(error, ConnectionRefusedError):
        return ConnectError(
            f"{where}: connection refused (nothing listens on port {target.port})",
            hint="is sshd running on the host, and is Port right in ~/.ssh/config or the inventory?",
        )
    if error.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return ConnectError(f"{where}: no route to host ({error.strerror})", hint="check the network path")
    return ConnectError(f"{where}: cannot connect: {error.strerror or error}", hint=f"try `{_ssh_command(target)}`")


def unknown_host_key(target: SshTarget, key_type: str, fingerprint: str, files: Sequence[str]) -> ConnectError:
    looked = ", ".join(files) or "no known_hosts file exists"
    keyscan = (
        f"ssh-keyscan -p {target.port} {target.hostname}" if target.port != 22 else f"ssh-keyscan {target.hostname}"
    )
    return ConnectError(
        f"{target.address}: the host key for {target.hostname} is not in known_hosts "
        f"(looked in: {looked}); the host offered {key_type} {fingerprint}",
        hint=(
            "specops never accepts unknown host keys. Check the fingerprint with the host's admin, then connect "
            f"once with `ssh {target.alias}` and accept it, or append `{keyscan}` to ~/.ssh/known_hosts"
        ),
    )


def changed_host_key(target: SshTarget, expected: str, presented: str) -> ConnectError:
    return ConnectError(
        f"{target.address}: WARNING: THE HOST KEY FOR {target.hostname} HAS CHANGED! known_hosts has {expected} "
        f"but the host presented {presented}. Someone could be intercepting the connection (man-in-the-middle), "
        "or the host was reinstalled. specops refuses to connect.",
        hint=(
            "verify the new fingerprint out of band; only if the change is expected, remove the old entry with "
            f"`ssh-keygen -R {target.hostname}` and connect once with `ssh {target.alias}`"
        ),
    )


def auth_failed(target: SshTarget, keys: Sequence[str], encrypted: bool = False) -> ConnectError:
    if encrypted:
        return ConnectError(
            f"{target.address}: authentication failed: the key is protected by a passphrase",
            hint="load it into ssh-agent (`ssh-add KEY`); specops never asks for passphrases",
        )
    tried = [*keys]
    if not target.identities_only:
        tried += ["ssh-agent", "~/.ssh/id_*"]
    missing = [path for path in target.identity_files if path not in keys]
    hint = f"is the public key in ~{target.user}/.ssh/authorized_keys on the host? try `{_ssh_command(target)}`"
    if missing:
        hint = f"IdentityFile not found: {', '.join(missing)}; " + hint
    return ConnectError(
        f"{target.address}: authentication failed as {target.user!r} (tried: {', '.join(tried) or 'no keys'})",
        hint=hint,
    )


def handshake_failed(target: SshTarget, error: BaseException, timeout: float) -> ConnectError:
    detail = str(error) or type(error).__name__
    timed_out = isinstance(error.__cause__ or error.__context__, TimeoutError)
    if timed_out or detail == "No existing session":  # paramiko's words when the handshake did not finish in time
        detail = f"no SSH handshake within {timeout:g}s"
    elif detail.startswith("Error reading SSH protocol banner"):
        detail = "the server did not answer with an SSH banner (is it an SSH server?)"
    return ConnectError(
        f"{target.address}: SSH handshake failed: {detail}",
        hint="is this port an SSH server, and is it overloaded (MaxStartups)? try `" + _ssh_command(target) + "`",
    )


def connection_lost(name: str, target: SshTarget, error: BaseException) -> ConnectError:
    detail = str(error) or type(error).__name__
    return ConnectError(
        f"{name} ({target.address}): the SSH connection was lost: {detail}",
        hint="the host may have rebooted or the network dropped; run the command again",
    )


def tunnel_refused(name: str, remote_host: str, remote_port: int, reason: str) -> ConnectError:
    return ConnectError(
        f"{name}: the host could not open {remote_host}:{remote_port} for specops ({reason})",
        hint="is the server listening there? (`ss -ltn` on the host); sshd also needs AllowTcpForwarding yes",
    )
