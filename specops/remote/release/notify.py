"""The host posts its own events: a rollback by the guard (a deploy that died) or by the watch (a release that
failed after "verified") is POSTed as JSON to the webhook of [notify], from the host itself, because it
happens when no specops runs on the operator's machine (3 a.m., a closed laptop).

Part of the guard file (.specops-guard.py, specops/remote/bundle.py GUARD_MODULES), stdlib only, Python 3.8+.
The webhook comes from .specops-notify.json (hostdata.py NOTIFY_FILE), written 0600 by root when the guard is
armed, never from argv or a unit's environment, where any local user could read it. A failed post never
changes what the guard did: it is retried a few times, then the audit log says it failed (never the URL).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from specops.remote.release.hostdata import EVENT_SCHEMA, NOTIFY_FILE, SCHEMA_KEY, utc_text
from specops.remote.release.rollback import append_audit
from specops.remote.release.script import read_manifest


def notify_settings(service_dir: str) -> dict[str, Any]:
    """The host's [notify] as the deploy wrote it ({} when none, or unreadable: then nothing is posted)."""
    try:
        with open(os.path.join(service_dir, NOTIFY_FILE), encoding="utf-8") as handle:
            settings = json.load(handle)
    except (OSError, ValueError):
        return {}
    return settings if isinstance(settings, dict) else {}


def host_event(service_dir: str, settings: dict[str, Any], event: str, release: str, serving: Any,
               outcome: str, cause: str) -> dict[str, Any]:  # fmt: skip
    """One event as docs/notify.md describes it: `release` is the one the guard judged (left by a rollback, or
    kept), `serving` the one that serves now (the rollback's target when it rolled back)."""
    import socket

    manifest = read_manifest(os.path.join(service_dir, "releases", release)) if release else {}
    return {SCHEMA_KEY: EVENT_SCHEMA, "event": event, "host": settings.get("host") or socket.gethostname(),
            "release": release or None, "previous": serving or None, "serving": serving or None,
            "profile": manifest.get("profile"),
            "outcome": outcome, "cause": cause, "time": utc_text(), "source": "host",
            "specops_version": settings.get("specops_version")}  # fmt: skip


def post_webhook(url: str, body: bytes, timeout: float, retries: int, proxies: bool = False) -> str:
    """POST `body` as JSON to `url`, retrying (1 s, 2 s, ... apart); "" when a 2xx answer took it, else the last
    failure in words, never the URL (it may carry a credential). The one poster of both ends (specops/ops/notify.py
    too); on the host through no proxy (`proxies`: the environment's, on the operator's machine)."""
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(*([] if proxies else [urllib.request.ProxyHandler({})]))
    headers = {"Content-Type": "application/json", "User-Agent": "specops"}
    failure = ""
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(float(attempt))
        try:
            with opener.open(urllib.request.Request(url, body, headers, method="POST"), timeout=timeout) as answer:
                answer.read(65536)
                return ""
        except urllib.error.HTTPError as error:
            failure = "answered " + str(error.code)
        except urllib.error.URLError as error:
            failure = "could not be reached (" + str(getattr(error.reason, "strerror", None) or
                                                     type(error.reason).__name__) + ")"  # fmt: skip
        except (OSError, ValueError) as error:  # a timeout, a reset connection, a malformed answer
            failure = "failed (" + type(error).__name__ + ")"
    return failure + " after " + str(retries + 1) + " attempt(s)"


def notify_from_host(service_dir: str, event: str, release: str, serving: Any, outcome: str, cause: str) -> None:
    """Post one event to the host's webhook, if one is set; a failure is audited, never raised."""
    settings = notify_settings(service_dir)
    url = settings.get("webhook")
    if not isinstance(url, str) or not url:
        return
    try:
        document = host_event(service_dir, settings, event, release, serving, outcome, cause)
        failure = post_webhook(url, json.dumps(document, sort_keys=True).encode("utf-8"),
                               float(settings.get("timeout_s", 5)), int(settings.get("retries", 2)))  # fmt: skip
    except Exception as error:  # whatever went wrong, the rollback it reports has happened
        failure = "failed (" + type(error).__name__ + ")"
    if failure:
        append_audit(service_dir, {"when": utc_text(), "who": "specops guard", "action": "notify", "to": release,
                                   "outcome": "failed", "message": "the " + event + " event was not delivered "
                                   "to the webhook: " + failure})  # fmt: skip
