"""Test doubles for the engine's HTTP API: canned HTTP/1.1 answers served through a fake tunnel.

The real EngineClient (httpx + httpcore over `host.open_tunnel`) talks to them, so these tests exercise the
whole client stack; only the server side is canned. Used with RecordingHost(tunnel_factory=...).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Route = tuple[int, bytes]
Handler = Callable[[str, str, bytes], Route]  # method, path, body -> (status, body)

REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 503: "Service Unavailable"}


def json_route(payload: Any, status: int = 200) -> Route:
    return status, json.dumps(payload).encode()


@dataclass
class CannedServer:
    """Routes (method, path) to answers; a list of answers is used in turn (the last repeats)."""

    routes: dict[tuple[str, str], list[Route]] = field(default_factory=dict)
    requests: list[tuple[str, str, bytes]] = field(default_factory=list)
    refuse: bool = False

    def add(self, method: str, path: str, *answers: Route) -> CannedServer:
        self.routes[(method, path)] = list(answers)
        return self

    def answer(self, method: str, path: str, body: bytes) -> Route:
        self.requests.append((method, path, body))
        answers = self.routes.get((method, path))
        if not answers:
            return json_route({"detail": "Not Found"}, 404)
        return answers.pop(0) if len(answers) > 1 else answers[0]

    def tunnel(self, remote_host: str, remote_port: int) -> CannedTunnel:
        if self.refuse:
            from specops.errors import ConnectError

            raise ConnectError(f"cannot connect to {remote_host}:{remote_port}: Connection refused")
        return CannedTunnel(self)


class CannedTunnel:
    """Socket-like: collects one HTTP request from sendall(), then recv() returns the canned response."""

    def __init__(self, server: CannedServer) -> None:
        self.server = server
        self.sent = b""
        self.pending = b""
        self.closed = False

    def sendall(self, data: bytes, /) -> None:
        self.sent += data
        head, sep, rest = self.sent.partition(b"\r\n\r\n")
        if not sep:
            return
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if len(rest) < length:
            return
        method, path, _ = head.split(b"\r\n")[0].decode().split(" ", 2)
        status, body = self.server.answer(method, path, rest[:length])
        self.pending = (
            f"HTTP/1.1 {status} {REASONS.get(status, 'X')}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        self.sent = b""

    def recv(self, size: int, /) -> bytes:
        chunk, self.pending = self.pending[:size], self.pending[size:]
        return chunk

    def settimeout(self, timeout: float | None, /) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def sse_route(events: list[Any], status: int = 200) -> Route:
    """A streamed /generate answer as SGLang sends it: `data: {json}` events, then `data: [DONE]`."""
    lines = [f"data: {json.dumps(event)}\n\n" for event in events]
    return status, ("".join(lines) + "data: [DONE]\n\n").encode()


def sampled_events(text: str, latency: float = 0.05) -> list[dict[str, Any]]:
    """SGLang's cumulative stream events for `text`, one word per decode step; the last one finishes."""
    words = text.split()
    events: list[dict[str, Any]] = []
    for step in range(1, len(words) + 1):
        meta: dict[str, Any] = {"completion_tokens": step, "finish_reason": None}
        if step == len(words):
            meta.update(finish_reason={"type": "stop"}, e2e_latency=latency, spec_accept_length=3.0)
        events.append({"text": " " + " ".join(words[:step]), "output_ids": list(range(1000, 1000 + step)),
                       "meta_info": meta})  # fmt: skip
    return events
