"""RevokedHostKeys (ssh_config(5)): host keys that must be refused whatever known_hosts says, as OpenSSH does.

OpenSSH reads the file in one of two forms: a text file of public keys, one `TYPE BASE64 [comment]` per line
(blank lines, `#` comments and lines it cannot parse are skipped, a certificate line revokes its key), or a
binary Key Revocation List from `ssh-keygen -k`. It also refuses EVERY host when the file is missing or
unreadable, so that a revocation list that went away never turns into "nothing is revoked". specops does the
same for the text form and for a missing file. A binary KRL is refused with a message saying so: it is never
read as "no revocations", which would accept exactly the keys it was written to stop.

Checked before known_hosts (as OpenSSH does): the host's plain key, the key its certificate certifies, and the
certificate's CA key are each refused when the file lists them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from specops.host.host_certs import parse_certificate
from specops.host.known_hosts import REVOKED, KnownKey, blob_type, decode_key

KRL_MAGIC = b"SSHKRL\n\0"


class RevokedFileError(ValueError):
    """The RevokedHostKeys file cannot be used: every host is refused, with this message saying why."""


def read_revoked(path: str) -> list[KnownKey]:
    """The keys the file revokes, each with its `FILE:LINE` (the CA or the plain key for a certificate line)."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise RevokedFileError(f"RevokedHostKeys {path} cannot be read ({error.strerror or error})") from None
    if data.startswith(KRL_MAGIC):
        raise RevokedFileError(
            f"RevokedHostKeys {path} is a binary key revocation list (KRL), which specops cannot read"
        )
    keys = []
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        blob = _key_blob(line)
        if blob is not None:
            keys.append(KnownKey(REVOKED, "*", blob_type(blob) or "", blob, f"{path}:{number}"))
    return keys


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


def revoking(keys: Iterable[KnownKey], presented: Iterable[bytes]) -> tuple[KnownKey, ...]:
    """The lines of the file that name one of the presented blobs (plain key, certified key, CA key)."""
    wanted = set(presented)
    return tuple(key for key in keys if key.blob in wanted)
