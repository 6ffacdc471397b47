"""The guard's watch: after a deploy's gates say "verified", keep proving the engine for a while and roll back
to the release that served before the deploy (the plan's rollback target) when it degrades.

Why: "verified" is a moment, not a state. Servers that pass their health check and hang minutes later are
reported; a guard disarmed at "verified" would leave them serving. The deploy does not wait for the window:
its last step starts this op as a transient systemd service (specops/ops/guard.py start_watch), and it runs
from the guard file (.specops-guard.py), never from the argv script. Stdlib only, Python 3.8+.

  watch SERVICE_DIR UNIT RELEASE WINDOW_S URL LOCK_DIR TIMEOUT_S FAILURES INTERVAL_S ROLLBACK_TO

Every INTERVAL_S it GETs URL (the engine's /health_generate, which answers 200 only after a real 1-token
generation). FAILURES failed probes in a row (an error status, a refused connection, or no answer within
TIMEOUT_S: a hung server accepts the connection and never answers) roll back, under the host's deploy lock
taken as any specops takes it, to ROLLBACK_TO: the release the deploy's plan chose (the one that served before
it), never one picked by age. The release left is marked bad with the reason and the audit log says why. When
ROLLBACK_TO is empty, pruned or marked bad since, nothing is rolled back: the state says "no-rollback" and
why. When the unit's journal since the watch began names an environment fault (hostblame.py: FFmpeg gone, no
driver), the host is at fault, not the release: nothing is marked and nothing rolled back ("no-rollback").
It ends early, doing nothing, when `current` is no longer RELEASE or another specops holds the lock (a deploy
or a rollback owns the host now). Its state and deadline, which `specops status` shows, are kept in
.specops-watch.json (script.py WATCH_FILE).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from specops.remote.release.boot import SHUTDOWN_REASON, process_mark, shutting_down
from specops.remote.release.hostblame import engine_gpus, host_fault_since
from specops.remote.release.hostdata import SCHEMA_KEY, WATCH_SCHEMA, Refused, checked_release_id, utc_text
from specops.remote.release.hostlock import HeldLock, lock_token, take_lock
from specops.remote.release.notify import notify_from_host
from specops.remote.release.rollback import append_audit, op_rollback, rollback_target
from specops.remote.release.script import WATCH_FILE, WATCH_STOP_FILE, current_id, write_json_atomic
from specops.remote.release.session import OPS

UNIT_PROBE = "unit:"  # a worker rank of a multi-node engine serves no HTTP: its watch asks systemd instead


def probe(url: str, timeout: float) -> str | None:
    """None when URL answers 200, else what went wrong, in words. Never through a proxy: the engine is local.
    (`unit:NAME`, a worker rank's, is Watch.unit_check.)"""
    import socket
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as response:
            response.read()
            return None if response.status == 200 else "answered " + str(response.status)
    except urllib.error.HTTPError as error:
        return "answered " + str(error.code)
    except urllib.error.URLError as error:
        if isinstance(error.reason, socket.timeout):
            return "did not answer within " + format(timeout, "g") + " s"
        return "could not be reached (" + str(error.reason) + ")"
    except socket.timeout:  # noqa: UP041 (3.8: its own class, an OSError; TimeoutError's alias from 3.10)
        return "did not answer within " + format(timeout, "g") + " s"
    except (OSError, ValueError) as error:  # a reset connection, a malformed answer
        return "failed (" + type(error).__name__ + ": " + str(error) + ")"


NOTIFIED_STATES = ("rolled-back", "no-rollback", "rollback-failed")  # what the watch posts to [notify]'s webhook


class Watch:
    """One window: its record (what .specops-watch.json holds), the probe settings, and the loop."""

    def __init__(self, service_dir: str, unit: str, release: str, window_s: str, url: str, lock_dir: str,
                 timeout_s: str, failures: str, interval_s: str, rollback_to: str = "",
                 gpus: str = "") -> None:  # fmt: skip
        self.service_dir, self.unit, self.release, self.url, self.lock_dir = service_dir, unit, release, url, lock_dir
        self.rollback_to = checked_release_id(rollback_to, empty_ok=True)
        self.gpus = engine_gpus(gpus)  # the engine's GPUs: only their faults blame the host (hostblame.py)
        self.timeout, self.limit, self.interval = float(timeout_s), int(failures), float(interval_s)
        self.started = time.time()
        self.deadline = self.started + float(window_s)
        self.record: dict[str, Any] = {
            SCHEMA_KEY: WATCH_SCHEMA, "release": release, "state": "watching", "started_at": utc_text(self.started),
            "deadline": utc_text(self.deadline), "deadline_epoch": int(self.deadline), "window_s": int(float(window_s)),
            "failures": 0, "probes": 0, "reason": "", "rollback_to": self.rollback_to or None,
        }  # fmt: skip
        self.record.update(process_mark())  # `list` tells a record whose watch a reboot ended (boot.py)

    def save(self, **changes: Any) -> None:
        self.record.update(changes)
        write_json_atomic(os.path.join(self.service_dir, WATCH_FILE), self.record)

    def roll_back(self, reason: str) -> tuple[str, str] | None:
        """Roll back under the deploy lock: (state, reason), or None when the lock is busy (try again later).
        The record keeps where to (`rolled_back_to`): `status` names the guard's rollback while that serves."""
        import subprocess

        command = "specops guard: rolling back " + self.release + " (it failed its watch)"
        token = take_lock(self.lock_dir, command)
        if token is None:
            return None
        with HeldLock(self.lock_dir, token):
            if current_id(self.service_dir) != self.release:
                return "ended", "current changed before the guard could roll back: nothing left to watch"
            if not self.rollback_to:
                return "no-rollback", reason + "; no rollback target was planned: left " + self.release + " serving"
            try:
                rollback_target(self.service_dir, self.rollback_to)  # refused before anything changes
            except Refused as error:
                return "no-rollback", (reason + "; the planned rollback target is no longer usable (" + str(error)
                                       + "): left " + self.release + " serving, NOT rolled back")  # fmt: skip
            try:
                done = op_rollback(self.service_dir, self.unit, self.rollback_to, reason)
                self.record["rolled_back_to"] = done["current"]
            except (Refused, OSError, ValueError, subprocess.SubprocessError) as error:
                return "rollback-failed", reason + "; the rollback failed: " + str(error)
            return "rolled-back", reason

    def check(self) -> str | None:
        return self.unit_check() if self.url.startswith(UNIT_PROBE) else probe(self.url, self.timeout)

    def unit_check(self) -> str | None:
        """A worker rank (`unit:NAME`): None while the engine verified runs (the unit active, in the run it was
        when the watch began); a worker that died, even one systemd started again, is a failed engine."""
        import subprocess

        argv = ["systemctl", "show", "-p", "ActiveState", "-p", "InvocationID", self.url[len(UNIT_PROBE) :]]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout)
        except (OSError, subprocess.SubprocessError) as error:
            return "could not be read (" + type(error).__name__ + ")"
        shown = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
        run = shown.get("InvocationID", "")
        self.first_run = getattr(self, "first_run", run)
        if run != self.first_run:
            return "died (the unit was started again since the watch began)"
        state = shown.get("ActiveState", "unknown")
        return None if state == "active" else "is " + state

    def what(self) -> str:
        return "the worker rank's engine" if self.url.startswith(UNIT_PROBE) else "/health_generate"

    def run(self) -> tuple[str, str]:
        starter = lock_token(self.lock_dir)  # the deploy that started the watch: it lets go in a moment
        misses, last = 0, ""
        while time.time() < self.deadline:
            if current_id(self.service_dir) != self.release:
                return "ended", "current is no longer " + self.release + ": nothing left to watch"
            holder = lock_token(self.lock_dir)
            if holder is not None and holder != starter:
                return "ended", "another specops operation took the host's lock"
            failed = self.check()
            misses, last = (misses + 1, failed) if failed else (0, last)
            self.save(failures=misses, probes=self.record["probes"] + 1, last_failure=last)
            if failed and misses >= self.limit:
                into = int(time.time() - self.started)
                reason = ("guard: release " + self.release + " failed its watch " + str(into) + " s after verified: "
                          + self.what() + " " + failed + " (" + str(misses) + " times in a row)")  # fmt: skip
                host_fault = host_fault_since(self.unit, self.started, self.gpus)
                if host_fault is not None:  # hostblame.py: no mark, no rollback into the same fault
                    return "no-rollback", (reason + "; the host, not the release: " + host_fault + "; nothing "
                                           "marked bad, NOT rolled back: no release is known to work on this "
                                           "host as it is now; fix the host, then restart " + self.unit)  # fmt: skip
                done = self.roll_back(reason)
                if done is not None:
                    return done
            time.sleep(max(0.0, min(self.interval, self.deadline - time.time())))
        return "passed", "healthy for " + str(self.record["window_s"]) + " s after verified: the guard stopped watching"


def op_watch(service_dir: str, unit: str, release: str, *settings: str) -> dict[str, Any]:
    import signal

    watch = Watch(service_dir, unit, release, *settings)
    stop_file = os.path.join(service_dir, WATCH_STOP_FILE)
    _remove(stop_file)  # an earlier disarm's, with no watch to stop then: not this watch's
    watch.save()
    # `systemctl stop` (the next deploy's disarm) ends the watch through the `finally` that records it
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    state, reason = "stopped", "stopped before its deadline (a later deploy or rollback replaces the watch)"
    try:
        state, reason = watch.run()
    finally:
        signal.signal(signal.SIGTERM, previous)
        if state == "stopped":
            state, reason = _why_stopped(stop_file, str(watch.record["deadline"]))
        watch.save(state=state, reason=reason)
        if state not in ("rolled-back", "stopped"):  # a rollback audits itself (this reason); a stop, its deploy
            append_audit(service_dir, {"when": utc_text(time.time()), "who": "specops guard", "action": "watch",
                                       "to": release, "outcome": state, "message": reason})  # fmt: skip
        if state in NOTIFIED_STATES:  # after the record: a slow webhook never delays what `status` shows
            serving = watch.record.get("rolled_back_to") or current_id(service_dir)
            notify_from_host(service_dir, "watch." + state, release, serving, state, reason)
    return {"state": state, "reason": reason}


def _why_stopped(stop_file: str, deadline: str) -> tuple[str, str]:
    """A stop a deploy's disarm announced (its stop file) replaced the watch; any other stop cut it short. Asking
    systemd whether it is shutting down alone is not enough: late in a shutdown it may not answer."""
    if _remove(stop_file):
        return "stopped", "stopped before its deadline (a later deploy or rollback replaces the watch)"
    if shutting_down():
        return "cut-short", SHUTDOWN_REASON + " (" + deadline + ")"
    return "cut-short", ("cut short by a stop no deploy asked for (a shutdown, a reboot or `systemctl stop`): the "
                         "guard stopped watching it before its deadline (" + deadline + ")")  # fmt: skip


def _remove(path: str) -> bool:
    """Remove `path`; whether it was there."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


OPS["watch"] = op_watch
