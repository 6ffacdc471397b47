"""OpenSSH host certificates checked as OpenSSH checks them (PROTOCOL.certkeys; sshconnect.c check_host_key).

A host with `HostCertificate` presents its key signed by a certificate authority; known_hosts trusts the CA with
an `@cert-authority PATTERNS KEY` line instead of listing every host's key. paramiko negotiates certificate host
keys and proves that the host holds the certified key (the key exchange's signature), but it does not look at
the certificate itself. This module does, without paramiko (the CA's signature is checked through `verify`,
which connection.py gives it): the certificate is accepted when

- it is a HOST certificate, valid now (valid after <= now < valid before), with no critical options;
- its principals name the host (as given in the ssh target), or it lists none (OpenSSH accepts any host then);
- it is signed by a key that an `@cert-authority` line for this host (`[host]:port` off port 22) lists, with a
  signature algorithm OpenSSH accepts by default (not `ssh-rsa`, i.e. not SHA-1), and the signature verifies;
- neither the CA key nor the certified key is `@revoked`.

Otherwise OpenSSH falls back to the plain key (a line for the host listing it); so does specops, and says what was
wrong with the certificate when the plain key is not trusted either.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from specops.host.ssh.known_hosts import CERT_AUTHORITY, REVOKED, KnownKey, Verdict, check, host_matches

CERT_SUFFIX = "-cert-v01@openssh.com"
HOST_CERT = 2
# the public fields of each key type, between the nonce and the serial (s: string, m: mpint)
_KEY_FIELDS = {"ssh-ed25519": "s", "ssh-rsa": "mm", "ecdsa-sha2-nistp256": "ss", "ecdsa-sha2-nistp384": "ss",
               "ecdsa-sha2-nistp521": "ss"}  # fmt: skip
REFUSED_SIGNATURES = ("ssh-rsa",)  # SHA-1: not in OpenSSH's default CASignatureAlgorithms since 8.2
Verify = Callable[[bytes, bytes, bytes], bool]  # (CA key blob, signed data, signature blob) -> valid


@dataclass(frozen=True)
class HostCertificate:
    cert_type: str  # "ssh-ed25519-cert-v01@openssh.com"
    key_blob: bytes  # the certified key as a plain public key blob
    serial: int
    kind: int  # 1 user, 2 host
    key_id: str
    principals: tuple[str, ...]
    valid_after: int
    valid_before: int
    critical_options: bytes
    ca_blob: bytes
    signature: bytes
    signed: bytes  # everything the CA signed: the certificate up to its signature


class Reader:
    """SSH wire format (RFC 4251): strings and big-endian integers, refusing to read past the end."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, size: int) -> bytes:
        if self.at + size > len(self.data):
            raise ValueError("truncated data")
        chunk, self.at = self.data[self.at : self.at + size], self.at + size
        return chunk

    def string(self) -> bytes:
        (size,) = struct.unpack(">I", self.take(4))
        return self.take(size)

    def uint(self, size: int) -> int:
        return int.from_bytes(self.take(size), "big")


def _string(value: bytes) -> bytes:
    return struct.pack(">I", len(value)) + value


def parse_certificate(blob: bytes) -> HostCertificate | None:
    """The fields of an OpenSSH certificate blob; None when it is not one of the key types specops knows."""
    try:
        reader = Reader(blob)
        cert_type = reader.string().decode("ascii")
        plain_type = cert_type.removesuffix(CERT_SUFFIX)
        if not cert_type.endswith(CERT_SUFFIX) or plain_type not in _KEY_FIELDS:
            return None
        reader.string()  # nonce
        fields = [reader.string() for _ in _KEY_FIELDS[plain_type]]
        serial, kind, key_id = reader.uint(8), reader.uint(4), reader.string().decode("utf-8", "replace")
        principals_reader = Reader(reader.string())
        principals = []
        while principals_reader.at < len(principals_reader.data):
            principals.append(principals_reader.string().decode("utf-8", "replace"))
        valid_after, valid_before = reader.uint(8), reader.uint(8)
        critical, _extensions, _reserved = reader.string(), reader.string(), reader.string()
        ca_blob = reader.string()
        signed = blob[: reader.at]
        signature = reader.string()
    except (ValueError, UnicodeDecodeError, struct.error):
        return None
    key_blob = _string(plain_type.encode()) + b"".join(_string(field) for field in fields)
    return HostCertificate(cert_type, key_blob, serial, kind, key_id, tuple(principals), valid_after, valid_before,
                           critical, ca_blob, signature, signed)  # fmt: skip


def certificate_problem(cert: HostCertificate, principal: str, now: float) -> str | None:
    """Why OpenSSH would not accept this certificate for `principal` at `now` (its signer aside); None: fine."""
    if cert.kind != HOST_CERT:
        return f"certificate {cert.key_id!r} is not a host certificate"
    if now < cert.valid_after:
        return f"certificate {cert.key_id!r} is not valid yet"
    if now >= cert.valid_before:
        return f"certificate {cert.key_id!r} has expired"
    if cert.principals and principal not in cert.principals:
        return f"certificate {cert.key_id!r} names {', '.join(cert.principals)}, not {principal}"
    if cert.critical_options:
        return f"certificate {cert.key_id!r} carries critical options (unsupported for host certificates)"
    return None


def _signature_type(signature: bytes) -> str:
    try:
        return Reader(signature).string().decode("ascii", "replace")
    except ValueError:
        return ""


def check_certificate(
    entries: Sequence[KnownKey], name: str, principal: str, cert: HostCertificate, now: float, verify: Verify
) -> tuple[Verdict | None, str]:
    """(a verdict, "") when the certificate decides: trusted, or revoked; (None, why) when OpenSSH would fall
    back to the plain key, with why the certificate did not do (empty when no CA is listed for the host)."""
    mine = [entry for entry in entries if host_matches(entry.patterns, name)]
    revoked = tuple(e for e in mine if e.marker == REVOKED and e.blob in (cert.ca_blob, cert.key_blob))
    if revoked:
        return Verdict("revoked", revoked), ""
    authorities = [entry for entry in mine if entry.marker == CERT_AUTHORITY]
    signer = next((entry for entry in authorities if entry.blob == cert.ca_blob), None)
    if signer is None:
        return None, "its signer is not an @cert-authority of known_hosts for this host" if authorities else ""
    problem = certificate_problem(cert, principal, now)
    if problem is not None:
        return None, problem
    if _signature_type(cert.signature) in REFUSED_SIGNATURES:
        return None, f"certificate {cert.key_id!r} is signed with ssh-rsa (SHA-1), which OpenSSH refuses"
    if not verify(cert.ca_blob, cert.signed, cert.signature):
        return None, f"certificate {cert.key_id!r}: the CA's signature does not verify"
    return Verdict("trusted", (signer,)), ""


def decide(
    entries: Sequence[KnownKey],
    name: str,
    principal: str,
    presented: tuple[str, bytes, bytes | None],
    now: float,
    verify: Verify,
) -> Verdict:
    """The verdict on what the host presented, (key type, plain key blob, certificate blob or None), as OpenSSH
    reaches it: a certificate first, else the plain key; "cert-refused" names what was wrong with a certificate
    when the plain key is not trusted either."""
    key_type, plain, cert_blob = presented
    cert = parse_certificate(cert_blob) if cert_blob is not None else None
    reason = ""
    if cert is not None:
        verdict, reason = check_certificate(entries, name, principal, cert, now, verify)
        if verdict is not None:
            return verdict
    verdict = check(entries, name, key_type, plain)
    if verdict.status in ("trusted", "revoked") or not reason:
        return verdict
    authorities = tuple(e for e in entries if e.marker == CERT_AUTHORITY and host_matches(e.patterns, name))
    return Verdict("cert-refused", authorities, reason)


def certificate_types(key_types: Sequence[str]) -> list[str]:
    """The certificate variants of these host key algorithms (rsa-sha2-512 -> rsa-sha2-512-cert-v01@openssh.com)."""
    return [name + CERT_SUFFIX for name in key_types if not name.endswith(CERT_SUFFIX)]
