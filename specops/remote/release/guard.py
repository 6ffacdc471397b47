"""The rollback guard's op, run by the systemd timer a deploy arms before it switches `current`.

Part of the guard file (.specops-guard.py: the release script plus hostlock.py, this module and watch.py,
bundled by specops/remote/bundle.py guard_source), never of the argv script: only the timer runs it. One op:

  guard SERVICE_DIR UNIT LOCK_DIR STALE_AFTER_S
      while the deploy's lock heartbeat is fresh it does nothing; if the lock is gone or stale (the CLI was
      killed) and `current` is not verified, it takes the lock (taking a stale one over) and rolls back under
      it. This is why a `kill -9` at any phase still leaves a verified release serving, and why the next
      deploy waits for that rollback instead of racing it.
"""

from __future__ import annotations

import os
from typing import Any

from specops.remote.release.hostlock import HeldLock, lock_is_alive, take_lock
from specops.remote.release.rollback import op_rollback
from specops.remote.release.script import current_id, read_manifest
from specops.remote.release.session import OPS


def current_is_verified(service_dir: str) -> str | None:
    """The current release's id when it is verified (nothing to do), else None."""
    current = current_id(service_dir)
    if current is not None and read_manifest(os.path.join(service_dir, "releases", current)).get("verified") is True:
        return current
    return None


def op_guard(service_dir: str, unit: str, lock_dir: str, stale_after_s: str) -> dict[str, Any]:
    stale = float(stale_after_s)
    if lock_is_alive(lock_dir, stale):
        return {"action": "none", "why": "the deploy is alive (fresh lock heartbeat)"}
    verified = current_is_verified(service_dir)
    if verified is not None:
        return {"action": "none", "why": "current release " + verified + " is verified"}
    current = current_id(service_dir)
    token = take_lock(lock_dir, "specops guard: rolling back " + str(current) + " (its deploy stopped)", stale)
    if token is None:
        return {"action": "none", "why": "another specops took the lock (it owns the host now)"}
    with HeldLock(lock_dir, token):
        verified, current = current_is_verified(service_dir), current_id(service_dir)  # again, under the lock
        if verified is not None:
            return {"action": "none", "why": "current release " + verified + " is verified"}
        reason = "guard: the deploy stopped (no lock heartbeat) before release " + str(current) + " was verified"
        return {"action": "rollback", **op_rollback(service_dir, unit, "", reason)}


OPS["guard"] = op_guard
