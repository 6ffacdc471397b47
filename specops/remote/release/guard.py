"""The rollback guard's op, run by the systemd timer a deploy arms before it switches `current`.

Part of the guard file (.specops-guard.py: the release script plus this module and watch.py, bundled by
specops/remote/bundle.py guard_source), never of the argv script: only the timer runs it. One op:

  guard SERVICE_DIR UNIT LOCK_DIR STALE_AFTER_S
      while the deploy's lock heartbeat is fresh it does nothing; if the lock is gone or stale (the CLI was
      killed) and `current` is not verified, it rolls back. This is why a `kill -9` at any phase still leaves a
      verified release serving.
"""

from __future__ import annotations

import os
import time
from typing import Any

from specops.remote.release.rollback import op_rollback
from specops.remote.release.script import current_id, read_manifest
from specops.remote.release.session import OPS


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


OPS["guard"] = op_guard
