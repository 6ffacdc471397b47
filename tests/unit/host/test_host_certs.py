"""Host certificates made by the real ssh-keygen, checked as OpenSSH checks them: CA, principals, validity, kind,
signature (verified by paramiko through specops.host.ssh.connection), revocation, and the fallback to the plain key."""

from __future__ import annotations

import base64
import subprocess
import time
from pathlib import Path

import pytest

from specops.host.ssh import host_certs, known_hosts
from specops.host.ssh.connection import _verify_ca_signature

HOST = "10.0.0.7"


def _keygen(path: Path, kind: str = "ed25519") -> bytes:
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", path.name, "-f", str(path)], check=True)
    return base64.b64decode(path.with_suffix(".pub").read_text().split()[1])


def _sign(tmp_path: Path, ca: Path, *options: str) -> tuple[bytes, bytes]:
    """(the host's plain key blob, its certificate blob), signed by `ca` with ssh-keygen's `options`."""
    host = tmp_path / "host_key"
    if not host.exists():
        _keygen(host)
    subprocess.run(["ssh-keygen", "-q", "-s", str(ca), "-I", "th", *options, str(host) + ".pub"], check=True)
    plain = base64.b64decode((tmp_path / "host_key.pub").read_text().split()[1])
    return plain, base64.b64decode((tmp_path / "host_key-cert.pub").read_text().split()[1])


def _line(marker: str, patterns: str, key: Path) -> str:
    key_type, key_text = key.with_suffix(".pub").read_text().split()[:2]
    return f"{marker} {patterns} {key_type} {key_text}"


def _decide(tmp_path: Path, text: str, plain: bytes, cert: bytes | None) -> known_hosts.Verdict:
    path = tmp_path / "known_hosts"
    path.write_text(text)
    entries, _ = known_hosts.read_files([path])
    presented = ("ssh-ed25519", plain, cert)
    return host_certs.decide(entries, HOST, HOST, presented, time.time(), _verify_ca_signature)


@pytest.fixture
def ca(tmp_path: Path) -> Path:
    _keygen(tmp_path / "ca")
    return tmp_path / "ca"


@pytest.mark.parametrize("kind", ["ed25519", "rsa", "ecdsa"])
def test_a_certificate_from_a_listed_ca_naming_the_host_is_trusted(tmp_path: Path, kind: str) -> None:
    authority = tmp_path / f"ca-{kind}"
    _keygen(authority, kind)
    plain, cert = _sign(tmp_path, authority, "-h", "-n", f"{HOST},llm-one")
    parsed = host_certs.parse_certificate(cert)
    assert parsed is not None and parsed.key_blob == plain and parsed.principals == (HOST, "llm-one")
    verdict = _decide(tmp_path, _line("@cert-authority", "10.0.0.*", authority) + "\n", plain, cert)
    assert verdict.status == "trusted" and verdict.lines[0].where.endswith(":1")


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        (("-h", "-n", "10.0.0.8"), "certificate 'th' names 10.0.0.8, not 10.0.0.7"),
        (("-h", "-n", HOST, "-V", "20200101:20200102"), "certificate 'th' has expired"),
        (("-h", "-n", HOST, "-V", "+3000w:+3001w"), "certificate 'th' is not valid yet"),
        (("-n", HOST), "certificate 'th' is not a host certificate"),
    ],
)
def test_a_certificate_openssh_would_not_accept_is_refused_with_why(
    tmp_path: Path, ca: Path, options: tuple[str, ...], reason: str
) -> None:
    plain, cert = _sign(tmp_path, ca, *options)
    verdict = _decide(tmp_path, _line("@cert-authority", HOST, ca) + "\n", plain, cert)
    assert (verdict.status, verdict.reason) == ("cert-refused", reason)


def test_a_certificate_without_principals_is_valid_for_any_host(tmp_path: Path, ca: Path) -> None:
    plain, cert = _sign(tmp_path, ca, "-h")
    assert _decide(tmp_path, _line("@cert-authority", "*", ca) + "\n", plain, cert).status == "trusted"


def test_a_forged_signature_and_an_unlisted_ca_are_refused(tmp_path: Path, ca: Path) -> None:
    plain, cert = _sign(tmp_path, ca, "-h", "-n", HOST)
    forged = cert[:-10] + bytes(b ^ 1 for b in cert[-10:])
    verdict = _decide(tmp_path, _line("@cert-authority", HOST, ca) + "\n", plain, forged)
    assert (verdict.status, verdict.reason) == ("cert-refused", "certificate 'th': the CA's signature does not verify")
    _keygen(tmp_path / "other")
    verdict = _decide(tmp_path, _line("@cert-authority", HOST, tmp_path / "other") + "\n", plain, cert)
    assert verdict.reason == "its signer is not an @cert-authority of known_hosts for this host"


def test_a_revoked_ca_or_host_key_is_refused_even_with_a_good_certificate(tmp_path: Path, ca: Path) -> None:
    plain, cert = _sign(tmp_path, ca, "-h", "-n", HOST)
    trusted = _line("@cert-authority", HOST, ca) + "\n"
    assert _decide(tmp_path, trusted + _line("@revoked", "*", ca) + "\n", plain, cert).status == "revoked"
    assert _decide(tmp_path, trusted + _line("@revoked", "*", tmp_path / "host_key") + "\n", plain, cert).status == (
        "revoked"
    )


def test_a_refused_certificate_falls_back_to_a_plain_line_as_openssh_does(tmp_path: Path, ca: Path) -> None:
    plain, cert = _sign(tmp_path, ca, "-h", "-n", "10.0.0.8")
    plain_line = f"{HOST} " + " ".join((tmp_path / "host_key.pub").read_text().split()[:2])
    verdict = _decide(tmp_path, _line("@cert-authority", HOST, ca) + "\n" + plain_line + "\n", plain, cert)
    assert verdict.status == "trusted"


def test_certificate_host_key_algorithms_are_the_cert_variants() -> None:
    assert host_certs.certificate_types(["ssh-ed25519", "rsa-sha2-512"]) == [
        "ssh-ed25519-cert-v01@openssh.com",
        "rsa-sha2-512-cert-v01@openssh.com",
    ]
    assert host_certs.parse_certificate(b"\x00\x00\x00\x0bssh-ed25519") is None
