"""`specops lock release`: an operator removes a lock, and the audit log keeps who removed whose.

Separate from lock.py (the protocol) because this is the operator's action around it: release, then audit.
An audit write that fails does not undo the release: the lock is gone either way, so the failure is
returned for the caller to show as a warning rather than raised.
"""

from __future__ import annotations

from dataclasses import dataclass

from specops.config.inventory import HostSpec
from specops.errors import LockHeld, SpecopsError
from specops.host.base import Host
from specops.ops import audit
from specops.ops.lock import DEFAULT_STALE_AFTER_S, Released, lock_held_error, release


@dataclass(frozen=True)
class AuditedRelease:
    outcome: Released
    audit_error: str | None = None


def release_audited(
    host: Host, spec: HostSpec, *, force: bool = False, stale_after_s: float = DEFAULT_STALE_AFTER_S
) -> AuditedRelease:
    """Release the lock (see lock.release), audit a removal; raise LockHeld when a live holder keeps it."""
    outcome = release(host, force=force, stale_after_s=stale_after_s)
    if outcome.info is not None and not outcome.released:
        error = lock_held_error(outcome.info)
        raise LockHeld(
            f"{error.message}: not released, {outcome.reason}",
            hint=f"if you are sure no deploy is running there: specops lock release {spec.name} --force",
        )
    if not outcome.released or outcome.info is None:
        return AuditedRelease(outcome)
    entry = audit.new_entry("lock-release", outcome="released", forced=force, message=outcome.info.describe())
    try:
        audit.record(host, spec, entry)
    except (SpecopsError, OSError) as error:
        return AuditedRelease(outcome, f"the release was not audited: {error}")
    return AuditedRelease(outcome)
