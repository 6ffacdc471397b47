"""The host-key decision for one connection (each hop has its own), from known_hosts as OpenSSH reads it.

Accepts only a listed key, refuses an unknown, changed or revoked one with OpenSSH's wording (errors.py), and
never adds anything (Fabric's AutoAddPolicy is the anti-pattern). Pure: connection.py hands it the key's bytes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from specops.errors import ConnectError
from specops.host.ssh import errors, host_certs, known_hosts, revoked
from specops.host.ssh.target import SshTarget

USER_KNOWN_HOSTS = (Path("~/.ssh/known_hosts"), Path("~/.ssh/known_hosts2"))  # OpenSSH's defaults
GLOBAL_KNOWN_HOSTS = (Path("/etc/ssh/ssh_known_hosts"), Path("/etc/ssh/ssh_known_hosts2"))


def known_hosts_files(target: SshTarget, defaults: Sequence[Path] | None = None) -> list[Path]:
    """The files OpenSSH would read for this target: UserKnownHostsFile and GlobalKnownHostsFile from
    ~/.ssh/config REPLACE their defaults (a host pinned to its own file is not also accepted by a stale line in
    ~/.ssh/known_hosts). `defaults`, when given, replaces both defaults (tests, and callers that
    name their own files)."""
    user_default, global_default = (USER_KNOWN_HOSTS, GLOBAL_KNOWN_HOSTS) if defaults is None else (defaults, ())
    user, system = target.known_hosts_files, target.global_known_hosts_files
    return [
        *(user_default if user is None else map(Path, user)),
        *(global_default if system is None else map(Path, system)),
    ]


class HostKeyChecker:
    """known_hosts read once for a target; `check` raises the ConnectError that names the case."""

    def __init__(self, target: SshTarget, files: Sequence[Path]) -> None:
        self.target = target
        self.name = target.known_hosts_name
        try:
            self.entries, self.loaded = known_hosts.read_files(files)
        except OSError as error:
            raise ConnectError(str(error)) from None
        self.revoked: revoked.Revocations | None = None
        if target.revoked_host_keys is not None:
            try:
                self.revoked = revoked.read_revoked(target.revoked_host_keys)
            except revoked.RevokedFileError as error:
                raise errors.revoked_file_unusable(target, str(error)) from None

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
        presented = (key_type, known_hosts.fingerprint(blob))
        parsed = host_certs.parse_certificate(certificate) if certificate is not None else None
        listed = self.revoked.reasons(blob, parsed) if self.revoked is not None else []
        if listed:  # before known_hosts, as OpenSSH checks it
            raise errors.revoked_by_file(self.target, presented, listed)
        refuse_all: host_certs.Verify = lambda ca, signed, signature: False  # noqa: E731 (no check: no trust)
        verdict = host_certs.decide(self.entries, self.name, self.target.principal, (key_type, blob, certificate),
                                    time.time(), verify or refuse_all)  # fmt: skip
        if verdict.status != "trusted":
            raise errors.host_key_refused(self.target, verdict, presented, self.loaded)
