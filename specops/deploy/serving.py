"""What serves on a host when a deploy, rollback or restart ends, as read from the host, not as planned.

The summary's last line per host comes from here. It is read once, at the end, on the connection the operation
already has: `current` and its verified flag from the release listing, and whether the unit is active. A host
that went silent is not read again (that would cost another timeout): the line then says where the connection
was lost and what the host-side guard will do about the unverified release, and by when.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from specops.commands.guard import GUARD_INTERVAL_S
from specops.commands.planned import HostCommand
from specops.config.inventory import HostSpec
from specops.errors import SpecopsError
from specops.host.base import Host
from specops.ops.engine_stop import unit_running
from specops.ops.lock import DEFAULT_STALE_AFTER_S
from specops.ops.release import read_listing

NOTHING_SERVES = "NOTHING SERVES"


@dataclass(frozen=True)
class Serving:
    """`release`: what `current` names (None: no release); `verified`: its manifest says so; `active`: its unit
    runs (active or starting)."""

    release: str | None
    verified: bool
    active: bool
    failed_gates: bool = False  # the operation's gates just failed on it: its engine runs but does not serve

    @property
    def serves(self) -> bool:
        return self.release is not None and self.active and not self.failed_gates

    def line(self) -> str:
        """`serving R (verified, engine active)`, or why nothing serves."""
        if self.release is None:
            return f"{NOTHING_SERVES}: no release is current"
        verified = "verified" if self.verified else "NOT verified"
        if not self.active:
            return f"{NOTHING_SERVES}: {self.release} is current ({verified}) but its engine is not running"
        if self.failed_gates:
            return f"{NOTHING_SERVES}: {self.release} is current ({verified}); its engine runs but failed the gates"
        return f"serving {self.release} ({verified}, engine active)"

    def to_json(self) -> dict[str, Any]:
        return {"release": self.release, "verified": self.verified, "engine_active": self.active,
                "serves": self.serves}  # fmt: skip


def read_serving(host: Host, spec: HostSpec, planned: Sequence[HostCommand] = ()) -> Serving | None:
    """One read of what serves now; None when the host does not answer it (the summary then says it was not read).
    `planned`: the plan's serving step's two commands (its listing, the unit's state), run as they are."""
    listed, state = planned or (None, None)
    try:
        listing = read_listing(host, spec, listed)
        active = unit_running(host, spec, state)
    except SpecopsError:
        return None
    current = next((r for r in listing.releases if r.id == listing.current), None)
    return Serving(listing.current, bool(current and current.verified), active)


def guard_deadline(after_s: float, now: datetime | None = None) -> str:
    """`HH:MM:SS UTC (within N s)`: when the host-side guard acts at the latest."""
    at = (now or datetime.now(UTC)) + timedelta(seconds=after_s)
    return f"{at:%H:%M:%S} UTC (within {after_s:.0f} s)"


def lost_line(host: str, phase: str, attempted: str | None, guard_to: str | None, switched: bool,
              previous: str | None, now: datetime | None = None) -> str:  # fmt: skip
    """A host that went silent during `phase`: where the connection was lost, that the release it was deploying is
    unverified, and what the guard will do. The guard acts once the deploy's lock heartbeat is stale (the host no
    longer hears from this deploy) and then at its next tick: at the latest that long after now."""
    where = f"connection lost during the {phase} phase"
    if not switched:
        return f"{where}, before `current` was switched: {previous or 'no release'} is still current (not read again)"
    if guard_to is None:
        return (f"{where}: {attempted} is current and unverified, and no rollback guard is armed; "
                f"`specops status {host}` shows what serves once the host answers")  # fmt: skip
    deadline = guard_deadline(DEFAULT_STALE_AFTER_S + GUARD_INTERVAL_S, now)
    return (f"{where}: {attempted} is unverified; the host-side guard rolls back to {guard_to} by {deadline}, "
            f"once the lock's heartbeat is stale")  # fmt: skip


def interrupted_line(attempted: str | None, guard_to: str, now: datetime | None = None) -> str:
    """A deploy interrupted after the switch, its lock released: the guard acts at its next tick."""
    return (f"{attempted} is unverified: the host-side guard rolls back to {guard_to} by "
            f"{guard_deadline(GUARD_INTERVAL_S, now)}")  # fmt: skip


def rollback_failed_line(host: str, to_release: str | None, cause: str) -> str:
    """The rollback's own gates (or its switch) failed: no verified release serves."""
    target = f"the rollback to {to_release}" if to_release else "the rollback"
    return f"{NOTHING_SERVES}: {target} failed ({cause}); `specops logs {host}` shows why"
