"""known_hosts decided as OpenSSH decides it, with freshly generated keys and real files."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from specops.host.ssh import known_hosts
from specops.host.ssh.known_hosts import check, host_matches, known_types, read_files

HOST = "10.0.0.7"


def _ed25519() -> str:
    public = Ed25519PrivateKey.generate().public_key()
    return public.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()


def _ecdsa() -> str:
    public = ec.generate_private_key(ec.SECP256R1()).public_key()
    return public.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()


def _blob(line: str) -> tuple[str, bytes]:
    key_type, text = line.split()[:2]
    return key_type, base64.b64decode(text)


def _hashed(name: str) -> str:
    salt = b"0123456789abcdefghij"
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"


def _verdict(tmp_path: Path, text: str, key: str, name: str = HOST) -> known_hosts.Verdict:
    path = tmp_path / "known_hosts"
    path.write_text(text)
    entries, loaded = read_files([path])
    assert loaded == [str(path)]
    return check(entries, name, *_blob(key))


def test_cert_authority_revoked_and_garbage_lines_do_not_hide_a_good_line(tmp_path: Path) -> None:
    good = _ed25519()
    text = (
        f"@cert-authority *.example.com {_ed25519()}\n"
        f"@revoked other.example.com {_ed25519()}\n"
        "this line is not a known_hosts line\n"
        f"{HOST} ssh-ed25519 bm90IGEga2V5\n"  # base64 that is no key blob
        "@bogus-marker 10.0.0.7 ssh-ed25519 AAAA\n"
        f"{HOST} {good} a comment\n"
    )
    assert _verdict(tmp_path, text, good).status == "trusted"


def test_a_stale_line_before_the_good_one_is_not_a_changed_key(tmp_path: Path) -> None:
    good = _ed25519()
    assert _verdict(tmp_path, f"{HOST} {_ed25519()}\n{HOST} {good}\n", good).status == "trusted"


def test_only_a_stale_key_of_the_same_type_is_a_changed_key_naming_the_line(tmp_path: Path) -> None:
    stale = _ed25519()
    verdict = _verdict(tmp_path, f"# old\n{HOST} {stale}\n", _ed25519())
    assert verdict.status == "changed"
    assert [line.where for line in verdict.lines] == [f"{tmp_path / 'known_hosts'}:2"]
    assert verdict.lines[0].fingerprint == known_hosts.fingerprint(_blob(stale)[1])


def test_a_key_of_another_type_is_unknown_not_changed(tmp_path: Path) -> None:
    assert _verdict(tmp_path, f"{HOST} {_ecdsa()}\n", _ed25519()).status == "unknown"


def test_a_revoked_key_is_refused_even_when_also_listed(tmp_path: Path) -> None:
    key = _ed25519()
    verdict = _verdict(tmp_path, f"{HOST} {key}\n@revoked * {key}\n", key)
    assert verdict.status == "revoked"
    assert verdict.lines[0].where.endswith("known_hosts:2")


def test_a_revoked_line_for_another_host_does_not_touch_this_one(tmp_path: Path) -> None:
    key = _ed25519()
    assert _verdict(tmp_path, f"@revoked 10.9.9.9 {key}\n{HOST} {key}\n", key).status == "trusted"


def test_a_host_known_only_through_a_cert_authority_is_ca_only(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, f"@cert-authority 10.0.0.* {_ed25519()}\n", _ed25519())
    assert (verdict.status, verdict.lines[0].where.endswith(":1")) == ("ca-only", True)


def test_hashed_names_match_with_and_without_a_port(tmp_path: Path) -> None:
    key = _ed25519()
    assert _verdict(tmp_path, f"{_hashed(HOST)} {key}\n", key).status == "trusted"
    port_name = known_hosts.lookup_name(HOST, 2222)
    assert port_name == f"[{HOST}]:2222"
    assert _verdict(tmp_path, f"{_hashed(port_name)} {key}\n", key, port_name).status == "trusted"
    assert _verdict(tmp_path, f"{_hashed(HOST)} {key}\n", key, port_name).status == "unknown"


def test_patterns_wildcards_negation_case_and_brackets() -> None:
    assert host_matches("gpu-?.example.com,10.0.0.*", "GPU-1.example.com")
    assert host_matches("10.0.0.*,!10.0.0.9", "10.0.0.7")
    assert not host_matches("10.0.0.*,!10.0.0.9", "10.0.0.9")
    assert host_matches("[10.0.0.7]:2222", "[10.0.0.7]:2222")
    assert not host_matches("10.0.0.7", "[10.0.0.7]:2222")
    assert not host_matches("|1|bad|hash", HOST)


def test_known_types_lists_plain_lines_for_the_host_in_file_order(tmp_path: Path) -> None:
    path = tmp_path / "known_hosts"
    path.write_text(f"{HOST} {_ecdsa()}\n@revoked * {_ed25519()}\nother {_ed25519()}\n{HOST} {_ecdsa()}\n")
    entries, _ = read_files([path, tmp_path / "missing"])
    assert known_types(entries, HOST) == ["ecdsa-sha2-nistp256"]
