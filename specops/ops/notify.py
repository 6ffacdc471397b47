"""Events to [notify]: a webhook (JSON POST) and/or a command on THIS machine (the event as JSON on stdin).

Why: an outcome printed on the terminal that started a deploy is seen by one person; a canary that stopped a
fleet, a rollback, a stale lock taken over should reach whoever is on call. The host-side guard posts its own
rollbacks (specops/remote/release/notify.py); this module posts what the CLI did.

Delivery never fails or stalls a command: each event is sent on a background thread, the webhook retried a
few times, and the process waits for pending deliveries only when it exits (after its outcome is printed),
for at most the time they were given. A failed delivery is one warning line on stderr and a line in
$XDG_STATE_HOME/specops/notify.jsonl; the URL is never shown, only its host (credentials live in its path,
query or user part).
"""

from __future__ import annotations

import atexit
import json
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

from specops import __version__
from specops.commands.hostdata import EVENT_SCHEMA, SCHEMA_KEY
from specops.config.notify import Notify, active_notify
from specops.config.redact import mask_secrets
from specops.localdirs import state_root
from specops.ops.audit import append_locally
from specops.ops.lock_holder import utc_now
from specops.remote.release.notify import post_webhook

LOG_FILE = "notify.jsonl"
OUTPUT_TAIL_CHARS = 300
_pending: list[threading.Thread] = []
_deadline: list[float] = [0.0]  # monotonic time by which every pending delivery has given up


def event(name: str, *, host: str | None, release: str | None, outcome: str, cause: str = "",
          previous: str | None = None, profile: str | None = None, **details: Any) -> dict[str, Any]:  # fmt: skip
    """One event as docs/notify.md describes it; `details`: fields an event kind adds (a fleet's counts)."""
    return {SCHEMA_KEY: EVENT_SCHEMA, "event": name, "host": host, "release": release, "previous": previous,
            "profile": profile, "outcome": outcome, "cause": mask_secrets(cause), "time": utc_now(),
            "source": "specops", "specops_version": __version__, **details}  # fmt: skip


def send(document: Mapping[str, Any], notify: Notify | None = None) -> None:
    """Deliver one event to [notify] (the loaded config's when `notify` is None), in the background."""
    settings = notify or active_notify()
    if settings is None:
        return
    budget = settings.timeout_s * (settings.retries + 1) + sum(range(settings.retries + 1)) + 1
    _deadline[0] = max(_deadline[0], time.monotonic() + budget)
    if not _pending:
        atexit.register(wait_for_deliveries)
    thread = threading.Thread(target=deliver, args=(settings, dict(document)), name="specops-notify", daemon=True)
    _pending.append(thread)
    thread.start()


def wait_for_deliveries() -> None:
    """Let pending deliveries finish (each is bounded by its timeout and retries): called at exit, and by tests."""
    while _pending:
        thread = _pending.pop(0)
        thread.join(max(0.0, _deadline[0] - time.monotonic()))


def deliver(settings: Notify, document: dict[str, Any]) -> list[str]:
    """Send one event to the webhook and the command of `settings`; the failures, each also warned and logged."""
    body = json.dumps(document, sort_keys=True).encode("utf-8")
    failures = []
    if settings.webhook:
        failure = post_webhook(settings.revealed_url(), body, settings.timeout_s, settings.retries, proxies=True)
        _log(document, f"webhook {settings.shown_url()}", failure)
        if failure:
            failures.append(f"webhook {settings.shown_url()}: {failure}")
    if settings.command:
        failure = run_command(settings.command, body, settings.timeout_s)
        _log(document, f"command {settings.command[0]}", failure)
        if failure:
            failures.append(f"command `{' '.join(settings.command)}`: {failure}")
    for failure in failures:
        _warn(f"warning: notify: the {document.get('event')} event was not delivered: {failure}")
    return failures


def run_command(argv: list[str], body: bytes, timeout: float) -> str:
    """Run the command with the event on stdin; "" when it exited 0, else why not (with its output's tail)."""
    try:
        done = subprocess.run(argv, input=body, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return f"ran past its {timeout:g} s limit"
    except OSError as error:
        return f"could not start: {error.strerror}"
    if done.returncode == 0:
        return ""
    tail = (done.stdout + done.stderr).decode("utf-8", "replace").strip()[-OUTPUT_TAIL_CHARS:]
    return f"exited {done.returncode}" + (f": {mask_secrets(tail)}" if tail else "")


def _warn(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # the terminal is gone (SIGHUP): the log still says it
        pass


def _log(document: Mapping[str, Any], target: str, failure: str) -> None:
    """One line per delivery in the local notify log: which event went where, and whether it was taken."""
    entry = {"when": utc_now(), "event": document.get("event"), "host": document.get("host"), "to": target,
             "ok": not failure, "error": failure or None}  # fmt: skip
    try:
        append_locally(state_root() / LOG_FILE, (json.dumps(entry, sort_keys=True) + "\n").encode("utf-8"))
    except OSError as error:
        _warn(f"warning: notify: cannot write {LOG_FILE}: {error.strerror}")
