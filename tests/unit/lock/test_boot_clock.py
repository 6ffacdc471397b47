"""Lock staleness by the host's boot clock: a wall clock stepped back (NTP, a wrong RTC) neither freezes a dead
holder's age at 0 nor hides it, in the lock script (`specops lock status`, acquire) and in the guard's twin."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

from specops.commands.lock import BEAT_FILE
from specops.host.local import LocalHost
from specops.ops.lock import LockHolder, acquire, status
from specops.remote.release import hostlock

HOUR = 3600


def _dead_holder_after_a_clock_step(local: LocalHost, root: str, beat_age_s: int) -> None:
    """A holder killed `beat_age_s` seconds ago (boot clock), whose files' mtimes lie an hour in the future: the
    wall clock was an hour ahead when it beat, then stepped back."""
    other = replace(LockHolder.current("specops deploy llm-two"), user="alice", machine="ci-runner-7", pid=4242)
    crashed = acquire(local, other, root=root)
    crashed._stop.set()  # what kill -9 does to the heartbeat
    beat = Path(root, BEAT_FILE)
    boot, up = beat.read_text().split()
    beat.write_text(f"{boot} {int(up) - beat_age_s}\n")
    ahead = time.time() + HOUR
    os.utime(Path(root, "holder.json"), (ahead, ahead))


def test_status_says_the_real_age_when_the_wall_clock_stepped_back(local: LocalHost, root: str) -> None:
    _dead_holder_after_a_clock_step(local, root, 300)
    info = status(local, root=root)
    assert info is not None and info.heartbeat_age_s is not None
    assert info.heartbeat_age_s >= 300 and info.stale  # by the wall clock: "0 s ago", never stale


def test_acquire_takes_over_a_lock_dead_by_the_boot_clock(local: LocalHost, root: str) -> None:
    _dead_holder_after_a_clock_step(local, root, 300)
    with acquire(local, LockHolder.current("rescuer"), stale_after_s=90, root=root) as lock:
        assert lock.took_over is not None and lock.took_over.holder is not None
        assert lock.took_over.holder.command == "specops deploy llm-two"


def test_a_beating_holder_stays_alive_whatever_the_wall_clock_says(local: LocalHost, root: str) -> None:
    with acquire(local, LockHolder.current("deploy"), root=root):
        long_ago = time.time() - 10 * HOUR  # the wall clock stepped forward: mtime looks ten hours old
        os.utime(Path(root, "holder.json"), (long_ago, long_ago))
        info = status(local, root=root)
        assert info is not None and not info.stale


def test_the_guards_twin_measures_the_same_way(local: LocalHost, root: str) -> None:
    assert hostlock.BEAT_FILE == BEAT_FILE  # both ends read the file the other writes
    _dead_holder_after_a_clock_step(local, root, 300)
    age = hostlock.heartbeat_age(root)
    assert age is not None and age >= 300
    assert not hostlock.lock_is_alive(root, 90)
    token = hostlock.take_lock(root + "-guard", "guard")  # a lock the guard writes carries the boot-clock beat
    assert (
        token is not None
        and Path(root + "-guard", BEAT_FILE).read_text().split()[0] == Path(root, BEAT_FILE).read_text().split()[0]
    )
    assert hostlock.lock_is_alive(root + "-guard", 90)
