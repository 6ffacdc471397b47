"""known_hosts against a REAL sshd, each crafted file checked with specops AND the real OpenSSH client: both
must accept, or both refuse. specops's connect and `ssh` read the same file; nothing under ~/.ssh is touched."""

from __future__ import annotations

import base64
import hashlib
import hmac
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from specops.config.inventory import HostSpec
from specops.errors import ConnectError
from specops.host.ssh.connection import connect
from tests.testbed.testhost import TestHost
from tests.testbed.testhost.keys import write_keypair

pytestmark = pytest.mark.e2e

ALIAS = "llm-kh"


def _good(host: TestHost) -> str:
    """`ssh-ed25519 AAAA...`, the key the host really holds (from the known_hosts line the test bed wrote)."""
    return " ".join(host.known_hosts_path.read_text().split()[1:3])


def _hashed(name: str) -> str:
    salt = hashlib.sha1(name.encode()).digest()
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"


def _specops(
    host: TestHost, known: Path, tmp_path: Path, extra: Sequence[str] = (), defaults: list[Path] | None = None
) -> ConnectError | None:
    """Connect with the host's config block, `known` as its UserKnownHostsFile and `extra` lines; `defaults`:
    the default known_hosts files (None: ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts, as for a user)."""
    config = tmp_path / "config"
    lines = [line for line in host.ssh_config_block(ALIAS).splitlines() if "UserKnownHostsFile" not in line]
    config.write_text("\n".join([*lines, f"    UserKnownHostsFile {known}", *(f"    {x}" for x in extra)]) + "\n")
    spec = HostSpec(name=ALIAS, ssh=ALIAS, python="/usr/bin/python3", model_path="/models/target")
    try:
        with connect(spec, ssh_config=config, known_hosts=defaults) as connected:
            assert connected.run(["true"]).exit_code == 0
    except ConnectError as error:
        return error
    return None


def _openssh_accepts(host: TestHost, known: Path, extra: Sequence[str] = ()) -> bool:
    options = [option.replace(str(host.known_hosts_path), str(known)) for option in host.ssh_options()]
    argv = ["ssh", *options, *(f"-o{line}" for line in extra), f"root@{host.ip}", "true"]
    return subprocess.run(argv, capture_output=True, timeout=30, stdin=subprocess.DEVNULL).returncode == 0


def _both(host: TestHost, tmp_path: Path, text: str, extra: Sequence[str] = ()) -> ConnectError | None:
    known = tmp_path / "known_hosts"
    known.write_text(text)
    refused = _specops(host, known, tmp_path, extra, defaults=[])
    assert _openssh_accepts(host, known, extra) == (refused is None), f"OpenSSH disagrees with specops: {refused}"
    assert known.read_text() == text  # never written to
    return refused


def test_a_key_in_the_revoked_host_keys_file_is_refused_like_openssh(module_testhost: TestHost, tmp_path: Path) -> None:
    """known_hosts still lists the key; the RevokedHostKeys file (public keys, one a line) revokes it."""
    good = _good(module_testhost)
    revoked = tmp_path / "revoked_keys"
    revoked.write_text(f"# retired\n{good} host-2025\n")
    listed = f"{module_testhost.ip} {good}\n"
    refused = _both(module_testhost, tmp_path, listed, extra=[f"RevokedHostKeys {revoked}"])
    assert refused is not None and refused.exit_code == 4
    assert "which RevokedHostKeys revokes" in refused.message and f"{revoked}:2" in refused.message
    other = write_keypair(tmp_path / "other", "other")
    revoked.write_text(f"{other}\n")
    assert _both(module_testhost, tmp_path, listed, extra=[f"RevokedHostKeys {revoked}"]) is None
    refused = _both(module_testhost, tmp_path, listed, extra=[f"RevokedHostKeys {tmp_path}/missing"])
    assert refused is not None and f"RevokedHostKeys {tmp_path}/missing cannot be read" in refused.message


def test_a_binary_krl_revokes_like_openssh(module_testhost: TestHost, tmp_path: Path) -> None:
    """A KRL from `ssh-keygen -k`: the host's key in it is refused, a KRL of other keys accepts it."""
    good = _good(module_testhost)
    listed = f"{module_testhost.ip} {good}\n"
    krl = tmp_path / "revoked.krl"
    (tmp_path / "host.pub").write_text(f"{good}\n")
    subprocess.run(["ssh-keygen", "-q", "-k", "-f", str(krl), str(tmp_path / "host.pub")], check=True, timeout=30)
    refused = _both(module_testhost, tmp_path, listed, extra=[f"RevokedHostKeys {krl}"])
    assert refused is not None and f"which RevokedHostKeys revokes ({krl} (KRL): key SHA256:" in refused.message
    write_keypair(tmp_path / "other", "other")
    subprocess.run(["ssh-keygen", "-q", "-k", "-f", str(krl), str(tmp_path / "other.pub")], check=True, timeout=30)
    assert _both(module_testhost, tmp_path, listed, extra=[f"RevokedHostKeys {krl}"]) is None


def test_host_key_alias_is_the_name_looked_up_like_openssh(module_testhost: TestHost, tmp_path: Path) -> None:
    """The key is listed only under the alias: accepted with HostKeyAlias; a line for the address no longer counts."""
    good = _good(module_testhost)
    assert _both(module_testhost, tmp_path, f"prod-gpu {good}\n", extra=["HostKeyAlias prod-gpu"]) is None
    refused = _both(module_testhost, tmp_path, f"{module_testhost.ip} {good}\n", extra=["HostKeyAlias prod-gpu"])
    assert refused is not None and "the host key for prod-gpu is not in known_hosts" in refused.message


def test_user_known_hosts_file_replaces_home_known_hosts(
    module_testhost: TestHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The alias is pinned to its own file, which holds another key; ~/.ssh/known_hosts has a (stale) line with
    the key the host presents now. OpenSSH never reads ~/.ssh/known_hosts for it, so it refuses; so must specops."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "known_hosts").write_text(f"{module_testhost.ip} {_good(module_testhost)}\n")
    monkeypatch.setenv("HOME", str(home))
    pinned = tmp_path / "known_hosts.prod"
    pinned.write_text(f"{module_testhost.ip} {write_keypair(tmp_path / 'other', 'other')}\n")
    refused = _specops(module_testhost, pinned, tmp_path)
    assert not _openssh_accepts(module_testhost, pinned)
    assert refused is not None and f"THE HOST KEY FOR {module_testhost.ip} HAS CHANGED" in refused.message


def _reload_sshd(host: TestHost) -> None:
    """SIGHUP: sshd re-executes with its new configuration and listens again shortly after."""
    host.exec(["systemctl", "reload", "ssh"])
    deadline = time.monotonic() + 20
    while host.ssh("true", check=False).returncode != 0:  # the real client, with the test bed's ed25519 line
        assert time.monotonic() < deadline, "sshd did not come back after the reload"
        time.sleep(0.1)


def test_odd_lines_and_a_stale_entry_before_the_good_one_are_accepted_like_openssh(
    module_testhost: TestHost, tmp_path: Path
) -> None:
    other = write_keypair(tmp_path / "other", "other")
    ip = module_testhost.ip
    text = (
        f"{ip} {other}\n"  # a stale entry of the same type, listed first
        f"@revoked 10.255.0.1 {other}\n"  # revoked for another host
        f"@cert-authority *.example.com {other}\n"
        "garbage that is no known_hosts line\n"
        f"{ip} ssh-ed25519 bm90IGEga2V5\n"
        f"{ip} {_good(module_testhost)}\n"
    )
    assert _both(module_testhost, tmp_path, text) is None


def test_a_hashed_entry_is_accepted(module_testhost: TestHost, tmp_path: Path) -> None:
    assert _both(module_testhost, tmp_path, f"{_hashed(module_testhost.ip)} {_good(module_testhost)}\n") is None


def test_a_revoked_host_key_is_refused_even_when_listed(module_testhost: TestHost, tmp_path: Path) -> None:
    good = _good(module_testhost)
    refused = _both(module_testhost, tmp_path, f"{module_testhost.ip} {good}\n@revoked * {good}\n")
    assert refused is not None and refused.exit_code == 4
    assert "which known_hosts marks @revoked" in refused.message
    assert f"{tmp_path / 'known_hosts'}:2" in refused.message


def test_only_a_stale_entry_is_a_changed_key_naming_the_line(module_testhost: TestHost, tmp_path: Path) -> None:
    other = write_keypair(tmp_path / "other", "other")
    refused = _both(module_testhost, tmp_path, f"# rotated\n{module_testhost.ip} {other}\n")
    assert refused is not None
    assert f"THE HOST KEY FOR {module_testhost.ip} HAS CHANGED! known_hosts has {tmp_path / 'known_hosts'}:2" in (
        refused.message
    )
    assert f"`ssh-keygen -R {module_testhost.ip}`" in refused.hint


def test_a_host_known_only_through_a_cert_authority_is_refused_clearly(
    module_testhost: TestHost, tmp_path: Path
) -> None:
    ca = write_keypair(tmp_path / "ca", "ca")
    refused = _both(module_testhost, tmp_path, f"@cert-authority {module_testhost.ip} {ca}\n")
    assert refused is not None
    assert "but the host offered no certificate, only its key ssh-ed25519" in refused.message


def test_a_host_with_two_keys_presents_the_one_known_hosts_lists(testhost: TestHost, tmp_path: Path) -> None:
    """The host also holds an ECDSA key and known_hosts lists only that one: the key exchange must ask for
    the known type first (as OpenSSH orders HostKeyAlgorithms), not refuse the ed25519 key it would prefer."""
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption())  # fmt: skip
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    testhost.write_file("/etc/ssh/ssh_host_ecdsa_key", private, mode=0o600)
    testhost.write_file("/etc/ssh/sshd_config.d/01-second-key.conf", b"HostKey /etc/ssh/ssh_host_ecdsa_key\n")
    _reload_sshd(testhost)
    assert _both(testhost, tmp_path, f"{testhost.ip} {public.decode()}\n") is None


def _certify(host: TestHost, tmp_path: Path, *options: str) -> str:
    """Sign the host's ed25519 key with a fresh CA (ssh-keygen OPTIONS), make sshd present the certificate, and
    return the CA's `@cert-authority` key text."""
    ca = tmp_path / "ca"
    if not ca.exists():
        write_keypair(ca, "ca")
    host_pub = tmp_path / "host_key.pub"
    host_pub.write_bytes(host.read_file("/etc/ssh/ssh_host_ed25519_key.pub"))
    sign = ["ssh-keygen", "-q", "-s", str(ca), "-I", "th", *options, str(host_pub)]
    subprocess.run(sign, check=True, capture_output=True, timeout=30)
    host.write_file("/etc/ssh/ssh_host_ed25519_key-cert.pub", (tmp_path / "host_key-cert.pub").read_bytes())
    conf = b"HostCertificate /etc/ssh/ssh_host_ed25519_key-cert.pub\n"
    host.write_file("/etc/ssh/sshd_config.d/01-cert.conf", conf)
    _reload_sshd(host)
    return " ".join((tmp_path / "ca.pub").read_text().split()[:2])


def test_a_real_host_certificate_from_a_trusted_ca_is_accepted_like_openssh(testhost: TestHost, tmp_path: Path) -> None:
    """Only a `@cert-authority` line for the host: the host presents a certificate signed by that CA naming its
    address; OpenSSH and specops both accept it, then both refuse one that names another host, one that expired,
    and one from a CA known_hosts does not list."""
    ca_key = _certify(testhost, tmp_path, "-h", "-n", testhost.ip)
    trusted = f"# our CA\n@cert-authority 10.200.*,{testhost.ip} {ca_key}\n"
    assert _both(testhost, tmp_path, trusted) is None

    other = write_keypair(tmp_path / "other-ca", "other-ca")
    refused = _both(testhost, tmp_path, f"@cert-authority {testhost.ip} {other}\n")
    assert refused is not None and refused.exit_code == 4
    assert "its signer is not an @cert-authority of known_hosts for this host" in refused.message

    _certify(testhost, tmp_path, "-h", "-n", "10.255.0.1")
    refused = _both(testhost, tmp_path, trusted)
    assert refused is not None
    assert (
        f"the host's certificate was refused: certificate 'th' names 10.255.0.1, not {testhost.ip}" in refused.message
    )
    assert f"ssh-keygen -s CA_KEY -h -n {testhost.ip}" in refused.hint

    _certify(testhost, tmp_path, "-h", "-n", testhost.ip, "-V", "20200101:20200102")
    refused = _both(testhost, tmp_path, trusted)
    assert refused is not None and "certificate 'th' has expired" in refused.message
