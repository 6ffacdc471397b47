"""A real webhook receiver on loopback for the notify tests: it records each POST's path and JSON body, and
answers with the status a test sets (500: a receiver that is down)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Receiver:
    url: str
    status: int = 200
    posts: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def events(self) -> list[dict[str, Any]]:
        return [body for _, body in self.posts]


@contextmanager
def receiver() -> Iterator[Receiver]:
    """A receiver at http://127.0.0.1:PORT; its URL carries a token in its path and query, as real ones do."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    found = Receiver(f"http://127.0.0.1:{server.server_address[1]}/hooks/s3cr3t-path?token=s3cr3t-query")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            found.posts.append((self.path, json.loads(self.rfile.read(length))))
            self.send_response(found.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    server.RequestHandlerClass = Handler
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()
