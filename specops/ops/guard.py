"""The rollback guard: a systemd timer on the host that rolls back if the deploying specops dies.

Armed right before `current` is switched, disarmed when the deploy ends (verified, rolled back, or given up
with --no-rollback). Every 15 s it runs the host-side `guard` op: while the deploy's lock heartbeat is
fresh it does nothing; once the heartbeat is stale (kill -9, lost laptop, dropped network) and `current` is
not verified, it puts back the release the deploy's plan chose (`rollback_to`, written to the guard's state
file when it is armed; never one picked by age on the host). No anchor tool has this; Kamal and Capistrano leave
the host wherever the killed deploy stopped.

The guard's script on the host starts with a `# specops rollback guard, schema N` line. A guard armed by a
newer specops is left alone (HostDataTooNew, exit 5): this specops cannot know what that guard expects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from specops import __version__
from specops.commands.guard import (
    ARM_FILES,
    GUARD_HEADER,
    GUARD_INTERVAL_S,
    TOO_NEW_MARK,
    WatchSettings,
    guard_script_path,
    guard_state_path,
    guard_unit,
)
from specops.commands.guard_record import GuardRecord, parse_guard_state
from specops.commands.hostdata import GUARD_SCHEMA, GUARD_STATE_SCHEMA, SCHEMA_KEY, check_schema
from specops.commands.planned import HostCommand
from specops.config.inventory import HostSpec
from specops.config.notify import active_notify
from specops.config.profile import Profile
from specops.host.base import Host, checked
from specops.ops.hostfiles import read_document
from specops.ops.planned import execute, run_all
from specops.remote.bundle import guard_source

__all__ = [
    "GUARD_INTERVAL_S",
    "arm",
    "armed_state",
    "disarm",
    "guard_script_path",
    "guard_state",
    "guard_unit",
    "start_watch",
    "watch_settings",
]
TIMEOUT_S = 60.0
HEADER = GUARD_HEADER + "{}\n"
_HEADER_LINE = re.compile(re.escape(GUARD_HEADER) + r"(\d+)$")


def arm(host: Host, commands: Sequence[HostCommand], release_id: str, rollback_to: str) -> None:
    """Install the script and the plan's rollback target, and start the timer (a leftover guard of a crashed
    deploy is replaced, unless a newer specops armed it: HostDataTooNew, and nothing on the host changes).
    `commands`: the plan's (deploy/step_commands.py guard_commands), one command doing all of it; the files go
    on its stdin (the notify file may hold the webhook's credential), the state as the plan shows it."""
    (command,) = commands
    result = execute(host, command, data=arm_stdin(host.name, release_id, rollback_to), check=False,
                     timeout=TIMEOUT_S)  # fmt: skip
    assert result is not None
    if not result.ok and result.text.startswith(TOO_NEW_MARK):
        _check_schema(host, guard_script_path_of(command), result.text[len(TOO_NEW_MARK) :])
    checked(result, host.name)


def arm_stdin(host_name: str, release_id: str, rollback_to: str) -> bytes:
    """The arming's stdin: a line with the three files' sizes, then the guard's script, its state (the line the
    plan shows) and the notify file."""
    files = (guard_script().encode("utf-8"), f"{state_line(release_id, rollback_to)}\n".encode(),
             host_notify_document(host_name))  # fmt: skip
    assert len(files) == ARM_FILES
    return " ".join(str(len(data)) for data in files).encode() + b"\n" + b"".join(files)


def state_line(release_id: str, rollback_to: str) -> str:
    """The guard's state file as written, one line (the plan shows it as it is: it holds no secret)."""
    return json.dumps(guard_state(release_id, rollback_to), sort_keys=True)


def notify_summary() -> str:
    """What the plan shows of the notify file: the webhook with its credentials masked, or that there is none."""
    notify = active_notify()
    if notify is None or notify.webhook is None:
        return "the notify settings: no webhook (the guard posts nothing)"
    return f"the notify settings: the guard posts its rollbacks to {notify.shown_url()}"


def host_notify_document(host_name: str) -> bytes:
    """The notify file's content (remote/release/notify.py reads it): the webhook revealed here only, into a file
    the host keeps 0600; `{}` without one, so that an earlier deploy's webhook stops being used."""
    notify = active_notify()
    if notify is None or notify.webhook is None:
        return b"{}\n"
    document = {"host": host_name, "webhook": notify.revealed_url(), "timeout_s": notify.timeout_s,
                "retries": notify.retries, "specops_version": __version__}  # fmt: skip
    return (json.dumps(document, sort_keys=True) + "\n").encode("utf-8")


def guard_state(release_id: str, rollback_to: str) -> dict[str, object]:
    """What `arm` writes to the guard's state file: after a dead deploy of `release_id` the guard rolls back to
    `rollback_to`, the release the plan chose, and to no other (remote/release/guard.py)."""
    return {SCHEMA_KEY: GUARD_STATE_SCHEMA, "state": "armed", "release": release_id, "rollback_to": rollback_to}


def armed_state(host: Host, spec: HostSpec) -> GuardRecord | None:
    """The guard's state on the host while one is armed (its planned target, or what it did after a dead
    deploy: `rolled-back`, `no-rollback` with the reason); None when none is armed or it is unreadable."""
    return read_document(host, guard_state_path(spec), parse_guard_state, TIMEOUT_S)  # missing: no guard armed


def guard_script() -> str:
    """The release script and the guard's own ops (guard, watch), headed by the guard's schema line (what `arm`
    writes to the host)."""
    return HEADER.format(GUARD_SCHEMA) + guard_source()


def _check_schema(host: Host, path: str, first_line: str) -> int:
    """The schema of the guard script on the host (0: one written before versions); HostDataTooNew when a newer
    specops wrote it. `first_line`: the script's first line, as the arming read it."""
    found = _HEADER_LINE.match(first_line.strip())
    return check_schema(host.name, {SCHEMA_KEY: int(found.group(1)) if found else 0}, path, GUARD_SCHEMA)


def guard_script_path_of(command: HostCommand) -> str:
    """The guard script's path as the arming's command names it (its first argument)."""
    return command.argv[4]


def disarm(host: Host, commands: Sequence[HostCommand]) -> None:
    """Stop the timer and a running watch, and forget failed runs (`commands`: the plan's, step_commands.py
    disarm_commands); a no-op when no guard exists (systemctl then exits non-zero: "not loaded", which is why
    these are not checked)."""
    run_all(host, commands, check=False, timeout=TIMEOUT_S)


UNIT_PROBE = "unit:"  # remote/release/watch.py: a worker rank's watch asks systemd, not HTTP


def watch_settings(spec: HostSpec, profile: Profile) -> WatchSettings | None:
    """The profile's watch after "verified" for this host; None when readiness.watch_s is 0 (no watch)."""
    from specops.engine.client import engine_address  # httpx itself is imported only by a client

    readiness = profile.readiness
    if readiness.watch_s == 0:
        return None
    address = engine_address(spec)
    shown = f"[{address}]" if ":" in address else address
    url = f"http://{shown}:{spec.port}/health_generate"
    return WatchSettings(readiness.watch_s, readiness.watch_timeout_s, readiness.watch_failures, url)


def start_watch(host: Host, command: HostCommand) -> None:
    """Hand the verified release to the guard's watch (remote/release/watch.py) on the host, and return: the
    window runs there, without this process, and a failed watch rolls back to the plan's target. `command`: the
    plan's (step_commands.py watch_commands): the disarm (any earlier watch stopped), then the watch started."""
    execute(host, command, timeout=TIMEOUT_S)
