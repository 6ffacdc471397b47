"""After a rollback failed past the stop of the serving engine: put back what was serving, or say that nothing is.

A rollback drains and stops the engine before the host-side switch. When anything after that stop fails (the
host refused the target after all, the GPUs stayed busy, a host command failed), the host would otherwise be
left dark without a word in the text output. So: when `current` still names the release that was serving, its
unit is started again and its readiness awaited; when that cannot be done (or does not come up), the result
says loudly that nothing serves and how to start it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specops.commands.guard import GUARD_INTERVAL_S
from specops.commands.release import Listing
from specops.config.inventory import HostSpec
from specops.engine.readiness import ProgressCallback, journal_position, wait_ready
from specops.errors import SpecopsError
from specops.events import Event, Reporter
from specops.host.base import Host
from specops.ops import interrupts
from specops.ops.engine_stop import Confirm, no_lock, unit_running
from specops.ops.lock import LockLost
from specops.ops.release import read_listing
from specops.ops.release_changes import restore_config
from specops.ops.unit import restart

if TYPE_CHECKING:
    from specops.deploy.rollback import ProfileFor  # rollback.py calls this module


@dataclass(frozen=True)
class Restoration:
    """`restored`: the release that serves again (None: nothing was restored); `dark`: the loud line saying
    that nothing serves and how to start it (None when something serves)."""

    restored: str | None
    dark: str | None
    line: str = ""  # after an interruption: what serves now, or who puts a verified release back
    unverified: str | None = None  # after an interruption: the unverified release read as `current`

    def said(self, spec: HostSpec) -> str:
        """One line naming what serves on the host (the interruption's message and audit line)."""
        if self.line:
            return self.line
        return self.dark or f"{spec.name}: {self.restored} serves (verified)"


def start_hint(spec: HostSpec) -> str:
    """How an operator starts the engine again by hand."""
    return f"start it with `specops restart {spec.name}`, or on the host `systemctl start {spec.unit_name}`"


def stays_dark(spec: HostSpec, why: str, action: str = "rollback") -> Restoration:
    """Nothing serves and specops will not start it (the GPUs are busy, or the host is unreadable)."""
    say = f"NOTHING SERVES on {spec.name}: {spec.unit_name} was stopped by the {action} and {why}; {start_hint(spec)}"
    return Restoration(None, say)


def restore_serving(host: Host, spec: HostSpec, profile_for: ProfileFor, before: Listing,
                    reporter: Reporter, confirm: Confirm = no_lock) -> Restoration:  # fmt: skip
    """Start the unit again when `current` still names what served before the rollback, and wait for it to be
    ready; every failure on the way becomes the loud line instead of an error (the rollback already failed). A
    lock found lost (`confirm`) starts nothing: whoever holds it now changes the host."""
    was = before.current
    if was is None:
        return stays_dark(spec, "no release is current")
    try:
        now = read_listing(host, spec).current
        if now != was:
            return stays_dark(spec, f"current now names {now}, which did not start")
        confirm(f"starting {spec.unit_name} again")
        reporter.event(Event(spec.name, "restore", f"starting {spec.unit_name} again: {was} was serving before"))
        cursor = journal_position(host)
        restart(host, spec)
        return _await_ready(host, spec, profile_for, reporter, before, was, cursor, "rollback", "serves again")
    except LockLost as lost:
        return Restoration(None, None, f"{lost.message}; `specops status {spec.name}` shows what serves")
    except SpecopsError as error:
        return stays_dark(spec, f"starting it again failed: {error.message}")


def _progress(spec: HostSpec, reporter: Reporter) -> ProgressCallback:
    def progress(phase: str, line: str) -> None:
        reporter.event(Event(spec.name, "readiness", line, level="progress", data={"phase": phase}))

    return progress


def serve_after_interruption(host: Host, spec: HostSpec, profile_for: ProfileFor, reporter: Reporter,
                             confirm: Confirm, *, stopped: bool, action: str, guarded: bool = True,
                             ) -> Restoration:  # fmt: skip
    """A deploy, rollback or restart interrupted (SIGINT, SIGTERM, SIGHUP) under its lock: leave the host serving a
    verified release before the lock is released. `stopped`: the engine's stop may have been asked for.

    `current` verified (what served, or a rollback's target): its own unit and env file are put back (a deploy
    interrupted after writing its new unit), its engine is started again unless it runs, and its readiness
    awaited. `current` not verified (a deploy's new release): the rollback guard, armed before the switch,
    puts the last verified one back once the lock is released (`guarded`; with --no-rollback none is armed, and
    the line says so). A lock found lost changes nothing. A second signal
    during this does not cut it short (interrupts.shielded)."""
    reporter = _Heedless(reporter)
    with interrupts.shielded():
        try:
            confirm("putting back what served")
            listing = read_listing(host, spec)
            current = next((r for r in listing.releases if r.id == listing.current), None)
            if current is None or not current.verified:
                return Restoration(None, None, _guard_line(spec, listing.current, guarded), listing.current)
            if not stopped:  # its unit file may be a deploy's new one by now: the running release's back in place
                restore_config(host, spec)
                return _untouched(host, spec, current.id, action)
            return _start_current(host, spec, profile_for, reporter, listing, current.id, action)
        except LockLost as lost:
            return Restoration(None, None, f"{lost.message}; `specops status {spec.name}` shows what serves")
        except SpecopsError as error:
            return stays_dark(spec, f"putting it back after the interruption failed: {error.message}", action)


@dataclass(frozen=True)
class _Heedless:
    """A reporter whose failures do not stop the restore: after SIGHUP the terminal may be gone (EIO)."""

    inner: Reporter

    def event(self, event: Event) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.inner.event(event)


def _untouched(host: Host, spec: HostSpec, current: str, action: str) -> Restoration:
    """Interrupted before the stop: what ran still runs; an engine that was not running was not started."""
    if unit_running(host, spec):
        return Restoration(
            current, None, f"{spec.name}: {current} serves (verified) as before: its engine was not stopped"
        )
    return Restoration(None, f"NOTHING SERVES on {spec.name}: {spec.unit_name} was not running before the {action} "
                             f"and was not started; {start_hint(spec)}")  # fmt: skip


def _guard_line(spec: HostSpec, current: str | None, guarded: bool) -> str:
    if not guarded:  # --no-rollback: nothing puts a verified release back by itself
        return (f"NOTHING VERIFIED SERVES on {spec.name}: {current or 'no release'} is not verified and no rollback "
                f"guard is armed; `specops rollback {spec.name}` puts the last verified release back")  # fmt: skip
    return (f"{spec.name}: {current or 'no release'} is not verified: the rollback guard puts the last verified "
            f"release back (it looks every {GUARD_INTERVAL_S} s once the lock is released)")  # fmt: skip


def _start_current(host: Host, spec: HostSpec, profile_for: ProfileFor, reporter: Reporter, listing: Listing,
                   current: str, action: str) -> Restoration:  # fmt: skip
    """Start `current` again unless its engine still runs (interrupted before the stop took), then await readiness."""
    cursor = journal_position(host)
    if not unit_running(host, spec):
        reporter.event(Event(spec.name, "restore", f"starting {spec.unit_name} again: {current} is current"))
        restart(host, spec)
    return _await_ready(host, spec, profile_for, reporter, listing, current, cursor, action, "serves")


def _await_ready(host: Host, spec: HostSpec, profile_for: ProfileFor, reporter: Reporter, listing: Listing,
                 release_id: str, cursor: str, action: str, serves: str) -> Restoration:  # fmt: skip
    """After the unit was started (again): wait for `release_id`'s engine to be ready, under its own profile;
    not ready is the loud line, ready is said as `RELEASE <serves> (ready in N s)`."""
    release = next((r for r in listing.releases if r.id == release_id), None)
    readiness = wait_ready(host, spec, profile_for(release.profile if release else None),
                           since_cursor_or_time=cursor, on_progress=_progress(spec, reporter))  # fmt: skip
    if not readiness.ok:
        return stays_dark(spec, f"{release_id}, started again, is not ready: {readiness.reason}", action)
    reporter.event(Event(spec.name, "restore", f"{release_id} {serves} (ready in {readiness.seconds:.0f} s)"))
    return Restoration(release_id, None)
