"""After a rollback failed past the stop of the serving engine: put back what was serving, or say that nothing is.

A rollback drains and stops the engine before the host-side switch. When anything after that stop fails (the
host refused the target after all, the GPUs stayed busy, a host command failed), the host would otherwise be
left dark without a word in the text output. So: when `current` still names the release that was serving, its
unit is started again and its readiness awaited; when that cannot be done (or does not come up), the result
says loudly that nothing serves and how to start it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from specops.commands.release import Listing
from specops.config.inventory import HostSpec
from specops.engine.readiness import ProgressCallback, journal_position, wait_ready
from specops.errors import SpecopsError
from specops.events import Event, Reporter
from specops.host.base import Host
from specops.ops.release import read_listing
from specops.ops.unit import restart

if TYPE_CHECKING:
    from specops.deploy.rollback import ProfileFor  # rollback.py calls this module


@dataclass(frozen=True)
class Restoration:
    """`restored`: the release that serves again (None: nothing was restored); `dark`: the loud line saying
    that nothing serves and how to start it (None when something serves)."""

    restored: str | None
    dark: str | None


def start_hint(spec: HostSpec) -> str:
    """How an operator starts the engine again by hand."""
    return f"start it with `specops restart {spec.name}`, or on the host `systemctl start {spec.unit_name}`"


def stays_dark(spec: HostSpec, why: str) -> Restoration:
    """Nothing serves and specops will not start it (the GPUs are busy, or the host is unreadable)."""
    say = f"NOTHING SERVES on {spec.name}: {spec.unit_name} was stopped by the rollback and {why}; {start_hint(spec)}"
    return Restoration(None, say)


def restore_serving(host: Host, spec: HostSpec, profile_for: ProfileFor, before: Listing,
                    reporter: Reporter) -> Restoration:  # fmt: skip
    """Start the unit again when `current` still names what served before the rollback, and wait for it to be
    ready; every failure on the way becomes the loud line instead of an error (the rollback already failed)."""
    was = before.current
    if was is None:
        return stays_dark(spec, "no release is current")
    try:
        now = read_listing(host, spec).current
        if now != was:
            return stays_dark(spec, f"current now names {now}, which did not start")
        reporter.event(Event(spec.name, "restore", f"starting {spec.unit_name} again: {was} was serving before"))
        cursor = journal_position(host)
        restart(host, spec)
        serving = next((r for r in before.releases if r.id == was), None)
        readiness = wait_ready(host, spec, profile_for(serving.profile if serving else None),
                               since_cursor_or_time=cursor, on_progress=_progress(spec, reporter))  # fmt: skip
    except SpecopsError as error:
        return stays_dark(spec, f"starting it again failed: {error.message}")
    if not readiness.ok:
        return stays_dark(spec, f"{was}, started again, is not ready: {readiness.reason}")
    reporter.event(Event(spec.name, "restore", f"{was} serves again (ready in {readiness.seconds:.0f} s)"))
    return Restoration(was, None)


def _progress(spec: HostSpec, reporter: Reporter) -> ProgressCallback:
    def progress(phase: str, line: str) -> None:
        reporter.event(Event(spec.name, "readiness", line, level="progress", data={"phase": phase}))

    return progress
