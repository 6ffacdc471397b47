"""Faults the test engine plays after it came up, the way SGLang servers are seen to fail in production.

Hang (a server that passed its health checks, then hangs): from then on every HTTP request is accepted and
never answered, /health_generate included, as when the scheduler loop is stuck. Knobs:

  SGLANG_TESTENGINE_HANG_AFTER_SECONDS   hang this long after the process started
  SGLANG_TESTENGINE_HANG_AFTER_REQUESTS  hang once this many HTTP requests were received

A build may carry its own knobs in `sglang/testengine_env.json` (a JSON object of SGLANG_TESTENGINE_* values,
which win over the environment): a host's env file is shared by every release, a build is not, so a test can
deploy a release that hangs and roll back to one that does not.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

STARTED = time.monotonic()
BUILD_ENV = Path(__file__).resolve().parent.parent / "testengine_env.json"
_lock = threading.Lock()
_requests = 0
_never = threading.Event()


def apply_build_env() -> None:
    """Put the build's own SGLANG_TESTENGINE_* values into the environment (called first thing at start-up)."""
    try:
        values = json.loads(BUILD_ENV.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(values, dict):
        os.environ.update({str(k): str(v) for k, v in values.items() if str(k).startswith("SGLANG_TESTENGINE_")})


def _limit(name: str) -> float | None:
    value = os.environ.get(name, "")
    return float(value) if value else None


def hang_if_due() -> None:
    """Count this request; block it forever once the hang is due (the caller's thread is a daemon thread)."""
    global _requests
    with _lock:
        _requests += 1
        count = _requests
    seconds = _limit("SGLANG_TESTENGINE_HANG_AFTER_SECONDS")
    requests = _limit("SGLANG_TESTENGINE_HANG_AFTER_REQUESTS")
    due = (seconds is not None and time.monotonic() - STARTED >= seconds) or (requests is not None and count > requests)
    if due:
        _never.wait()
