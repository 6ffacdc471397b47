"""Host side of rollback, and the guard that rolls back when the deploying specops dies.

Part of the host-side script (see release_remote.py): stdlib only, Python 3.8+, run by the host's own
interpreter. Two ops:

  rollback SERVICE_DIR UNIT TARGET_ID REASON
      point `current` at TARGET_ID (or, when empty, the newest verified release that is not current), put
      back the unit text recorded in its manifest, daemon-reload, reset-failed (so a deliberate restart never
      counts against StartLimitBurst=), restart the unit, append to audit.jsonl.
  guard SERVICE_DIR UNIT LOCK_DIR STALE_AFTER_S
      run by a systemd timer that the deploy arms before it switches `current`: while the deploy's lock
      heartbeat is fresh it does nothing; if the lock is gone or stale (the CLI was killed) and `current` is
      not verified, it rolls back. This is why a `kill -9` at any phase still leaves a verified release serving.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from specops.remote.release.hostdata import AUDIT_SCHEMA, SCHEMA_KEY, Refused, checked_release_id
from specops.remote.release.script import (
    current_id,
    op_list,
    op_switch,
    read_manifest,
)

UNIT_DIR = "/etc/systemd/system"


def rollback_target(service_dir: str, wanted: str) -> str:
    """The release to go back to: the one asked for (it must be a rollback target) or the newest verified."""
    releases = op_list(service_dir)["releases"]
    usable = [r["id"] for r in releases if r["complete"] and r["verified"] and not r.get("error")]
    current = current_id(service_dir)
    if wanted:
        if wanted not in usable:
            raise Refused("target", "release " + wanted + " is not a verified, complete release on this host")
        return str(wanted)
    candidates = [release_id for release_id in usable if release_id != current]
    if not candidates:
        raise Refused("no-target", "no verified release other than the current one to roll back to")
    return str(candidates[-1])


def restore_unit(service_dir: str, release_id: str, unit: str) -> bool:
    """Write the unit text recorded with the release (atomic rename); True when the file changed."""
    text = read_manifest(os.path.join(service_dir, "releases", release_id)).get("unit")
    if not isinstance(text, str) or not text:
        return False
    path = os.path.join(UNIT_DIR, unit)
    try:
        with open(path, encoding="utf-8") as handle:
            if handle.read() == text:
                return False
    except OSError:
        pass
    temporary = path + ".specops-tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)
    return True


def append_audit(service_dir: str, entry: dict[str, Any]) -> None:
    line = (json.dumps({SCHEMA_KEY: AUDIT_SCHEMA, **entry}, sort_keys=True) + "\n").encode("utf-8")
    descriptor = os.open(os.path.join(service_dir, "audit.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)


def op_rollback(service_dir: str, unit: str, target: str, reason: str) -> dict[str, Any]:
    import datetime  # here, not at the top: every `list` and `receive` would pay for these imports
    import socket
    import subprocess

    release_id = rollback_target(service_dir, checked_release_id(target, empty_ok=True))
    switched = op_switch(service_dir, release_id)
    unit_changed = restore_unit(service_dir, release_id, unit)
    subprocess.run(["systemctl", "daemon-reload"], check=True, timeout=120)
    # A deliberate restart: forget the start-rate counter first, so rollbacks never end in start-limit-hit.
    subprocess.run(["systemctl", "reset-failed", unit], check=False, timeout=120)  # not loaded yet: exits 1
    subprocess.run(["systemctl", "restart", unit], check=True, timeout=600)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: UP017 (3.8)
    append_audit(
        service_dir,
        {"when": when, "who": "specops@" + socket.gethostname(), "action": "rollback", "from": switched["previous"],
         "to": release_id, "outcome": "restarted", "message": reason, "unit_restored": unit_changed},
    )  # fmt: skip
    return {"previous": switched["previous"], "current": release_id, "unit_restored": unit_changed}


def lock_is_alive(lock_dir: str, stale_after_s: float) -> bool:
    """The deploy's lock exists and its heartbeat (holder.json's mtime, host clock) is recent."""
    for name in ("holder.json", ""):
        try:
            return time.time() - os.stat(os.path.join(lock_dir, name)).st_mtime <= stale_after_s
        except OSError:
            continue
    return False


def op_guard(service_dir: str, unit: str, lock_dir: str, stale_after_s: str) -> dict[str, Any]:
    if lock_is_alive(lock_dir, float(stale_after_s)):
        return {"action": "none", "why": "the deploy is alive (fresh lock heartbeat)"}
    current = current_id(service_dir)
    if current is not None and read_manifest(os.path.join(service_dir, "releases", current)).get("verified") is True:
        return {"action": "none", "why": "current release " + current + " is verified"}
    reason = "guard: the deploy stopped (no lock heartbeat) before release " + str(current) + " was verified"
    return {"action": "rollback", **op_rollback(service_dir, unit, "", reason)}
