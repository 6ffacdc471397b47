"""The host-key decision for one connection (each hop has its own), from known_hosts as OpenSSH reads it.

Accepts only a listed key, refuses an unknown, changed or revoked one with OpenSSH's wording (ssh_errors.py), and
never adds anything (Fabric's AutoAddPolicy is the anti-pattern). Pure: ssh.py hands it the key's bytes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from specops.errors import ConnectError
from specops.host import host_certs, known_hosts, ssh_errors
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

    def trusts_certificates(self) -> bool:
        """An `@cert-authority` line covers this host: its certificate is then asked for first, as OpenSSH does."""
        return known_hosts.trusts_certificates(self.entries, self.name)

    def check(
        self, blob: bytes, fallback_type: str, certificate: bytes | None = None, verify: host_certs.Verify | None = None
    ) -> None:
        """`blob`: the plain key, also when the host sent a certificate; `certificate` (with `verify`, the CA
        signature check paramiko does) is trusted only as host_certs.py allows, else the plain key decides."""
        key_type = known_hosts.blob_type(blob) or fallback_type
        refuse_all: host_certs.Verify = lambda ca, signed, signature: False  # noqa: E731 (no check: no trust)
        verdict = host_certs.decide(self.entries, self.name, self.target.hostname, (key_type, blob, certificate),
                                    time.time(), verify or refuse_all)  # fmt: skip
        if verdict.status != "trusted":
            presented = (key_type, known_hosts.fingerprint(blob))
            raise ssh_errors.host_key_refused(self.target, verdict, presented, self.loaded)
