"""What the operator reads when a host key is refused: OpenSSH's case, the line, and commands that work."""

from __future__ import annotations

from specops.host.ssh import errors
from specops.host.ssh.known_hosts import KnownKey, Verdict
from specops.host.ssh.target import SshTarget

PRESENTED = ("ssh-ed25519", "SHA256:new")
STALE = KnownKey("", "[10.0.0.7]:2222", "ssh-ed25519", b"old-key", "/home/op/.ssh/known_hosts:3")


def _target(alias: str, port: int) -> SshTarget:
    return SshTarget(alias=alias, hostname="10.0.0.7", user="deploy", port=port, identity_files=())


def test_a_changed_key_on_another_port_removes_the_bracketed_entry_and_suggests_a_valid_ssh() -> None:
    error = errors.host_key_refused(_target("deploy@10.0.0.7:2222", 2222), Verdict("changed", (STALE,)),
                                        PRESENTED, [])  # fmt: skip
    assert error.message.startswith("deploy@10.0.0.7:2222: WARNING: THE HOST KEY FOR [10.0.0.7]:2222 HAS CHANGED!")
    assert f"known_hosts has /home/op/.ssh/known_hosts:3 (ssh-ed25519 {STALE.fingerprint})" in error.message
    assert "`ssh-keygen -R '[10.0.0.7]:2222'`" in error.hint
    assert "`ssh -p 2222 deploy@10.0.0.7`" in error.hint
    assert "10.0.0.7:2222`" not in error.hint.replace("]:2222'", "")  # never the invalid `ssh host:port`


def test_a_changed_key_on_port_22_keeps_the_plain_commands() -> None:
    stale = KnownKey("", "10.0.0.7", "ssh-ed25519", b"old-key", "/k:1")
    error = errors.host_key_refused(_target("llm-one", 22), Verdict("changed", (stale,)), PRESENTED, [])
    assert "`ssh-keygen -R 10.0.0.7`" in error.hint
    assert "`ssh llm-one`" in error.hint


def test_an_unknown_key_on_another_port_scans_that_port() -> None:
    error = errors.host_key_refused(_target("10.0.0.7:2222", 2222), Verdict("unknown"), PRESENTED, ["/k"])
    assert "the host key for [10.0.0.7]:2222 is not in known_hosts (looked in: /k)" in error.message
    assert "`ssh -p 2222 10.0.0.7`" in error.hint
    assert "`ssh-keyscan -p 2222 10.0.0.7 >> ~/.ssh/known_hosts`" in error.hint


def test_a_revoked_key_is_named_with_its_line() -> None:
    revoked = KnownKey("@revoked", "*", "ssh-ed25519", b"k", "/k:7")
    error = errors.host_key_refused(_target("llm-one", 22), Verdict("revoked", (revoked,)), PRESENTED, [])
    assert error.message == (
        f"deploy@10.0.0.7:22: the host presented ssh-ed25519 SHA256:new, which known_hosts marks @revoked "
        f"(/k:7 (ssh-ed25519 {revoked.fingerprint})). specops refuses to connect."
    )


def test_a_host_known_only_through_a_ca_that_offers_no_certificate_is_told_so() -> None:
    ca = KnownKey("@cert-authority", "*.example.com", "ssh-ed25519", b"ca", "/k:2")
    error = errors.host_key_refused(_target("llm-one", 22), Verdict("ca-only", (ca,)), PRESENTED, [])
    assert "the host offered no certificate, only its key ssh-ed25519 SHA256:new" in error.message
    assert "/k:2" in error.message
    assert "HostCertificate" in error.hint and "ssh-keyscan 10.0.0.7" in error.hint


def test_a_refused_certificate_names_why_and_how_to_re_sign() -> None:
    ca = KnownKey("@cert-authority", "10.0.0.*", "ssh-ed25519", b"ca", "/k:1")
    verdict = Verdict("cert-refused", (ca,), "certificate 'th' has expired")
    error = errors.host_key_refused(_target("llm-one", 22), verdict, PRESENTED, [])
    assert error.message.startswith(
        "deploy@10.0.0.7:22: the host's certificate was refused: certificate 'th' has expired"
    )
    assert "ssh-keygen -s CA_KEY -h -n 10.0.0.7" in error.hint
