"""SPECOPS_FAST_SUITE_STRICT=1: a unit test that connects to, or looks up, anything but this machine fails.

Why: the unit tests must run on a machine without network (real sockets, but on loopback only); a test that
reaches out works on a developer's laptop and hangs or fails behind a firewall. With the variable set, every
connection to a non-loopback address and every lookup of a name other than localhost is refused on the spot
(nothing leaves the machine) and the test that made it fails, naming what it tried. Off by default: it patches
the socket module for the whole session.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

ENV = "SPECOPS_FAST_SUITE_STRICT"
LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
_violations: list[str] = []


def is_local(host: object) -> bool:
    """True for loopback and unspecified addresses (binding to all of them), localhost, and no host at all."""
    if host is None:
        return True
    name = host.decode() if isinstance(host, bytes) else str(host)
    if name.lower() in LOCAL_NAMES or name == "":
        return True
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _refuse(what: str, error: type[OSError] = ConnectionRefusedError) -> None:
    _violations.append(what)
    raise error(f"{ENV}: {what} refused (unit tests use loopback only)")


def _guard_connect(original: Callable[..., Any], name: str) -> Callable[..., Any]:
    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not is_local(address[0]):
            _refuse(f"socket.{name}{address!r}")
        return original(self, address)

    return connect


def _guard_lookup(original: Callable[..., Any], name: str) -> Callable[..., Any]:
    def lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_local(host):
            _refuse(f"socket.{name}({host!r})", socket.gaierror)
        return original(host, *args, **kwargs)

    return lookup


@pytest.fixture(scope="session", autouse=True)
def _loopback_only_session() -> Iterator[None]:
    if not os.environ.get(ENV):
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        for name in ("connect", "connect_ex"):
            patch.setattr(socket.socket, name, _guard_connect(getattr(socket.socket, name), name))
        for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr"):
            patch.setattr(socket, name, _guard_lookup(getattr(socket, name), name))
        yield


@pytest.fixture(autouse=True)
def _loopback_only(_loopback_only_session: None) -> Iterator[None]:
    """Fails the test (after it ran) that tried to leave the machine, even where the code under test caught it."""
    _violations.clear()
    yield
    if _violations:
        tried = "; ".join(dict.fromkeys(_violations))
        _violations.clear()
        pytest.fail(f"{ENV}: this test tried to reach beyond loopback: {tried}", pytrace=False)
