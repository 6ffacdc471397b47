"""A hostile "engine" on 127.0.0.1: answers each path as a case says - non-JSON, huge bodies, wrong types,
a slow drip, a connection closed mid-answer - so the real EngineClient meets them over a real socket.

Every behaviour is bounded in time (a drip stops after `drip_s`), so a client that never gives up still ends.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Answer:
    """How one path answers: a status and a body (text, JSON, or N bytes), dripped or cut off."""

    status: int = 200
    text: str | None = None
    json_body: Any = None
    huge_bytes: int = 0
    drip_s: float = 0.0
    close_early: bool = False

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Answer:
        return cls(
            status=int(data.get("status", 200)),
            text=data.get("text"),
            json_body=json.loads(data["json"]) if "json" in data else None,
            huge_bytes=int(data.get("huge_bytes", 0)),
            drip_s=float(data.get("drip_s", 0.0)),
            close_early=bool(data.get("close_early", False)),
        )

    def body(self) -> bytes:
        if self.huge_bytes:
            return b"x" * self.huge_bytes
        if self.text is not None:
            return self.text.encode()
        return json.dumps(self.json_body).encode()


def _handler(routes: dict[str, Answer]) -> type[BaseHTTPRequestHandler]:
    class Hostile(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet: the test reads results, not logs
            return

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            self._answer()

        def _answer(self) -> None:
            answer = routes.get(self.path.split("?")[0], Answer(status=404, text="not found"))
            body = answer.body()
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body) + (100 if answer.close_early else 0)))
            self.end_headers()
            if answer.drip_s:
                self._drip(body, answer.drip_s)
            else:
                self.wfile.write(body)
            if answer.close_early:
                self.connection.shutdown(socket.SHUT_RDWR)

        def _drip(self, body: bytes, drip_s: float) -> None:
            deadline = time.monotonic() + drip_s
            for byte in body:
                if time.monotonic() > deadline:
                    break
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.05)

    return Hostile


@contextmanager
def hostile_engine(routes: dict[str, Answer]) -> Iterator[int]:
    """Serve `routes` on a free 127.0.0.1 port for the duration of the block; yields the port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(routes))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
