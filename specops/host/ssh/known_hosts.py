"""known_hosts read and checked the way OpenSSH does it, without paramiko.

paramiko's own HostKeys stops at the first `@cert-authority`/`@revoked` line or unparsable key (so one odd line
made every host fail) and keeps only one key per type and host (so a stale line listed before the good one gave
a false "HOST KEY HAS CHANGED"). OpenSSH instead (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT", hostfile.c):

- skips lines it cannot parse;
- accepts the key if ANY line for the host holds it, and calls it changed only when a line for the host holds
  a different key of the same type and none holds the presented one;
- refuses a key that a matching `@revoked` line names, whatever else says;
- trusts host certificates signed by an `@cert-authority` key (checked in specops/host/ssh/host_certs.py), and
  falls back to the plain key when the certificate does not do.

Host patterns: comma-separated, `*` and `?` wildcards, `!` negation, `|1|salt|hash` hashed names; a non-22 port
is looked up as `[host]:port`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

CERT_AUTHORITY = "@cert-authority"
REVOKED = "@revoked"


@dataclass(frozen=True)
class KnownKey:
    """One usable known_hosts line: its marker ("" for a plain key), host patterns and key."""

    marker: str
    patterns: str
    key_type: str
    blob: bytes
    where: str  # "path:line", the way OpenSSH names an offending line

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.blob)


@dataclass(frozen=True)
class Verdict:
    """What known_hosts says about the presented key: trusted, revoked, changed, ca-only, cert-refused or unknown."""

    status: str
    lines: tuple[KnownKey, ...] = field(default=())  # the lines that decided it (revoked/changed/ca-only)
    reason: str = ""  # cert-refused: what was wrong with the host's certificate


def fingerprint(blob: bytes) -> str:
    """`SHA256:...`, what `ssh-keygen -l` and OpenSSH's messages show."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def lookup_name(hostname: str, port: int) -> str:
    """The name OpenSSH looks up: `host` on port 22, `[host]:port` elsewhere."""
    return hostname if port == 22 else f"[{hostname}]:{port}"


def read_files(files: Sequence[Path]) -> tuple[list[KnownKey], list[str]]:
    """Every usable line of every readable file, and the files that were read (a missing one is skipped)."""
    entries: list[KnownKey] = []
    loaded: list[str] = []
    for path in files:
        expanded = path.expanduser()
        try:
            text = expanded.read_bytes().decode("utf-8", errors="replace")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            continue
        except OSError as error:
            raise OSError(f"cannot read known_hosts file {expanded}: {error.strerror or error}") from None
        loaded.append(str(expanded))
        for number, line in enumerate(text.splitlines(), start=1):
            entry = parse_line(line, f"{expanded}:{number}")
            if entry is not None:
                entries.append(entry)
    return entries, loaded


def parse_line(line: str, where: str) -> KnownKey | None:
    """One line as a KnownKey; None for blanks, comments and anything OpenSSH would skip as unparsable."""
    fields = line.split()
    if not fields or fields[0].startswith("#"):
        return None
    marker = ""
    if fields[0].startswith("@"):
        if fields[0] not in (CERT_AUTHORITY, REVOKED):
            return None
        marker, fields = fields[0], fields[1:]
    if len(fields) < 3:
        return None
    blob = decode_key(fields[1], fields[2])
    return KnownKey(marker, fields[0], fields[1], blob, where) if blob is not None else None


def decode_key(key_type: str, text: str) -> bytes | None:
    """The blob of a `TYPE BASE64` public key; None when it is not well-formed or not of that type."""
    try:
        blob = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return blob if blob_type(blob) == key_type else None


def check(entries: Sequence[KnownKey], name: str, key_type: str, blob: bytes) -> Verdict:
    """OpenSSH's decision for the key `blob` (of `key_type`) presented by the host looked up as `name`."""
    mine = [entry for entry in entries if host_matches(entry.patterns, name)]
    revoked = tuple(e for e in mine if e.marker == REVOKED and e.blob == blob)
    if revoked:
        return Verdict("revoked", revoked)
    plain = [entry for entry in mine if not entry.marker]
    if any(entry.blob == blob for entry in plain):
        return Verdict("trusted")
    stale = tuple(entry for entry in plain if entry.key_type == key_type)
    if stale:
        return Verdict("changed", stale)
    authorities = tuple(entry for entry in mine if entry.marker == CERT_AUTHORITY)
    if authorities:
        return Verdict("ca-only", authorities)
    return Verdict("unknown", tuple(plain))


def trusts_certificates(entries: Sequence[KnownKey], name: str) -> bool:
    """Whether an `@cert-authority` line covers this host: then certificate host keys are asked for first."""
    return any(entry.marker == CERT_AUTHORITY and host_matches(entry.patterns, name) for entry in entries)


def known_types(entries: Sequence[KnownKey], name: str) -> list[str]:
    """The key types of the plain lines for this host, in file order: asked for first in the key exchange, so a
    host with several keys presents the one known_hosts lists (OpenSSH orders HostKeyAlgorithms the same way)."""
    types = [entry.key_type for entry in entries if not entry.marker and host_matches(entry.patterns, name)]
    return list(dict.fromkeys(types))


def host_matches(patterns: str, name: str) -> bool:
    """OpenSSH's match_hostname: any positive pattern matches and no negated one does (case-insensitive)."""
    if patterns.startswith("|1|"):
        return _hashed_matches(patterns, name)
    matched = False
    for pattern in patterns.lower().split(","):
        negated = pattern.startswith("!")
        if _wildcard(pattern[1:] if negated else pattern).fullmatch(name.lower()):
            if negated:
                return False
            matched = True
    return matched


def _wildcard(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern), re.DOTALL)


def _hashed_matches(entry: str, name: str) -> bool:
    """`|1|base64(salt)|base64(HMAC-SHA1(salt, name))`, what `HashKnownHosts yes` writes."""
    parts = entry.split("|")
    if len(parts) != 4:
        return False
    try:
        salt, wanted = base64.b64decode(parts[2], validate=True), base64.b64decode(parts[3], validate=True)
    except (binascii.Error, ValueError):
        return False
    return hmac.compare_digest(hmac.new(salt, name.encode(), hashlib.sha1).digest(), wanted)


def blob_type(blob: bytes) -> str | None:
    """The key type an SSH public key blob starts with (RFC 4253 string); None when it is not well-formed."""
    if len(blob) < 4:
        return None
    (length,) = struct.unpack(">I", blob[:4])
    if length == 0 or length > 64 or len(blob) < 4 + length:
        return None
    return blob[4 : 4 + length].decode("ascii", errors="replace")
