"""SGLang's HTTP API (the subset specops reads), on the stdlib ThreadingHTTPServer.

Status codes, paths and JSON shapes follow upstream http_server.py: health endpoints answer 503
until warmup is done, /metrics exists only with --enable-metrics, unknown paths give FastAPI's
`{"detail": "Not Found"}`. `"stream": true` answers in SSE (`data: {...}` chunks, then `data: [DONE]`).

Drain (SGLang's SIGTERM contract, launch_server.py): once `draining` is set, health answers 503 and new
generate requests are refused, while running ones finish; `sglang:num_running_reqs` counts them.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sglang.srt.generator import Generator
from sglang.srt.sampling import temperature_of
from sglang.srt.server_args import ServerArgs, server_args_dict
from sglang.srt.testengine_faults import hang_if_due
from sglang.srt.testengine_log import uvicorn_log
from sglang.version import __version__


class EngineState:
    """Shared by all handler threads: the args, the generator and whether warmup has finished."""

    def __init__(self, args: ServerArgs, generator: Generator, context_length: int) -> None:
        self.args = args
        self.generator = generator
        self.context_length = context_length
        self.up = threading.Event()
        self.created = int(time.time())
        self.draining = threading.Event()
        self.running = 0
        self._running_lock = threading.Lock()

    def begin_request(self) -> bool:
        """Count a generate request as running; False (not counted) once draining: it is refused."""
        with self._running_lock:
            if self.draining.is_set():
                return False
            self.running += 1
            return True

    def end_request(self) -> None:
        with self._running_lock:
            self.running -= 1

    def server_info(self) -> dict[str, Any]:
        internal: dict[str, Any] = {"last_gen_throughput": self.generator.stats.last_gen_throughput}
        accept = self.generator.avg_accept_length()
        if accept is not None:
            internal["avg_spec_accept_length"] = accept
        return {
            **server_args_dict(self.args),
            "internal_states": [internal] * self.args.dp_size,
            "version": __version__,
        }

    def model_info(self) -> dict[str, Any]:
        return {
            "model_path": self.args.model_path,
            "tokenizer_path": self.args.model_path,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "has_image_understanding": self.generator.model.is_multimodal,
        }

    def models(self) -> dict[str, Any]:
        name = self.args.served_model_name
        card = {
            "id": name,
            "object": "model",
            "created": self.created,
            "owned_by": "sglang",
            "root": name,
            "max_model_len": self.context_length,
        }
        return {"object": "list", "data": [card]}

    def metrics(self) -> str:
        stats, spec = self.generator.stats, self.generator.avg_accept_length()
        lines = [
            "# HELP sglang:gen_throughput The generation throughput (token/s).",
            "# TYPE sglang:gen_throughput gauge",
            f'sglang:gen_throughput{{model_name="{self.args.served_model_name}"}} {stats.last_gen_throughput}',
            "# TYPE sglang:spec_accept_length gauge",
            f'sglang:spec_accept_length{{model_name="{self.args.served_model_name}"}} {spec or 0.0}',
            "# HELP sglang:num_running_reqs The number of running requests.",
            "# TYPE sglang:num_running_reqs gauge",
            f'sglang:num_running_reqs{{model_name="{self.args.served_model_name}"}} {float(self.running)}',
            "# HELP sglang:num_queue_reqs The number of requests in the waiting queue.",
            "# TYPE sglang:num_queue_reqs gauge",
            f'sglang:num_queue_reqs{{model_name="{self.args.served_model_name}"}} 0.0',
            "# TYPE sglang:prompt_tokens_total counter",
            f'sglang:prompt_tokens_total{{model_name="{self.args.served_model_name}"}} {stats.prompt_tokens}.0',
            "# TYPE sglang:generation_tokens_total counter",
            f'sglang:generation_tokens_total{{model_name="{self.args.served_model_name}"}} {stats.generation_tokens}.0',
            "# TYPE sglang:num_requests_total counter",
            f'sglang:num_requests_total{{model_name="{self.args.served_model_name}"}} {stats.requests}.0',
        ]
        return "\n".join(lines) + "\n"


class Handler(BaseHTTPRequestHandler):
    """One request; `server.state` is the EngineState."""

    protocol_version = "HTTP/1.1"

    @property
    def state(self) -> EngineState:
        return self.server.state  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:
        """Access log in uvicorn's shape instead of http.server's stderr line."""

    def _reply(self, code: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        phrase = self.responses.get(code, ("",))[0]
        uvicorn_log(
            f'{self.client_address[0]}:{self.client_address[1]} - "{self.command} {self.path} HTTP/1.1" {code} {phrase}'
        )

    def _json(self, code: int, payload: Any) -> None:
        self._reply(code, json.dumps(payload).encode())

    def _authorized(self) -> bool:
        """SGLang's add_api_key_middleware: with --api-key every path but /health* and /metrics needs
        `Authorization: Bearer <key>`; anything else is answered 401 {"error": "Unauthorized"}."""
        key = self.state.args.api_key
        path = self.path.split("?", 1)[0]
        if not key or path.startswith("/health") or path.startswith("/metrics"):
            return True
        if self.headers.get("Authorization") == "Bearer " + key:
            return True
        self._json(401, {"error": "Unauthorized"})
        return False

    def do_GET(self) -> None:
        hang_if_due()
        if not self._authorized():
            return
        path = self.path.split("?", 1)[0]
        routes = {
            "/get_server_info": self.state.server_info,
            "/server_info": self.state.server_info,
            "/get_model_info": self.state.model_info,
            "/model_info": self.state.model_info,
            "/v1/models": self.state.models,
        }
        if path in ("/health", "/health_generate"):
            self._health(path)
        elif path in routes:
            self._json(200, routes[path]())
        elif path.startswith("/v1/models/"):
            self._model_card(path.removeprefix("/v1/models/"))
        elif path == "/metrics" and self.state.args.enable_metrics:
            self._reply(200, self.state.metrics().encode(), "text/plain; version=0.0.4; charset=utf-8")
        else:
            self._json(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        hang_if_due()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)  # read first: a refused request's body must not stay in the stream
        if not self._authorized():
            return
        if self.path.split("?", 1)[0] != "/generate":
            self._json(404, {"detail": "Not Found"})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError as exc:
            self._json(400, {"error": {"message": f"Invalid JSON: {exc}"}})
            return
        self._generate(body)

    do_PUT = do_POST

    def _health(self, path: str) -> None:
        if not self.state.up.is_set() or self.state.draining.is_set():
            self._reply(503, b"")
            return
        if path == "/health_generate":
            self.state.generator.generate("", 1, record=False)
        self._reply(200, b"")

    def _model_card(self, name: str) -> None:
        card = self.state.models()["data"][0]
        if name == card["id"]:
            self._json(200, card)
        else:
            self._json(
                404,
                {
                    "error": {
                        "message": f"The model '{name}' does not exist",
                        "type": "NotFoundError",
                        "code": "model_not_found",
                    }
                },
            )

    def _generate(self, body: dict[str, Any]) -> None:
        if "text" not in body and "input_ids" not in body:
            self._json(400, {"error": {"message": "Either text or input_ids should be provided."}})
            return
        prompt = body.get("text") or " ".join(str(i) for i in body.get("input_ids") or [])
        params = body.get("sampling_params") or {}
        if not self.state.begin_request():
            self._json(503, {"error": {"message": "The server is shutting down; the request was not accepted."}})
            return
        try:
            tokens, temperature = int(params.get("max_new_tokens", 128)), temperature_of(params)
            if body.get("stream"):
                self._stream(self.state.generator.stream(str(prompt), tokens, temperature=temperature))
            else:
                self._json(200, self.state.generator.generate(str(prompt), tokens, temperature=temperature))
        finally:
            self.state.end_request()

    def _stream(self, events: Iterator[dict[str, Any]]) -> None:
        """SGLang's StreamingResponse: `data: {json}` events then `data: [DONE]`, as text/event-stream in HTTP/1.1
        chunks (uvicorn's framing for a body of unknown length), each written as soon as it is made."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in events:
            self._chunk(b"data: " + json.dumps(event).encode() + b"\n\n")
        self._chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        uvicorn_log(f'{self.client_address[0]}:{self.client_address[1]} - "POST {self.path} HTTP/1.1" 200 OK')

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def make_server(state: EngineState) -> ThreadingHTTPServer:
    """Bind now (so a busy port fails at start-up, like uvicorn), serve later."""
    server = ThreadingHTTPServer((state.args.host, state.args.port), Handler)
    server.daemon_threads = True
    server.state = state  # type: ignore[attr-defined]
    return server
