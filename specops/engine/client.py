"""HTTP to the SGLang engine THROUGH the host connection: with its transport (http_transport.py) the ONLY module
that imports httpx (layering test).

    with EngineClient(host, spec) as engine:        # host: SshHost, LocalHost (tests) - any Host with open_tunnel
        engine.health_generate()                     # 200 ready, 503 starting, 0 nothing answers
        engine.generate("Why is the sky blue?", 64)  # SGLang's /generate body: text + meta_info
        engine.generate_stream("Hi", {"temperature": 0.7, "max_new_tokens": 64})  # streamed, with its TTFT

Why a tunnel: SGLang listens on 127.0.0.1 by default, and it should - an inference port open to the network
is an unauthenticated GPU for anyone. So every request rides a `direct-tcpip` channel of the SSH connection
specops already holds (`host.open_tunnel`); the operator never opens a port or runs `ssh -L`.

How: httpx speaks HTTP/1.1 through httpcore, whose NetworkBackend is the one seam for "where do the bytes
go". `TunnelTransport` (specops/engine/http_transport.py) runs it over `TunnelBackend` (specops/engine/tunnel.py),
which opens a tunnel per connection; keep-alive is off, so a restarted engine never meets a stale connection
(a channel costs one round trip on an open SSH connection).
Bodies are read as they arrive, so a streamed answer is seen event by event. httpx is imported lazily so
`specops --help` stays light.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, cast

from specops.engine.http_transport import TunnelTransport
from specops.errors import ExitCode, SpecopsError

if TYPE_CHECKING:
    import httpx

    from specops.config.inventory import HostSpec
    from specops.engine.stream import StreamedAnswer
    from specops.host.base import Host

DEFAULT_TIMEOUT_S = 30.0
ANSWER_TIMEOUT_S = 10.0
HEALTH_TIMEOUT_S = 30.0  # SGLang answers 503 itself after SGLANG_HEALTH_CHECK_TIMEOUT (20 s)
ANY_ADDRESS = ("0.0.0.0", "::", "")
# httpx timeout classes, told as the stage that took too long
_TIMEOUT_STAGE = {"ConnectTimeout": "connecting", "ReadTimeout": "reading", "WriteTimeout": "sending",
                  "PoolTimeout": "waiting for a free connection"}  # fmt: skip


class EngineError(SpecopsError):
    """The engine did not answer, or answered something other than what SGLang answers."""

    exit_code = ExitCode.REMOTE_FAILED
    default_hint = "`specops status HOST` shows whether the engine answers; `specops logs HOST` shows its journal"


def engine_address(spec: HostSpec) -> str:
    """Where to reach the engine FROM the host: its listen address, or loopback when it binds every address."""
    return "127.0.0.1" if spec.listen in ANY_ADDRESS else spec.listen


class EngineClient:
    """SGLang's HTTP API for one host, every request through `host.open_tunnel`."""

    def __init__(
        self, host: Host, spec: HostSpec, *, timeout: float = DEFAULT_TIMEOUT_S, api_key: str | None = None
    ) -> None:
        """`api_key`: SGLang's --api-key, sent as `Authorization: Bearer`; by default the value of the host's
        api_key_secret, so a protected engine passes readiness and smoke like an open one."""
        import httpx

        from specops.config.secrets import Secret, engine_api_key

        self._host, self._spec = host, spec
        self.host_name = host.name
        address = engine_address(spec)
        shown = f"[{address}]" if ":" in address else address
        self.base_url = f"http://{shown}:{spec.port}"
        key = api_key if api_key is not None else engine_api_key(spec)
        revealed = key.reveal() if isinstance(key, Secret) else key
        self._api_key = revealed or ""  # for fork(): the secret is resolved once
        headers = {"Authorization": "Bearer " + revealed} if revealed else {}
        transport = cast("httpx.BaseTransport", TunnelTransport(host, address, spec.port))
        self._timeout = timeout
        self._client = httpx.Client(base_url=self.base_url, transport=transport, timeout=timeout, headers=headers)

    def health_generate(self, timeout: float = HEALTH_TIMEOUT_S) -> int:
        """The status of GET /health_generate: 200 once a real 1-token generation works, 503 while starting,
        0 when nothing answers (not listening yet, the process died, or no answer within `timeout`)."""
        import httpx

        try:
            return self._client.get("/health_generate", timeout=timeout).status_code
        except httpx.TransportError:
            return 0

    def answers(self, timeout: float = ANSWER_TIMEOUT_S) -> bool:
        """Whether the engine's HTTP server answers at all (GET /v1/models: no generation, any status counts):
        a cheap "something serves there" for a unit systemd reports active."""
        import httpx

        try:
            self._client.get("/v1/models", timeout=timeout)
        except httpx.TransportError:
            return False
        return True

    def server_info(self) -> dict[str, Any]:
        """/get_server_info (server args + internal_states + version); newer builds also name it /server_info."""
        response = self._get("/get_server_info")
        if response.status_code == 404:
            response = self._get("/server_info")
        return self._json(response, "GET /get_server_info")

    def models(self) -> dict[str, Any]:
        return self._json(self._get("/v1/models"), "GET /v1/models")

    def generate(
        self,
        prompt: str,
        max_new_tokens: int,
        temperature: float = 0.0,
        ignore_eos: bool = True,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """POST /generate, not streamed: {"text", "output_ids"?, "meta_info": {completion_tokens, e2e_latency,
        spec_accept_length, ...}}. `timeout` defaults to 1 s per token plus a minute (slow is for the gate to judge)."""
        payload = {
            "text": prompt,
            "sampling_params": {
                "temperature": temperature,
                "max_new_tokens": max_new_tokens,
                "ignore_eos": ignore_eos,
            },
            "stream": False,
        }
        wait = timeout if timeout is not None else 60.0 + max_new_tokens
        response = self._send("POST", "/generate", json=payload, timeout=wait)
        return self._json(response, "POST /generate")

    def generate_stream(
        self, prompt: str, sampling_params: dict[str, Any], *, incremental: bool = False, timeout: float | None = None
    ) -> StreamedAnswer:
        """POST /generate with `"stream": true`, read event by event (specops.engine.stream), timing the first
        token. `incremental`: the server sends only the new text (--incremental-streaming-output)."""
        import time

        from specops.engine.stream import StreamReader

        tokens = sampling_params.get("max_new_tokens")
        wait = timeout if timeout is not None else 60.0 + (tokens if isinstance(tokens, int) else 1024)
        payload = {"text": prompt, "sampling_params": sampling_params, "stream": True}
        with self._transport_errors("POST", "/generate"):
            started = time.monotonic()
            with self._client.stream("POST", "/generate", json=payload, timeout=wait) as response:
                if response.status_code != 200:
                    response.read()
                    raise self._bad_status(response, "POST /generate (stream)")
                reader = StreamReader(started, incremental)
                for line in response.iter_lines():
                    if reader.feed(line, time.monotonic()):
                        break
        return reader.answer

    def fork(self) -> EngineClient:
        """A client of its own for the same engine: one per thread when requests run concurrently."""
        return EngineClient(self._host, self._spec, timeout=self._timeout, api_key=self._api_key)

    def metrics(self) -> str | None:
        """Prometheus text from /metrics, or None when the engine runs without --enable-metrics (404)."""
        response = self._get("/metrics")
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise self._bad_status(response, "GET /metrics")
        return response.text

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _get(self, path: str) -> httpx.Response:
        return self._send("GET", path)

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        with self._transport_errors(method, path):
            return self._client.request(method, path, **kwargs)

    @contextlib.contextmanager
    def _transport_errors(self, method: str, path: str) -> Iterator[None]:
        """httpx's transport errors as an EngineError that says what to look at."""
        import httpx

        try:
            yield
        except httpx.TimeoutException as error:
            stage = _TIMEOUT_STAGE.get(type(error).__name__, "waiting")
            raise EngineError(
                f"{self.host_name}: {method} {self.base_url}{path}: no answer in time (timed out {stage})",
                hint="the engine may be overloaded or stuck; `journalctl -u SERVICE` on the host shows what it does",
            ) from None
        except httpx.TransportError as error:
            raise EngineError(
                f"{self.host_name}: {method} {self.base_url}{path}: the engine does not answer ({error})",
                hint="is the service running? `specops status HOST`, or `systemctl status SERVICE` on the host",
            ) from None

    def _json(self, response: httpx.Response, what: str) -> dict[str, Any]:
        if response.status_code != 200:
            raise self._bad_status(response, what)
        try:
            body = json.loads(response.content)
        except ValueError:
            raise EngineError(f"{self.host_name}: {what} did not return JSON: {response.text[:200]!r}") from None
        if not isinstance(body, dict):
            raise EngineError(f"{self.host_name}: {what} returned {type(body).__name__}, expected an object")
        return body

    def _bad_status(self, response: httpx.Response, what: str) -> EngineError:
        message = f"{self.host_name}: {what} answered {response.status_code}: {response.text[:300]}"
        if response.status_code == 401:  # SGLang started with --api-key, and this request had none or another
            return EngineError(
                message, hint="the engine requires an API key: set api_key_secret for this host (docs/configuration.md)"
            )
        return EngineError(message)
