"""Fresh ed25519 key pairs, made in-process.

Each host gets its own client key and its own host key. Generating them with `cryptography`
(already a paramiko dependency) instead of two `ssh-keygen` runs saves two process starts per host,
which matters when 8 hosts start at once on 2 cores.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def write_keypair(private_path: Path, comment: str) -> str:
    """Write PRIVATE (0600, OpenSSH format) and PRIVATE.pub; return the public line `ssh-ed25519 AAAA...`."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(private)
    public_line = public.decode()
    Path(f"{private_path}.pub").write_text(f"{public_line} {comment}\n")
    return public_line
