"""SGLang's streamed /generate answer, read line by line: no HTTP here (the client feeds the lines).

With `"stream": true` SGLang answers `text/event-stream`: one `data: {...}` event per decode step, then
`data: [DONE]`. Each event has SGLang's /generate shape (`text`, `output_ids`, `meta_info` with the running
`completion_tokens`); the last one adds `finish_reason` with a type, `e2e_latency` and the spec counters. By
default `text` and `output_ids` are the whole answer so far; a server started with
`--incremental-streaming-output` (older builds: `--stream-output`) sends only what is new, and then they are
appended. A failure mid-stream arrives as `data: {"error": {"message": ...}}`.

Why the client measures TTFT itself: the time until the first token reaches the caller is what users feel, and
it includes the tokenizer, the queue and the HTTP path that the engine's own histograms do not all see.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

DONE = "[DONE]"


@dataclass
class StreamedAnswer:
    """One streamed generation as the caller saw it. `ttft_s`: seconds from sending the request to the first
    event that carried a token (None when none came); `elapsed_s`: to the end of the stream."""

    text: str = ""
    output_ids: list[int] = field(default_factory=list)
    meta_info: dict[str, Any] = field(default_factory=dict)
    ttft_s: float | None = None
    elapsed_s: float = 0.0
    events: int = 0
    done: bool = False
    error: str | None = None

    @property
    def completion_tokens(self) -> int:
        reported = self.meta_info.get("completion_tokens")
        if isinstance(reported, int) and not isinstance(reported, bool):
            return reported
        return len(self.output_ids)

    @property
    def finish_reason(self) -> str | None:
        reason = self.meta_info.get("finish_reason")
        if isinstance(reason, dict):
            kind = reason.get("type")
            return kind if isinstance(kind, str) else None
        return reason if isinstance(reason, str) else None


class StreamReader:
    """Feed it the response's lines in order, with the monotonic time each arrived."""

    def __init__(self, started: float, incremental: bool = False) -> None:
        self.answer = StreamedAnswer()
        self._started = started
        self._incremental = incremental

    def feed(self, line: str, now: float) -> bool:
        """Take one line; True once the stream is over (`[DONE]` or an error event)."""
        if not line.startswith("data:"):
            return False  # blank separators, `: keep-alive` comments, `event:` lines
        payload = line[len("data:") :].strip()
        self.answer.elapsed_s = now - self._started
        if payload == DONE:
            self.answer.done = True
            return True
        try:
            event = json.loads(payload)
        except ValueError:
            self.answer.error = f"the stream sent something that is not JSON: {payload[:120]!r}"
            return True
        if not isinstance(event, dict):
            self.answer.error = f"the stream sent {type(event).__name__}, expected an object"
            return True
        if "error" in event:
            error = event["error"]
            message = error.get("message") if isinstance(error, dict) else error
            self.answer.error = f"the engine reported an error mid-stream: {message}"
            return True
        self._take(event, now)
        return False

    def _take(self, event: dict[str, Any], now: float) -> None:
        answer = self.answer
        answer.events += 1
        text, ids, meta = event.get("text"), event.get("output_ids"), event.get("meta_info")
        new_ids = [item for item in ids if isinstance(item, int)] if isinstance(ids, list) else []
        if isinstance(text, str):
            answer.text = answer.text + text if self._incremental else text
        answer.output_ids = answer.output_ids + new_ids if self._incremental else new_ids or answer.output_ids
        if isinstance(meta, dict):
            answer.meta_info = meta
        if answer.ttft_s is None and (answer.text or answer.output_ids or answer.completion_tokens > 0):
            answer.ttft_s = now - self._started
