"""The release script's one-shot changes on a host: switch `current`, prune, update a manifest, roll back, put
the current release's unit and env file back. Each is one run of the host script (specops/ops/release.py
`run_script`), its argv built by specops/commands/release.py; a deploy runs its plan's own commands instead
(specops/ops/planned.py), these serve the commands that print no plan."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from specops.commands import release as cmd
from specops.commands.release import SCRIPT_TIMEOUT_S, ReleaseInfo
from specops.config.inventory import HostSpec
from specops.host.base import Host
from specops.ops.release import run_script

ROLLBACK_TIMEOUT_S = SCRIPT_TIMEOUT_S + 600  # the host-side rollback restarts the engine


def switch_current(host: Host, spec: HostSpec, release_id: str) -> str | None:
    """Point `current` at the release by one rename (never a moment without `current`); returns the previous id."""
    reply = run_script(host, spec, cmd.switch_argv(spec, release_id))
    previous = reply.get("previous")
    return previous if isinstance(previous, str) else None


def prune(host: Host, spec: HostSpec, keep: int, protect: set[str], stale_after_s: float = 0) -> list[str]:
    """Remove old releases, and unfinished leftovers untouched for `stale_after_s`; never current, the newest
    verified or `protect`. Returns the removed ids."""
    reply = run_script(host, spec, cmd.prune_argv(spec, keep, protect, stale_after_s))
    return [str(release_id) for release_id in reply.get("removed") or []]


def update_manifest(host: Host, spec: HostSpec, release_id: str, changes: Mapping[str, Any]) -> ReleaseInfo:
    """Merge `changes` (verified, verified_at, gates, facts, ...) into the release's manifest, atomically."""
    data = json.dumps(dict(changes)).encode()
    reply = run_script(host, spec, cmd.update_manifest_argv(spec, release_id), data)
    return cmd.parse_listing({"current": None, "releases": [reply]}).releases[0]


def rollback_release(host: Host, spec: HostSpec, target_id: str | None, reason: str, *, force: bool = False,
                     keep_unmarked: bool = False) -> dict[str, Any]:  # fmt: skip
    """Host side does it in one step: `current` back to target (or the newest verified, not bad), its unit and
    env file, restart, and the release it left marked bad (not with `keep_unmarked`). `force`: a target marked
    bad is allowed."""
    argv = cmd.rollback_argv(spec, target_id, reason, force=force, keep_unmarked=keep_unmarked)
    return run_script(host, spec, argv, timeout=ROLLBACK_TIMEOUT_S)


def restore_config(host: Host, spec: HostSpec) -> dict[str, Any]:
    """The current release's recorded unit and env file back in place (daemon-reload when the unit changed)."""
    return run_script(host, spec, cmd.restore_config_argv(spec))
