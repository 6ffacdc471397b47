"""The bytes path under the engine client: httpcore's NetworkBackend over the host's tunnels.

specops/engine/client.py speaks HTTP with httpx; here is only where its bytes go. Every "TCP connection"
httpcore opens is `host.open_tunnel(address, port)` (an SSH direct-tcpip channel, or a plain socket for a
LocalHost), and every read shares one request's whole time budget (`_Deadline`), so an engine that drips
bytes can never hold a gate for ever. httpcore is imported lazily, as the client imports httpx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from specops.errors import SpecopsError

if TYPE_CHECKING:
    from specops.host.base import Host, Tunnel


class Deadline:
    """One request's whole budget. httpx's read timeout bounds each read, so an engine that drips one byte
    just under it would hold a gate for ever; every read of a request shares this budget instead (the
    request's read timeout, counted from the request's start)."""

    def __init__(self) -> None:
        self.budget: float | None = None
        self.ends: float | None = None

    def start(self, budget: object) -> None:
        import time

        self.budget = float(budget) if isinstance(budget, int | float) else None
        self.ends = None if self.budget is None else time.monotonic() + self.budget

    def remaining(self, per_read: float | None) -> float | None:
        """The timeout for the next read: the per-read one, cut to what is left of the budget."""
        import time

        import httpcore

        if self.ends is None:
            return per_read
        left = self.ends - time.monotonic()
        if left <= 0:
            raise httpcore.ReadTimeout(f"the engine's answer took longer than {self.budget:g} s in all")
        return left if per_read is None else min(per_read, left)


class TunnelBackend:
    """httpcore NetworkBackend (duck-typed): every "TCP connection" is a tunnel to the engine on the host."""

    def __init__(self, host: Host, address: str, port: int) -> None:
        self._host, self._address, self._port = host, address, port
        self.deadline = Deadline()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, **_: Any) -> TunnelStream:
        import httpcore

        try:
            tunnel = self._host.open_tunnel(self._address, self._port)
        except SpecopsError as error:  # refused (nothing listens) or the SSH connection is gone
            raise httpcore.ConnectError(error.message) from error
        return TunnelStream(tunnel, self.deadline)

    def connect_unix_socket(self, path: str, timeout: float | None = None, **_: Any) -> TunnelStream:
        import httpcore

        raise httpcore.UnsupportedProtocol("the engine is reached over TCP only")

    def sleep(self, seconds: float) -> None:
        import time

        time.sleep(seconds)


class TunnelStream:
    """httpcore NetworkStream (duck-typed) over a socket-like tunnel: an SSH channel or a TCP socket."""

    def __init__(self, tunnel: Tunnel, deadline: Deadline | None = None) -> None:
        self._tunnel, self._deadline = tunnel, deadline or Deadline()

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        import httpcore

        self._tunnel.settimeout(self._deadline.remaining(timeout))
        try:
            return self._tunnel.recv(max_bytes)
        except TimeoutError as error:  # socket.timeout is TimeoutError; paramiko raises it too
            raise httpcore.ReadTimeout(str(error) or "read timed out") from error
        except OSError as error:
            raise httpcore.ReadError(str(error) or type(error).__name__) from error

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        import httpcore

        if not buffer:
            return
        self._tunnel.settimeout(timeout)
        try:
            self._tunnel.sendall(buffer)
        except TimeoutError as error:
            raise httpcore.WriteTimeout(str(error) or "write timed out") from error
        except OSError as error:
            raise httpcore.WriteError(str(error) or type(error).__name__) from error

    def close(self) -> None:
        self._tunnel.close()

    def start_tls(self, ssl_context: object, server_hostname: str | None = None, timeout: float | None = None) -> Self:
        import httpcore

        raise httpcore.UnsupportedProtocol("TLS to the engine is not used: the SSH tunnel already encrypts")

    def get_extra_info(self, info: str) -> Any:
        return None
