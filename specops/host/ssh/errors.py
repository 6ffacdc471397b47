"""The SSH failures an operator meets, as ConnectError (exit 4) with the target and what to do next.

Kept apart from connection.py so the wording is easy to read and review, and so connection.py stays about the protocol.
Every message names `user@host:port`: "connection refused" is useless without knowing where.
"""

from __future__ import annotations

import errno
import os
import shlex
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING

from specops.errors import ConnectError
from specops.host.ssh.target import SshTarget, split_ssh_spec

if TYPE_CHECKING:
    from specops.host.ssh.known_hosts import Verdict


def ssh_command(target: SshTarget, verbose: bool = False) -> str:
    """A valid `ssh` line for the same place: OpenSSH takes no `host:port`, so an inventory value with a port
    becomes `ssh -p PORT [user@]host`; an alias (resolved through ~/.ssh/config) stays as it is."""
    words = ["ssh", "-v"] if verbose else ["ssh"]
    if target.proxy_jump:  # the same hops as specops (they may come from specops.toml, which ssh does not read)
        words += ["-J", target.proxy_jump]
    user, host, port = split_ssh_spec(target.alias)
    if port is None:
        return shlex.join([*words, target.alias])
    return shlex.join([*words, "-p", str(port), f"{user}@{host}" if user else host])


def _ssh_command(target: SshTarget) -> str:
    return ssh_command(target, verbose=True)


class HopError(ConnectError):
    """A jump host failed; `hop` is the one that did, whichever host's connection was on its way through it."""

    def __init__(self, name: str, hop: SshTarget, detail: str, hint: str) -> None:
        super().__init__(f"{name}: jump host {hop.alias} ({hop.address}) failed: {detail}", hint=hint)
        self.hop, self.detail = hop, detail


def hop_failed(name: str, hop: SshTarget, error: ConnectError) -> HopError:
    """Name the hop that failed (unreachable, wrong host key, authentication) in the error of the host behind it."""
    if isinstance(error, HopError):  # a hop further out failed: keep naming that one
        return HopError(name, error.hop, error.detail, error.hint)
    detail = error.message.removeprefix(f"{hop.address}: ")
    return HopError(name, hop, detail, error.hint)


def hop_refused(name: str, target: SshTarget, hop: SshTarget, reason: str) -> ConnectError:
    """The jump host is up, but would not open a connection onward to the target's sshd."""
    return ConnectError(
        f"{name}: the jump host {hop.alias} ({hop.address}) could not reach {target.address}: {reason}",
        hint=f"is {target.hostname}:{target.port} reachable from {hop.hostname}, and does its sshd allow "
        "forwarding (AllowTcpForwarding yes)?",
    )


def proxy_command_failed(target: SshTarget, detail: str) -> ConnectError:
    return ConnectError(
        f"{target.address}: ProxyCommand failed: {detail}",
        hint=_proxy_hint(target),
    )


def _proxy_hint(target: SshTarget) -> str:
    return f"run the ProxyCommand of ~/.ssh/config by hand, or `{_ssh_command(target)}`"


def proxy_command_exited(target: SshTarget, status: int, stderr: str) -> ConnectError:
    """The ProxyCommand ended by itself before the SSH handshake: it, not the server, is what failed."""
    ended = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
    said = f": {stderr}" if stderr else " (it wrote nothing to stderr)"
    return ConnectError(
        f"{target.address}: ProxyCommand `{target.proxy_command}` {ended}{said}",
        hint=_proxy_hint(target),
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


def host_key_refused(
    target: SshTarget, verdict: Verdict, presented: tuple[str, str], files: Sequence[str]
) -> ConnectError:
    """The host key is not one known_hosts trusts for this host: say which of OpenSSH's cases it is."""
    key_type, offered = presented
    lines = ", ".join(f"{line.where} ({line.key_type} {line.fingerprint})" for line in verdict.lines)
    if verdict.status == "revoked":
        return ConnectError(
            f"{target.address}: the host presented {key_type} {offered}, which known_hosts marks @revoked "
            f"({lines}). specops refuses to connect.",
            hint="this key must never be accepted again; have the host's admin install a new host key",
        )
    if verdict.status == "changed":
        return changed_host_key(target, lines, f"{key_type} {offered}")
    if verdict.status == "ca-only":
        return ConnectError(
            f"{target.address}: known_hosts trusts host certificates from a @cert-authority for "
            f"{target.principal} ({lines}), but the host offered no certificate, only its key {key_type} {offered}",
            hint="give the host a certificate signed by that CA (sshd's HostCertificate), or add its own key to "
            f"known_hosts as a plain line: {_keyscan_hint(target)}",
        )
    if verdict.status == "cert-refused":
        return ConnectError(
            f"{target.address}: the host's certificate was refused: {verdict.reason} (known_hosts: {lines}); its "
            f"key {key_type} {offered} is not in known_hosts as a plain line either",
            hint=f"re-sign the host key: `ssh-keygen -s CA_KEY -h -n {target.principal} -I ID -V +52w "
            "/etc/ssh/ssh_host_ed25519_key.pub` on the CA, then reload sshd; or add the host's own key as a plain "
            f"line: {_keyscan_hint(target)}",
        )
    return unknown_host_key(target, key_type, offered, files)


def revoked_by_file(target: SshTarget, presented: tuple[str, str], lines: Sequence[str]) -> ConnectError:
    """The host's key (or its certificate's CA) is listed in the RevokedHostKeys file."""
    key_type, offered = presented
    return ConnectError(
        f"{target.address}: the host presented {key_type} {offered}, which RevokedHostKeys revokes "
        f"({', '.join(lines)}). specops refuses to connect.",
        hint="this key must never be accepted again; have the host's admin install a new host key",
    )


def revoked_file_unusable(target: SshTarget, why: str) -> ConnectError:
    """RevokedHostKeys cannot be used: OpenSSH then refuses every host, and so does specops."""
    return ConnectError(
        f"{target.address}: {why}; without a usable revocation list no host key is accepted (as with OpenSSH), "
        "so specops refuses to connect",
        hint="point RevokedHostKeys in ~/.ssh/config at a readable text file of revoked public keys "
        "(one `TYPE BASE64` line per key), or remove the RevokedHostKeys line",
    )


def _keyscan_hint(target: SshTarget) -> str:
    port = f"-p {target.port} " if target.port != 22 else ""
    return f"`ssh-keyscan {port}{target.hostname} >> ~/.ssh/known_hosts` (after checking the fingerprint)"


def unknown_host_key(target: SshTarget, key_type: str, fingerprint: str, files: Sequence[str]) -> ConnectError:
    looked = ", ".join(files) or "no known_hosts file exists"
    return ConnectError(
        f"{target.address}: the host key for {target.known_hosts_name} is not in known_hosts "
        f"(looked in: {looked}); the host offered {key_type} {fingerprint}",
        hint=(
            "specops never accepts unknown host keys. Check the fingerprint with the host's admin, then connect "
            f"once with `{ssh_command(target)}` and accept it, or run {_keyscan_hint(target)}"
        ),
    )


def changed_host_key(target: SshTarget, expected: str, presented: str) -> ConnectError:
    name = target.known_hosts_name
    return ConnectError(
        f"{target.address}: WARNING: THE HOST KEY FOR {name} HAS CHANGED! known_hosts has {expected} "
        f"but the host presented {presented}. Someone could be intercepting the connection (man-in-the-middle), "
        "or the host was reinstalled. specops refuses to connect.",
        hint=(
            "verify the new fingerprint out of band; only if the change is expected, remove the old entry with "
            f"`ssh-keygen -R {shlex.quote(name)}` and connect once with `{ssh_command(target)}`"
        ),
    )


def auth_failed(target: SshTarget, tried: Sequence[str]) -> ConnectError:
    missing = [path for path in target.identity_files if not os.path.isfile(path)]
    hint = f"is the public key in ~{target.user}/.ssh/authorized_keys on the host? try `{_ssh_command(target)}`"
    if missing:
        hint = f"IdentityFile not found: {', '.join(missing)}; " + hint
    if not target.agent_socket:
        hint += " (no ssh-agent: SSH_AUTH_SOCK is not set, or IdentityAgent none)"
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
