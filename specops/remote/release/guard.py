"""The rollback guard's op, run by the systemd timer a deploy arms before it switches `current`.

Part of the guard file (.specops-guard.py: the release script plus hostlock.py, this module and watch.py,
bundled by specops/remote/bundle.py guard_source), never of the argv script: only the timer runs it. One op:

  guard SERVICE_DIR UNIT LOCK_DIR STALE_AFTER_S
      while the deploy's lock heartbeat is fresh it does nothing; if the lock is gone or stale (the CLI was
      killed) and `current` is not verified, it takes the lock (taking a stale one over) and rolls back under
      it, to the release the deploy's plan chose (`rollback_to` in .specops-guard.json, written when the guard
      was armed). This is why a `kill -9` at any phase still leaves the release the dry run named serving,
      and why the next deploy waits for that rollback instead of racing it. It marks nothing bad: the deploy
      was interrupted (Ctrl-C, kill -9, a lost connection) before its gates judged the release.

The guard never picks a release by age: "the newest verified" is wrong after redeploying an older build or on
a host whose clock was set back. When the planned target is no longer usable (pruned, marked bad since), or
no target was recorded, it leaves `current` as it is and records why: an audit line and the state file, which
`specops status` shows. It acts (or declines) once per arming: later ticks read what it recorded.
"""

from __future__ import annotations

import json
import os
from typing import Any

from specops.remote.release.hostdata import (
    GUARD_STATE_FILE,
    GUARD_STATE_SCHEMA,
    SCHEMA_KEY,
    Refused,
    checked_schema,
    utc_text,
)
from specops.remote.release.hostlock import HeldLock, lock_is_alive, take_lock
from specops.remote.release.notify import notify_from_host
from specops.remote.release.rollback import append_audit, op_rollback, rollback_target
from specops.remote.release.script import current_id, read_manifest, write_json_atomic
from specops.remote.release.session import OPS


def current_is_verified(service_dir: str) -> str | None:
    """The current release's id when it is verified (nothing to do), else None."""
    current = current_id(service_dir)
    if current is not None and read_manifest(os.path.join(service_dir, "releases", current)).get("verified") is True:
        return current
    return None


def read_state(service_dir: str) -> dict[str, Any]:
    """The guard's state as armed (release, rollback_to, state "armed") or as it acted; {} when there is none or
    it is unreadable (then there is no planned target: the guard does not roll back). A newer one: refused."""
    path = os.path.join(service_dir, GUARD_STATE_FILE)
    try:
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
        checked_schema(record, path, GUARD_STATE_SCHEMA)
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def record_state(service_dir: str, armed: dict[str, Any], **changes: Any) -> None:
    write_json_atomic(os.path.join(service_dir, GUARD_STATE_FILE), {**armed, SCHEMA_KEY: GUARD_STATE_SCHEMA, **changes})


def planned_target(service_dir: str, state: dict[str, Any]) -> tuple[str, str]:
    """(the planned rollback target, "") when it can be rolled back to; ("", why not) otherwise."""
    target = state.get("rollback_to")
    if not isinstance(target, str) or not target:
        return "", "no rollback target was planned for this guard"
    try:
        return rollback_target(service_dir, target), ""
    except Refused as error:
        return "", "the planned rollback target is no longer usable: " + str(error)


def decline(service_dir: str, state: dict[str, Any], current: str | None, why: str) -> dict[str, Any]:
    """Leave `current` as it is, and say so where an operator looks: the audit log and the state (status)."""
    reason = ("guard: the deploy stopped (no lock heartbeat) before release " + str(current) + " was verified, "
              "but " + why + ": left " + str(current) + " as it is, NOT rolled back")  # fmt: skip
    record_state(service_dir, state, state="no-rollback", reason=reason, at=utc_text())
    append_audit(service_dir, {"when": utc_text(), "who": "specops guard", "action": "guard", "from": current,
                               "to": state.get("rollback_to") or None, "outcome": "no-rollback",
                               "message": reason})  # fmt: skip
    notify_from_host(service_dir, "guard.no-rollback", str(current or ""), current, "no-rollback", reason)
    return {"action": "none", "why": reason}


def op_guard(service_dir: str, unit: str, lock_dir: str, stale_after_s: str) -> dict[str, Any]:
    stale = float(stale_after_s)
    if lock_is_alive(lock_dir, stale):
        return {"action": "none", "why": "the deploy is alive (fresh lock heartbeat)"}
    verified = current_is_verified(service_dir)
    if verified is not None:
        return {"action": "none", "why": "current release " + verified + " is verified"}
    state = read_state(service_dir)
    if state.get("state") not in (None, "armed"):  # it already acted, or declined, for this arming
        return {"action": "none", "why": str(state.get("reason") or "the guard already acted")}
    current = current_id(service_dir)
    token = take_lock(lock_dir, "specops guard: rolling back " + str(current) + " (its deploy stopped)", stale)
    if token is None:
        return {"action": "none", "why": "another specops took the lock (it owns the host now)"}
    with HeldLock(lock_dir, token):
        verified, current = current_is_verified(service_dir), current_id(service_dir)  # again, under the lock
        if verified is not None:
            return {"action": "none", "why": "current release " + verified + " is verified"}
        target, why_not = planned_target(service_dir, state)
        if not target:
            return decline(service_dir, state, current, why_not)
        reason = "guard: the deploy stopped (no lock heartbeat) before release " + str(current) + " was verified"
        done = op_rollback(service_dir, unit, target, reason, "keep-unmarked")  # never judged: nothing is marked
        record_state(service_dir, state, state="rolled-back", rolled_back_to=target, reason=reason, at=utc_text())
    notify_from_host(service_dir, "guard.rolled-back", str(current or ""), target, "rolled-back", reason)  # unlocked
    return {"action": "rollback", **done}


OPS["guard"] = op_guard
