"""The deploy lock, taken on the host by the rollback guard and its watch (bundled first in the guard file).

Why: a guard that rolls back without the lock races the next deploy. An operator whose deploy was killed
runs it again; the new deploy takes the lock and writes its unit while the guard restores the old unit text,
or it arms a new guard while the old guard's rollback still runs ("Unit specops-guard-... was already
loaded"). Under the lock, the next deploy waits for the rollback (--lock-wait) or says who holds the host.

The lock is taken the way the lock script (specops/commands/lock.py) takes it: mkdir(2) under the flock of
`<root>.guard`, a holder.json any specops reads (default JSON separators: the script greps its token), a
stale holder (no heartbeat for STALE_AFTER_S by the host's boot clock: heartbeat_age) put away by renaming
first. Stdlib only, 3.8+.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from specops.remote.release.hostdata import HOLDER_SCHEMA, SCHEMA_KEY, utc_text

BEAT_FILE = "boot-beat"  # as specops/commands/lock.py names it: "<boot id> <seconds since boot>"
HEARTBEAT_S = 15.0  # the lock's heartbeat while the guard rolls back (others take a lock over after 90 s)


def boot_clock() -> tuple[str, int] | None:
    """(boot id, whole seconds since boot: CLOCK_BOOTTIME as /proc/uptime shows it, the lock script's clock);
    None where the kernel offers neither."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot, open("/proc/uptime") as up:
            return boot.read().strip(), int(up.read().split(".")[0])
    except (OSError, ValueError):
        return None


def write_beat(lock_dir: str) -> None:
    """The heartbeat by the boot clock, beside holder.json (the lock script reads it: commands/lock.py)."""
    clock = boot_clock()
    if clock is not None:
        path = os.path.join(lock_dir, BEAT_FILE)
        with open(path + ".tmp", "w", encoding="ascii") as handle:
            handle.write(clock[0] + " " + str(clock[1]) + "\n")
        os.replace(path + ".tmp", path)


def heartbeat_age(lock_dir: str) -> float | None:
    """Seconds since the lock's last heartbeat: by the boot clock when its beat is from this boot (a wall clock
    stepped back neither freezes nor hides it), else now minus holder.json's mtime (or the directory's)."""
    clock = boot_clock()
    try:
        with open(os.path.join(lock_dir, BEAT_FILE), encoding="ascii") as handle:
            boot, seconds = handle.read().split()
        if clock is not None and boot == clock[0]:
            return float(clock[1] - int(seconds))
    except (OSError, ValueError):
        pass
    for name in ("holder.json", ""):
        try:
            return time.time() - os.stat(os.path.join(lock_dir, name)).st_mtime
        except OSError:
            continue
    return None


def lock_is_alive(lock_dir: str, stale_after_s: float) -> bool:
    """The lock exists and its heartbeat is recent (heartbeat_age)."""
    age = heartbeat_age(lock_dir)
    return age is not None and age <= stale_after_s


def lock_token(lock_dir: str) -> str | None:
    """The token of whoever holds the deploy lock; None when it is free, "" when its holder is unreadable."""
    if not os.path.isdir(lock_dir):
        return None
    try:
        with open(os.path.join(lock_dir, "holder.json"), encoding="utf-8") as handle:
            return str(json.load(handle).get("token") or "")
    except (OSError, ValueError, AttributeError):
        return ""


def take_lock(lock_dir: str, command: str, stale_after_s: float = 0.0) -> str | None:
    """Take the deploy lock as `command` (what `specops lock status` shows); the token, or None when someone
    holds it. With `stale_after_s` > 0 a holder without a heartbeat for that long is taken over."""
    import fcntl
    import shutil

    os.makedirs(os.path.dirname(lock_dir), exist_ok=True)
    away = ""
    with open(lock_dir + ".guard", "a") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)  # released when the file closes
        try:
            os.mkdir(lock_dir)
        except FileExistsError:
            if stale_after_s <= 0 or lock_is_alive(lock_dir, stale_after_s):
                return None
            away = lock_dir + ".removed-guard-" + str(os.getpid())
            os.rename(lock_dir, away)  # others may mkdir at once: rename first, delete at leisure
            os.mkdir(lock_dir)
        token = write_holder(lock_dir, command)
    if away:
        shutil.rmtree(away, ignore_errors=True)
    return token


def write_holder(lock_dir: str, command: str) -> str:
    import secrets
    import socket

    token, now = secrets.token_hex(16), utc_text()
    holder: dict[str, Any] = {SCHEMA_KEY: HOLDER_SCHEMA, "user": "root", "machine": socket.gethostname(),
                              "pid": os.getpid(), "command": command, "started_at": now, "heartbeat_at": now,
                              "version": "guard", "token": token}  # fmt: skip
    path = os.path.join(lock_dir, "holder.json")
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(json.dumps(holder, sort_keys=True) + "\n")
    os.replace(path + ".tmp", path)
    write_beat(lock_dir)
    return token


def release_lock(lock_dir: str, token: str) -> None:
    """Remove the lock if it is still ours (a stale heartbeat may have let another specops take it over)."""
    import fcntl
    import shutil

    with open(lock_dir + ".guard", "a") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if lock_token(lock_dir) != token:
            return
        away = lock_dir + ".removed-" + token + "-" + str(os.getpid())
        os.rename(lock_dir, away)
    shutil.rmtree(away, ignore_errors=True)


def heartbeat(lock_dir: str, stop: threading.Event) -> None:
    while not stop.wait(HEARTBEAT_S):
        try:
            os.utime(os.path.join(lock_dir, "holder.json"))
            write_beat(lock_dir)
        except OSError:
            return


class HeldLock:
    """`with HeldLock(dir, token):` keeps the lock's heartbeat going, then releases it, whatever happens."""

    def __init__(self, lock_dir: str, token: str) -> None:
        self.lock_dir, self.token, self.stop = lock_dir, token, threading.Event()

    def __enter__(self) -> HeldLock:
        threading.Thread(target=heartbeat, args=(self.lock_dir, self.stop), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        release_lock(self.lock_dir, self.token)
