"""The host-key decision for one connection (each hop has its own), from known_hosts as OpenSSH reads it.

Accepts only a listed key, refuses an unknown, changed or revoked one with OpenSSH's wording (ssh_errors.py), and
never adds anything (Fabric's AutoAddPolicy is the anti-pattern). Pure: ssh.py hands it the key's bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from specops.errors import ConnectError
from specops.host import known_hosts, ssh_errors
from specops.host.target import SshTarget


class HostKeyChecker:
    """known_hosts read once for a target; `check` raises the ConnectError that names the case."""

    def __init__(self, target: SshTarget, files: Sequence[Path]) -> None:
        self.target = target
        self.name = known_hosts.lookup_name(target.hostname, target.port)
        try:
            self.entries, self.loaded = known_hosts.read_files(files)
        except OSError as error:
            raise ConnectError(str(error)) from None

    def known_types(self) -> list[str]:
        """Asked for first in the key exchange, so a host with several keys presents the one we know."""
        return known_hosts.known_types(self.entries, self.name)

    def check(self, blob: bytes, fallback_type: str) -> None:
        """`blob`: the plain key, also when the host sent a certificate (never trusted as one)."""
        key_type = known_hosts.blob_type(blob) or fallback_type
        verdict = known_hosts.check(self.entries, self.name, key_type, blob)
        if verdict.status != "trusted":
            presented = (key_type, known_hosts.fingerprint(blob))
            raise ssh_errors.host_key_refused(self.target, verdict, presented, self.loaded)
