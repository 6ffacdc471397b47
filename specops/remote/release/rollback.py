"""Host side of rollback (the guard's ops, which use it, are in guard.py and watch.py).

Part of the host-side script (see release_remote.py): stdlib only, Python 3.8+, run by the host's own
interpreter. One op:

  rollback SERVICE_DIR UNIT TARGET_ID REASON [FLAGS]
      point `current` at TARGET_ID (or, when empty, the newest verified release that is neither current nor
      marked bad; a bad TARGET_ID only with the flag `force`), mark the release it leaves bad (marks.py; not
      with the flag `keep-unmarked`: the deploy that failed changed the configuration, not the build), put back
      the configuration recorded with the target (relconfig.py: its unit text and env file), daemon-reload,
      enable it, reset-failed (so a deliberate restart never counts against StartLimitBurst=), restart the
      unit, append to audit.jsonl. FLAGS: comma-separated.
"""

from __future__ import annotations

import json
import os
from typing import Any

from specops.remote.release.catalog import op_list
from specops.remote.release.hostdata import (
    AUDIT_SCHEMA,
    SCHEMA_KEY,
    Refused,
    append_line,
    checked_release_id,
    utc_text,
)
from specops.remote.release.marks import mark_left_release
from specops.remote.release.relconfig import restore_config
from specops.remote.release.script import (
    current_id,
    op_switch,
)


def rollback_target(service_dir: str, wanted: str, force: bool = False) -> str:
    """The release to go back to: the one asked for (it must be a rollback target; a bad one only with `force`)
    or the newest verified release that is neither current nor marked bad."""
    releases = op_list(service_dir)["releases"]
    usable = [r["id"] for r in releases if r["complete"] and r["verified"] and not r.get("error")]
    bad = {r["id"]: r["bad"] for r in releases if isinstance(r.get("bad"), dict)}
    current = current_id(service_dir)
    if wanted:
        if wanted not in usable:
            raise Refused("target", "release " + wanted + " is not a verified, complete release on this host")
        if wanted in bad and not force:
            why = str(bad[wanted].get("reason") or "no reason recorded")
            raise Refused("bad", "release " + wanted + " is marked bad (" + why + "): pass --force to roll back to it")
        return str(wanted)
    candidates = [release_id for release_id in usable if release_id != current and release_id not in bad]
    if not candidates:
        raise Refused(
            "no-target", "no verified release other than the current one (and not marked bad) to roll back to"
        )
    return str(candidates[-1])


def append_audit(service_dir: str, entry: dict[str, Any]) -> None:
    line = (json.dumps({SCHEMA_KEY: AUDIT_SCHEMA, **entry}, sort_keys=True) + "\n").encode("utf-8")
    append_line(os.path.join(service_dir, "audit.jsonl"), line)


def op_rollback(service_dir: str, unit: str, target: str, reason: str, flags: str = "") -> dict[str, Any]:
    import socket  # here, not at the top: every `list` and `receive` would pay for these imports
    import subprocess

    given = set(flags.split(","))
    release_id = rollback_target(service_dir, checked_release_id(target, empty_ok=True), "force" in given)
    switched = op_switch(service_dir, release_id)
    who = "specops@" + socket.gethostname()
    marked = None
    if "keep-unmarked" not in given:  # kept if the restart fails
        marked = mark_left_release(service_dir, switched["previous"], release_id, reason, who)
    config = restore_config(service_dir, release_id, unit)
    unit_changed = config["unit_restored"]
    subprocess.run(["systemctl", "daemon-reload"], check=True, timeout=120)
    subprocess.run(["systemctl", "enable", unit], check=False, timeout=120)  # a reboot starts what it restores
    # A deliberate restart: forget the start-rate counter first, so rollbacks never end in start-limit-hit.
    subprocess.run(["systemctl", "reset-failed", unit], check=False, timeout=120)  # not loaded yet: exits 1
    subprocess.run(["systemctl", "restart", unit], check=True, timeout=600)
    append_audit(
        service_dir,
        {"when": utc_text(), "who": who, "action": "rollback", "from": switched["previous"],
         "to": release_id, "outcome": "restarted", "message": reason, "unit_restored": unit_changed,
         "env": config["env"], "marked_bad": marked},
    )  # fmt: skip
    return {
        "previous": switched["previous"],
        "current": release_id,
        "unit_restored": unit_changed,
        "env": config["env"],
        "marked_bad": marked,
    }
