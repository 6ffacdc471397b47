"""The rollback guard: a systemd timer on the host that rolls back if the deploying specops dies.

Armed right before `current` is switched, disarmed when the deploy ends (verified, rolled back, or given up
with --no-rollback). Every 15 s it runs the host-side `guard` op: while the deploy's lock heartbeat is
fresh it does nothing; once the heartbeat is stale (kill -9, lost laptop, dropped network) and `current` is
not verified, it puts the last verified release back. No anchor tool has this; Kamal and Capistrano leave
the host wherever the killed deploy stopped.

The guard's script on the host starts with a `# specops rollback guard, schema N` line. A guard armed by a
newer specops is left alone (HostDataTooNew, exit 5): this specops cannot know what that guard expects.
"""

from __future__ import annotations

import re

from specops.commands.guard import GUARD_INTERVAL_S, arm_argv, guard_script_path, guard_unit, schema_argv
from specops.config.inventory import HostSpec
from specops.host.base import Host
from specops.ops.hostdata import GUARD_SCHEMA, SCHEMA_KEY, check_schema
from specops.remote.bundle import release_script

__all__ = ["GUARD_INTERVAL_S", "arm", "disarm", "guard_script_path", "guard_unit"]
TIMEOUT_S = 60.0
HEADER = "# specops rollback guard, schema {}\n"
_HEADER_LINE = re.compile(r"# specops rollback guard, schema (\d+)$")


def arm(host: Host, spec: HostSpec, lock_dir: str, stale_after_s: float) -> None:
    """Install the script and start the timer (a leftover guard of a crashed deploy is replaced, unless a newer
    specops armed it)."""
    armed_schema(host, spec)
    disarm(host, spec)
    host.put(guard_script().encode("utf-8"), guard_script_path(spec), mode=0o600)
    host.run(arm_argv(spec, lock_dir, stale_after_s), timeout=TIMEOUT_S)


def guard_script() -> str:
    """The release script headed by the guard's schema line (what `arm` writes to the host)."""
    return HEADER.format(GUARD_SCHEMA) + release_script()


def armed_schema(host: Host, spec: HostSpec) -> int | None:
    """The schema of the guard script on the host (0: one written before versions), None when there is none;
    HostDataTooNew when a newer specops wrote it."""
    path = guard_script_path(spec)
    result = host.run(schema_argv(spec), timeout=TIMEOUT_S, check=False)  # none: nothing to check
    if not result.ok:
        return None
    found = _HEADER_LINE.match(result.text.strip())
    return check_schema(host.name, {SCHEMA_KEY: int(found.group(1)) if found else 0}, path, GUARD_SCHEMA)


def disarm(host: Host, spec: HostSpec) -> None:
    """Stop the timer and forget failed runs; a no-op when no guard exists (systemctl then exits non-zero:
    "not loaded", which is why these two are not checked)."""
    unit = guard_unit(spec)
    host.run(["systemctl", "stop", f"{unit}.timer"], timeout=TIMEOUT_S, check=False)
    host.run(["systemctl", "reset-failed", f"{unit}.timer", f"{unit}.service"], timeout=TIMEOUT_S, check=False)
