"""Binary KRLs in RevokedHostKeys, each one made by the real `ssh-keygen -k` and judged by `ssh-keygen -Q` too:
a host key, its CA or its certificate revoked in a KRL must be refused exactly where OpenSSH refuses it."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest

from specops.host.ssh.host_certs import parse_certificate
from specops.host.ssh.revoked import RevokedFileError, read_revoked
from tests.testbed.testhost.keys import write_keypair

SERIAL, KEY_ID = 7, "gpu-7"


def _keygen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ssh-keygen", *args], capture_output=True, text=True, timeout=30, check=False)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ca, host (signed by ca: host-cert.pub, serial 7, key ID gpu-7), other: fresh key pairs."""
    folder = tmp_path_factory.mktemp("krl")
    for name in ("ca", "host", "other"):
        write_keypair(folder / name, name)
    signed = _keygen("-q", "-s", str(folder / "ca"), "-h", "-I", KEY_ID, "-z", str(SERIAL), "-n", "gpu-7",
                     str(folder / "host.pub"))  # fmt: skip
    assert signed.returncode == 0, signed.stderr
    return folder


def _public(keys: Path, name: str) -> str:
    return " ".join((keys / f"{name}.pub").read_text().split()[:2])


def _specops_revokes(krl: Path, keys: Path, presented: str) -> bool:
    blob = base64.b64decode((keys / presented).read_text().split()[1])
    certificate = parse_certificate(blob)
    plain = certificate.key_blob if certificate is not None else blob
    return bool(read_revoked(str(krl)).reasons(plain, certificate))


SPECS = {
    "the host key": (lambda k: f"key: {_public(k, 'host')}\n", False),
    "its SHA-1 hash": (lambda k: f"sha1: {_public(k, 'host')}\n", False),
    "its SHA-256 fingerprint": (lambda k: f"hash: {_fingerprint(k, 'host')}\n", False),
    "the CA key": (lambda k: f"key: {_public(k, 'ca')}\n", False),
    "the serial": (lambda k: f"serial: {SERIAL}\n", True),
    "a serial range": (lambda k: "serial: 5-9\n", True),
    "scattered serials (a bitmap)": (lambda k: "".join(f"serial: {n}\n" for n in (1, 3, 7, 12, 14, 20)), True),
    "other serials": (lambda k: "serial: 1-6\nserial: 8\n", True),
    "the key ID of this CA": (lambda k: f"id: {KEY_ID}\n", True),
    "another key": (lambda k: f"key: {_public(k, 'other')}\n", False),
}


def _fingerprint(keys: Path, name: str) -> str:
    return _keygen("-l", "-E", "sha256", "-f", str(keys / f"{name}.pub")).stdout.split()[1]


@pytest.mark.parametrize("what", list(SPECS))
def test_a_krl_revokes_what_openssh_says_it_revokes(keys: Path, tmp_path: Path, what: str) -> None:
    spec, by_ca = SPECS[what]
    (tmp_path / "spec").write_text(spec(keys))
    krl = tmp_path / "revoked.krl"
    made = _keygen("-k", "-f", str(krl), *(["-s", str(keys / "ca.pub")] if by_ca else []), str(tmp_path / "spec"))
    assert made.returncode == 0, made.stderr
    for presented in ("host.pub", "host-cert.pub", "other.pub"):
        openssh = _keygen("-Q", "-f", str(krl), str(keys / presented)).returncode != 0
        assert _specops_revokes(krl, keys, presented) == openssh, f"{what}: {presented}: OpenSSH says {openssh}"


def test_a_krl_that_cannot_be_parsed_is_an_error_never_an_empty_list(tmp_path: Path) -> None:
    krl = tmp_path / "bad.krl"
    krl.write_bytes(b"SSHKRL\n\0\0\0\0\1" + bytes(8) * 3 + b"\0\0\0\0\0\0\0\0" + b"\x09\0\0\0\1x")
    with pytest.raises(RevokedFileError, match=r"bad.krl: it cannot be read as a KRL: unknown KRL section type 9"):
        read_revoked(str(krl))
    krl.write_bytes(b"SSHKRL\n\0\0\0")
    with pytest.raises(RevokedFileError, match="it cannot be read as a KRL: truncated data"):
        read_revoked(str(krl))
