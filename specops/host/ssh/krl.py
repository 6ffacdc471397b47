"""OpenSSH Key Revocation Lists (`ssh-keygen -k`), read as OpenSSH reads them for RevokedHostKeys (PROTOCOL.krl).

A KRL revokes plain keys (listed whole, or by SHA-1 or SHA-256 hash of the key blob) and certificates, by
serial number (lists, ranges, bitmaps) or key ID, per CA (an empty CA key: any CA, key IDs only). A host key
is revoked when its plain key or its certificate's CA key is listed, or when its certificate is (krl.c
`ssh_krl_check_key`). Serial 0 is never matched, as in OpenSSH (the default when a CA gives none).

Anything this reader does not understand (another format version, an unknown section, truncated data) makes
the whole file unusable, and specops then refuses every host, as OpenSSH does for a KRL it cannot load.
Signature sections are skipped: OpenSSH does not require or check them for RevokedHostKeys either.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field

from specops.host.ssh.host_certs import HostCertificate, Reader
from specops.host.ssh.known_hosts import fingerprint

MAGIC = b"SSHKRL\n\0"
FORMAT_VERSION = 1
CERTIFICATES, EXPLICIT_KEY, FINGERPRINT_SHA1, SIGNATURE, FINGERPRINT_SHA256 = 1, 2, 3, 4, 5
SERIAL_LIST, SERIAL_RANGE, SERIAL_BITMAP, KEY_ID = 0x20, 0x21, 0x22, 0x23


@dataclass
class _CaRevocations:
    ranges: list[tuple[int, int]] = field(default_factory=list)
    bitmaps: list[tuple[int, int]] = field(default_factory=list)  # (first serial, bits)
    key_ids: set[str] = field(default_factory=set)

    def serial_revoked(self, serial: int) -> bool:
        if serial == 0:
            return False
        if any(low <= serial <= high for low, high in self.ranges):
            return True
        return any(serial >= first and (bits >> (serial - first)) & 1 for first, bits in self.bitmaps)


@dataclass
class Krl:
    """What one KRL revokes; `reasons` says why a presented key is revoked (empty: it is not)."""

    path: str
    keys: set[bytes] = field(default_factory=set)
    sha1: set[bytes] = field(default_factory=set)
    sha256: set[bytes] = field(default_factory=set)
    certificates: dict[bytes, _CaRevocations] = field(default_factory=dict)  # CA blob (b"": any CA)

    def reasons(self, plain: bytes, certificate: HostCertificate | None) -> list[str]:
        found = [f"{self.path} (KRL): {role} {fingerprint(blob)}" for role, blob in _keys(plain, certificate)
                 if self._key_revoked(blob)]  # fmt: skip
        if certificate is not None and self._certificate_revoked(certificate):
            found.append(f"{self.path} (KRL): certificate {certificate.key_id!r} serial {certificate.serial}")
        return found

    def _key_revoked(self, blob: bytes) -> bool:
        return (
            blob in self.keys
            or hashlib.sha1(blob).digest() in self.sha1
            or hashlib.sha256(blob).digest() in self.sha256
        )

    def _certificate_revoked(self, certificate: HostCertificate) -> bool:
        by_ca = self.certificates.get(certificate.ca_blob)
        if by_ca is not None and (by_ca.serial_revoked(certificate.serial) or certificate.key_id in by_ca.key_ids):
            return True
        any_ca = self.certificates.get(b"")
        return any_ca is not None and certificate.key_id in any_ca.key_ids


def _keys(plain: bytes, certificate: HostCertificate | None) -> list[tuple[str, bytes]]:
    return [("key", plain)] + ([("CA key", certificate.ca_blob)] if certificate is not None else [])


def parse(data: bytes, path: str) -> Krl:
    """The revocations in a KRL file's bytes; ValueError (saying what is wrong) when OpenSSH could not load it."""
    try:
        reader = Reader(data)
        if reader.take(len(MAGIC)) != MAGIC or reader.uint(4) != FORMAT_VERSION:
            raise ValueError("not a KRL of format version 1")
        reader.uint(8), reader.uint(8), reader.uint(8), reader.string(), reader.string()  # version, date, flags
        krl = Krl(path)
        while reader.at < len(data):
            kind, body = reader.uint(1), reader.string()
            _section(krl, kind, body)
    except (ValueError, struct.error) as error:  # UnicodeDecodeError is a ValueError
        raise ValueError(f"it cannot be read as a KRL: {error}") from None
    return krl


def _section(krl: Krl, kind: int, body: bytes) -> None:
    reader = Reader(body)
    if kind == CERTIFICATES:
        _certificates(krl, reader)
    elif kind in (EXPLICIT_KEY, FINGERPRINT_SHA1, FINGERPRINT_SHA256):
        into = {EXPLICIT_KEY: krl.keys, FINGERPRINT_SHA1: krl.sha1, FINGERPRINT_SHA256: krl.sha256}[kind]
        while reader.at < len(body):
            into.add(reader.string())
    elif kind != SIGNATURE:
        raise ValueError(f"unknown KRL section type {kind}")


def _certificates(krl: Krl, reader: Reader) -> None:
    ca_blob = reader.string()
    reader.string()  # reserved
    revoked = krl.certificates.setdefault(ca_blob, _CaRevocations())
    while reader.at < len(reader.data):
        kind, body = reader.uint(1), Reader(reader.string())
        if kind == SERIAL_LIST:
            while body.at < len(body.data):
                serial = body.uint(8)
                revoked.ranges.append((serial, serial))
        elif kind == SERIAL_RANGE:
            revoked.ranges.append((body.uint(8), body.uint(8)))
        elif kind == SERIAL_BITMAP:
            revoked.bitmaps.append((body.uint(8), int.from_bytes(body.string(), "big")))
        elif kind == KEY_ID:
            while body.at < len(body.data):
                revoked.key_ids.add(body.string().decode("utf-8"))
        else:
            raise ValueError(f"unknown KRL certificate section type {kind:#x}")
        if kind != KEY_ID and not ca_blob:
            raise ValueError("serial numbers revoked for any CA")
