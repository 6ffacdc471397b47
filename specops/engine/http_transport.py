"""httpx's transport for the engine client (specops/engine/client.py): httpcore's HTTP/1.1 over tunnels of the
host connection (specops/engine/tunnel.py), its bodies read as they arrive, its errors as the httpx errors a
caller of httpx expects. With client.py the only module that imports httpx (tests/test_layering.py), lazily,
so `specops --help` stays light.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Self, cast

if TYPE_CHECKING:
    import httpx

    from specops.host.base import Host


class TunnelTransport:
    """An httpx transport (duck-typed httpx.BaseTransport) running httpcore's HTTP/1.1 over host tunnels."""

    def __init__(self, host: Host, address: str, port: int) -> None:
        import httpcore

        from specops.engine.tunnel import TunnelBackend

        self._backend = TunnelBackend(host, address, port)
        backend = cast("httpcore.NetworkBackend", self._backend)
        self._pool = httpcore.ConnectionPool(network_backend=backend, max_keepalive_connections=0, retries=0)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        import httpcore
        import httpx

        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=cast("httpx.SyncByteStream", request.stream),
            extensions=request.extensions,
        )
        self._backend.deadline.start(request.extensions.get("timeout", {}).get("read"))
        with _mapped_errors(request):
            core_response = self._pool.handle_request(core_request)
        body = _response_body()(core_response, request)  # type: ignore[call-arg]
        return httpx.Response(core_response.status, headers=core_response.headers, stream=body, request=request)

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@functools.cache
def _response_body() -> type[httpx.SyncByteStream]:
    """The body as httpx reads it: chunk by chunk as they arrive, so a streamed answer is seen event by event (a
    plain request reads it all); errors while reading are httpx's. httpx wants its own SyncByteStream type, and
    is imported lazily, so the class is made at first use."""
    import httpx

    class ResponseBody(httpx.SyncByteStream):
        def __init__(self, core_response: Any, request: httpx.Request) -> None:
            self._core, self._request = core_response, request

        def __iter__(self) -> Iterator[bytes]:
            with _mapped_errors(self._request):
                yield from self._core.iter_stream()

        def close(self) -> None:
            self._core.close()

    return ResponseBody


@contextlib.contextmanager
def _mapped_errors(request: httpx.Request) -> Iterator[None]:
    """httpcore's errors as the httpx errors a caller of httpx expects."""
    import httpcore
    import httpx

    try:
        yield
    except httpcore.TimeoutException as error:
        raise _httpx_error(error, request, httpx.TimeoutException) from error
    except httpcore.ConnectError as error:
        raise httpx.ConnectError(str(error), request=request) from error
    except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.UnsupportedProtocol) as error:
        raise _httpx_error(error, request, httpx.TransportError) from error


def _httpx_error(error: Exception, request: httpx.Request, fallback: type[httpx.TransportError]) -> Exception:
    """httpcore.ReadTimeout -> httpx.ReadTimeout and so on (httpx names its errors like httpcore does)."""
    import httpx

    kind = getattr(httpx, type(error).__name__, fallback)
    if not (isinstance(kind, type) and issubclass(kind, httpx.TransportError)):
        kind = fallback
    return kind(str(error) or type(error).__name__, request=request)
