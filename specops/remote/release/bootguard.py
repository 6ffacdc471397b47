"""The boot op, run at every boot by `specops-boot-<service>.service` (commands/boot.py) from the guard file.

Part of the guard file (GUARD_MODULES in bundle.py): stdlib only, Python 3.8+. One op:

  boot SERVICE_DIR ARM_ARGV...
      finish what the reboot interrupted. A watch record still saying "watching" from an earlier boot is
      written as "cut-short" (and audited). When `current` was switched by a deploy that never recorded an
      outcome (its manifest not written since the switch: the host went down between the switch and the
      gates),
      start ARM_ARGV, the guard's timer exactly as that deploy armed it: with the deploy's lock gone (it
      lives under /run), the guard rolls back at its first run. A verified `current` needs nothing: the
      enabled engine unit starts it. A release a deploy recorded as failed ("verified": false, kept with
      --no-rollback) is left as the operator left it. Any other `current` gets its recorded configuration
      back first (relconfig.py: unit and env file), before its engine starts (the boot unit is ordered before
      the engine's): a host that went down between a deploy's unit write and its switch never boots a verified
      release under a configuration it was not verified with.
"""

from __future__ import annotations

import json
import os
from typing import Any

from specops.remote.release.boot import cut_short
from specops.remote.release.hostdata import utc_text
from specops.remote.release.relconfig import op_restore_config
from specops.remote.release.rollback import append_audit
from specops.remote.release.script import MANIFEST, WATCH_FILE, current_id, read_manifest, write_json_atomic
from specops.remote.release.session import OPS


def settle_watch(service_dir: str) -> str | None:
    """Write a watch the reboot cut short as such (its record and the audit log); its reason, or None."""
    path = os.path.join(service_dir, WATCH_FILE)
    try:
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
        why = cut_short(record) if isinstance(record, dict) else None
    except (OSError, ValueError):
        return None
    if why is None:
        return None
    record.update(state="cut-short", reason=why)
    write_json_atomic(path, record)
    append_audit(service_dir, {"when": utc_text(), "who": "specops boot",
                               "action": "watch", "to": record.get("release"), "outcome": "cut-short",
                               "message": why})  # fmt: skip
    return why


def unfinished_switch(service_dir: str) -> str | None:
    """`current` when the deploy that switched it never recorded an outcome: not verified, and its manifest
    not written since the switch (a deploy records "verified" true or false in it after its gates)."""
    current = current_id(service_dir)
    if current is None:
        return None
    folder = os.path.join(service_dir, "releases", current)
    if read_manifest(folder).get("verified") is True:
        return None
    switched = os.lstat(os.path.join(service_dir, "current")).st_mtime_ns
    return current if os.stat(os.path.join(folder, MANIFEST)).st_mtime_ns <= switched else None


def armed_unit(arm: tuple[str, ...]) -> str:
    """The engine's unit in the guard's arming command (`... guard SERVICE_DIR UNIT LOCK_DIR STALE`), "" if none."""
    words = list(arm)
    return words[words.index("guard") + 2] if "guard" in words[:-2] else ""


def op_boot(service_dir: str, *arm: str) -> dict[str, Any]:
    import subprocess

    watch = settle_watch(service_dir)
    current = unfinished_switch(service_dir)
    if current is None:
        config = op_restore_config(service_dir, armed_unit(arm)) if armed_unit(arm) else {}
        return {"action": "none", "current": current_id(service_dir), "watch": watch, "config": config}
    subprocess.run(list(arm), check=True, timeout=120)
    return {"action": "armed", "current": current, "why": "its deploy never verified it", "watch": watch}


OPS["boot"] = op_boot
