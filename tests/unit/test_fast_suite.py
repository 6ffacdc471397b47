"""The fast suite stays self-contained: the strict mode's loopback guard refuses what would leave the machine.

Why: SPECOPS_FAST_SUITE_STRICT=1 is how a run proves that no unit test reaches the network; a guard that let
an address through would prove nothing.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

from tests.unit import strict


@pytest.mark.parametrize("host", ["127.0.0.1", "127.9.8.7", "::1", "localhost", "0.0.0.0", "", None, b"127.0.0.1"])
def test_loopback_and_binding_addresses_are_local(host: object) -> None:
    assert strict.is_local(host)


@pytest.mark.parametrize("host", ["10.200.9.2", "llm-two", "fe80::1", "localhost.evil", b"llm-two"])
def test_other_addresses_and_names_are_not(host: object) -> None:
    assert not strict.is_local(host)


def test_a_connection_beyond_loopback_is_refused_and_recorded() -> None:
    reached: list[Any] = []
    connect = strict._guard_connect(lambda _sock, address: reached.append(address), "connect")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(ConnectionRefusedError, match=r"SPECOPS_FAST_SUITE_STRICT: socket\.connect\('10\.200"):
            connect(sock, ("10.200.9.2", 22))
        connect(sock, ("127.0.0.1", 22))
    recorded = list(strict._violations)
    strict._violations.clear()  # this test's own refusal must not fail it
    assert reached == [("127.0.0.1", 22)]
    assert recorded == ["socket.connect('10.200.9.2', 22)"]


def test_a_lookup_of_another_name_is_refused_as_a_lookup_error() -> None:
    lookup = strict._guard_lookup(lambda host, *_: [host], "getaddrinfo")
    with pytest.raises(socket.gaierror, match=r"socket\.getaddrinfo\('llm-two'\) refused"):
        lookup("llm-two", 22)
    strict._violations.clear()
    assert lookup("localhost", 22) == ["localhost"]
