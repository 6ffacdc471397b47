"""RevokedHostKeys (ssh_config(5)): host keys that must be refused whatever known_hosts says, as OpenSSH does.

OpenSSH reads the file in one of two forms, and so does specops: a binary Key Revocation List from
`ssh-keygen -k` (host/ssh/krl.py), or a text file of public keys, one `TYPE BASE64 [comment]` per line (blank
lines, `#` comments and lines it cannot parse are skipped, a certificate line revokes its key). A missing or
unreadable file, or a KRL that cannot be parsed, refuses EVERY host, as in OpenSSH: a revocation list that
went away or went bad never turns into "nothing is revoked".

Checked before known_hosts (as OpenSSH does): the host's plain key and its certificate's CA key are each refused
when the file lists them, and a KRL can also revoke the certificate itself (by serial or key ID).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from specops.host.ssh import krl
from specops.host.ssh.host_certs import HostCertificate, parse_certificate
from specops.host.ssh.known_hosts import decode_key, fingerprint


class RevokedFileError(ValueError):
    """The RevokedHostKeys file cannot be used: every host is refused, with this message saying why."""


class Revocations(Protocol):
    def reasons(self, plain: bytes, certificate: HostCertificate | None) -> list[str]:
        """Where the file revokes what the host presented (`FILE:LINE ...`); empty when it does not."""
        ...


@dataclass(frozen=True)
class _KeyList:
    """The text form: revoked public key blobs, each with the `FILE:LINE` that lists it."""

    keys: tuple[tuple[bytes, str], ...]

    def reasons(self, plain: bytes, certificate: HostCertificate | None) -> list[str]:
        presented = {plain} | ({certificate.ca_blob} if certificate is not None else set())
        return [f"{where} ({fingerprint(blob)})" for blob, where in self.keys if blob in presented]


def read_revoked(path: str) -> Revocations:
    """The file's revocations, in whichever form it is; RevokedFileError when OpenSSH could not use it either."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise RevokedFileError(f"RevokedHostKeys {path} cannot be read ({error.strerror or error})") from None
    if data.startswith(krl.MAGIC):
        try:
            return krl.parse(data, path)
        except ValueError as error:
            raise RevokedFileError(f"RevokedHostKeys {path}: {error}") from None
    keys = []
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        blob = _key_blob(line)
        if blob is not None:
            keys.append((blob, f"{path}:{number}"))
    return _KeyList(tuple(keys))


def _key_blob(line: str) -> bytes | None:
    """The public key a line names (a certificate's certified key); None for what OpenSSH would skip."""
    fields = line.split()
    if len(fields) < 2 or fields[0].startswith("#"):
        return None
    blob = decode_key(fields[0], fields[1])
    if blob is None:
        return None
    certificate = parse_certificate(blob)
    return certificate.key_blob if certificate is not None else blob
