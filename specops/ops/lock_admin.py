"""`specops lock release`: an operator removes a lock, and the audit log keeps who removed whose.

Separate from lock.py (the protocol) because this is the operator's action around it: release (only a stale
lock, or one whose holder died here, without --force), then audit.
An audit write that fails does not undo the release: the lock is gone either way, so the failure is
returned for the caller to show as a warning rather than raised.
"""

from __future__ import annotations

from dataclasses import dataclass

from specops.config.inventory import HostSpec
from specops.errors import LockHeld, SpecopsError
from specops.host.base import Host
from specops.ops import audit
from specops.ops.lock import DEFAULT_STALE_AFTER_S, lock_held_error, lock_info, lock_root, run_lock, status
from specops.ops.lock_holder import LockInfo, dead_here


@dataclass(frozen=True)
class Released:
    """What `release` did: `released` is False when the lock was kept (and why) or already free."""

    released: bool
    info: LockInfo | None
    reason: str


def release(
    host: Host, *, force: bool = False, root: str | None = None, stale_after_s: float = DEFAULT_STALE_AFTER_S
) -> Released:
    """Remove a lock for an operator: any lock with force; without it, a stale one, or one whose holder is a
    dead process on THIS machine (your own deploy that crashed). The removal is conditional on the token we
    looked at, so a lock taken meanwhile by someone else is never removed by mistake."""
    root = lock_root(root)
    info = status(host, root=root, stale_after_s=stale_after_s)
    if info is None:
        return Released(False, None, "the lock is free")
    token = info.holder.token if info.holder else ""
    if force or (info.holder is not None and dead_here(info.holder, need_machine_id=False)):
        reply = run_lock(host, "release", root, token)
    elif info.stale:
        reply = run_lock(host, "release", root, token, stale_after_s)
    else:
        return Released(False, info, "the holder is alive (its heartbeat is recent)")
    if reply.state == "released":
        return Released(True, lock_info(host, reply, stale_after_s, root), "released")
    now = lock_info(host, reply, stale_after_s, root) if reply.state != "free" else None
    return Released(False, now, "the lock changed hands while we looked" if now else "the lock is free")


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
