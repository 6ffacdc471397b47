"""Pruning by hand: `specops releases HOST --prune`, under the host's deploy lock.

Why a command of its own: a deploy prunes after "verified" (and removes the leftovers of dead pushes before it
sends), but a host whose pushes keep failing never gets there and fills its disk with `unfinished` releases.
Under the lock no push is running, so an `unfinished` release untouched for longer than the lock's life is a
dead push's leftover. Complete releases go by the keep rule (hosts.NAME.keep_releases); `current`, the newest
verified release and the rollback target (the newest verified one that is neither current nor marked bad) stay.
"""

from __future__ import annotations

from specops.commands.release import Listing
from specops.config.inventory import HostSpec
from specops.host.base import Host
from specops.ops import audit, lock
from specops.ops.lock import DEFAULT_STALE_AFTER_S
from specops.ops.release import read_listing
from specops.ops.release_changes import prune

Say = lock.EventSink


def rollback_protected(listing: Listing) -> set[str]:
    """The ids a prune must keep whatever the keep rule says: current and the release a rollback would pick."""
    targets = [r.id for r in listing.releases if r.rollback_target and not r.is_current]
    return ({listing.current} if listing.current else set()) | set(targets[-1:])


def prune_by_hand(host: Host, spec: HostSpec, *, wait_s: float = 0, on_event: Say | None = None) -> list[str]:
    """Take the lock, prune, audit what went; the removed ids (oldest first)."""
    holder = lock.LockHolder.current()
    with lock.acquire(host, holder, wait_s=wait_s, on_event=on_event) as held:
        protect = rollback_protected(read_listing(host, spec))
        removed = prune(host, spec, spec.keep_releases, protect, DEFAULT_STALE_AFTER_S)
        message = ("removed " + ", ".join(removed)) if removed else "nothing to remove"
        if held.takeover_note:
            message += f"; {held.takeover_note}"
        audit.record(host, spec, audit.new_entry("prune", outcome="pruned", message=message))
    return removed
