"""Fingerprints kept on this machine, per host: what `doctor` saw each time, for `diff` and `diagnose` later.

Why local as well as in the manifests: a doctor run deploys nothing, so it has no manifest to write to, and a
host that is reinstalled loses its manifests; the newest KEEP per host are kept under
$XDG_STATE_HOME/specops/fingerprints/<host>.json (default ~/.local/state). A lost or unreadable file only costs
history, never a wrong answer: every fingerprint names when and where it was taken.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

from specops.diagnose.fingerprint import Fingerprint, read_fingerprint

KEEP = 20
SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def state_dir() -> Path:
    """$XDG_STATE_HOME/specops (a relative XDG path is ignored, per the spec), else ~/.local/state/specops."""
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "specops"


def _file(host: str) -> Path:
    return state_dir() / "fingerprints" / f"{SAFE_NAME.sub('_', host)}.json"


def recall(host: str) -> list[Fingerprint]:
    """This host's stored fingerprints, oldest first ([] when none or unreadable)."""
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(_file(host).read_text(encoding="utf-8"))
        found = [read_fingerprint(item) for item in data] if isinstance(data, list) else []
        return [fingerprint for fingerprint in found if fingerprint is not None]
    return []


def remember(host: str, fingerprint: Fingerprint) -> None:
    """Append (keeping the newest KEEP); best effort: a read-only home must not fail a doctor run."""
    kept = [*[item.to_json() for item in recall(host)][-(KEEP - 1) :], fingerprint.to_json()]
    path = _file(host)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(kept, sort_keys=True), encoding="utf-8")
        temporary.chmod(0o600)
        temporary.replace(path)
