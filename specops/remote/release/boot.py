"""Which boot and which process wrote a host record: a record that says "watching" outlives its watch when the
host reboots (the transient unit is gone, the file stays), so `list` checks the record against the live host.

Part of the host-side script: stdlib only, Python 3.8+. The watch (watch.py) writes `process_mark()` into its
record; `cut_short()` tells whether a record still saying "watching" describes a watch that no longer runs.
"""

from __future__ import annotations

import os
from typing import Any

BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"  # a new random id at every boot (containers get their own)


def boot_id() -> str:
    """This boot's id, "" when unreadable."""
    try:
        with open(BOOT_ID_FILE, encoding="ascii") as handle:
            return handle.read().strip()
    except (OSError, ValueError):
        return ""


def process_start(pid: int) -> str:
    """The start time of process `pid` in clock ticks since boot (/proc/PID/stat field 22), "" when it is gone:
    with the pid it names one process, whatever pid reuse happens later."""
    try:
        with open("/proc/" + str(pid) + "/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[-1].split()  # the name (field 2) may hold spaces and ")"
    except OSError:
        return ""
    return fields[19] if len(fields) > 19 else ""


def process_mark() -> dict[str, Any]:
    """What a record keeps about the process that writes it: the boot, the pid and the pid's start time."""
    pid = os.getpid()
    return {"boot_id": boot_id(), "pid": pid, "pid_start": process_start(pid)}


def shutting_down() -> bool:
    """Whether systemd is stopping the whole system (a reboot or a poweroff): a watch stopped now was cut short,
    not replaced by a later deploy."""
    import subprocess

    try:
        done = subprocess.run(["systemctl", "is-system-running"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.stdout.strip() == "stopping"


SHUTDOWN_REASON = "cut short by a shutdown or reboot: the guard stopped watching it before its deadline"


def cut_short(record: dict[str, Any]) -> str | None:
    """Why a record that says "watching" no longer has a watch behind it, or None (it runs, or a record written
    before these marks cannot tell)."""
    if record.get("state") != "watching" or not record.get("boot_id"):
        return None
    release, deadline = str(record.get("release")), str(record.get("deadline"))
    if record.get("boot_id") != boot_id():
        return ("cut short by a reboot: the guard stopped watching " + release + " before its deadline ("
                + deadline + "); it serves, verified, without the rest of its window")  # fmt: skip
    pid, started = record.get("pid"), record.get("pid_start")
    if isinstance(pid, int) and started and process_start(pid) != started:
        return ("cut short: the watch of " + release + " ended before its deadline (" + deadline + ") without "
                "recording why (its process was killed)")  # fmt: skip
    return None
