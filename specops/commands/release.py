"""Pure builders for release operations: argv lists for the host's interpreter, the local tar command, and
parsers for the host's JSON replies. Nothing here talks to a host (specops/ops/release.py does), so every command
specops would run can be unit-tested and shown by a dry run.

Every remote value travels as its own argv word (the Host quotes once); the host-side logic is the stdlib
script specops/remote/release/script.py, passed with `python -IS -c` (isolated: no PYTHONPATH, no user site;
no site: stdlib only).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from specops.commands.guard_record import GuardRecord, parse_watch
from specops.commands.hostdata import check_release_id as check_release_id  # re-exported: the one id rule
from specops.commands.manifest import BadMark, GatesRecord, parse_bad, parse_gates
from specops.remote.bundle import cached_release_script, release_script
from specops.remote.release.script import BUILD_ID as BUILD_ID  # re-exported: a build id, as commands accept it
from specops.remote.release.script import MANIFEST, RELEASE_ENV, order_key
from specops.remote.release.script import build_part as build_part  # re-exported: the build a release id names

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec

SEND_ALWAYS = (MANIFEST,)
SCRIPT_TIMEOUT_S = 120.0
MIN_PUSH_RATE_BPS = 2_000_000  # the push timeout grows with the bytes sent (a slow WAN link, not a hang)


@dataclass(frozen=True)
class ReleaseInfo:
    """One `releases/<id>` on a host, as the listing reports it."""

    id: str
    complete: bool
    verified: bool = False
    created_at: str | None = None
    profile: str | None = None
    tree_hash: str | None = None
    verified_at: str | None = None
    deployed_by: str | None = None
    gates: GatesRecord = field(default_factory=GatesRecord)
    error: str | None = None
    is_current: bool = False
    bad: BadMark | None = None  # never a rollback target (remote/release/marks.py)

    @property
    def rollback_target(self) -> bool:
        """Only a complete release with a readable manifest that says verified=true, and not marked bad, may be
        rolled back to (a bad one only by name, with --force)."""
        return self.complete and self.verified and self.error is None and self.bad is None

    @property
    def build(self) -> str | None:
        """The build this release holds, as every host names it (None: a time-based id, from before)."""
        return build_part(self.id)

    @property
    def bad_reason(self) -> str | None:
        """Why the release is marked bad, None when it is not."""
        return None if self.bad is None else self.bad.reason


@dataclass(frozen=True)
class Listing:
    current: str | None
    releases: list[ReleaseInfo]
    watch: GuardRecord | None = None  # the guard's last watch after "verified" (remote/release/watch.py)


class ReplyError(Exception):
    """The host's reply is not the JSON the script prints (the script did not run: no python, killed...)."""


def script_argv(spec: HostSpec, op: str, *args: str) -> list[str]:
    return plain_script_argv(spec.python, spec.service_dir, op, *args)


def plain_script_argv(python: str, service_dir: str, op: str, *args: str) -> list[str]:
    """The release script's argv from plain values (a deploy's remembered plan has no HostSpec yet)."""
    return [python, "-IS", "-c", release_script(), op, service_dir, *args]  # -S: stdlib only, no site


def session_argv(spec: HostSpec, on_request: bool = False) -> list[str]:
    """The push conversation (remote/release/session.py): the listing first (`on_request`: once asked for), then
    files/receive requests on stdin."""
    return plain_session_argv(spec.python, spec.service_dir, on_request)


def plain_session_argv(python: str, service_dir: str, on_request: bool = False) -> list[str]:
    """An exec of its own, so the script goes through the host's compiled-code cache (bundle.cached_script)."""
    waits = ["on-request"] if on_request else []
    return [python, "-IS", "-c", cached_release_script(), "session", service_dir, *waits]


def push_session_timeout(max_bytes: int, wait_s: float) -> float:
    """The push conversation's time limit: `max_bytes` at MIN_PUSH_RATE_BPS (a slow WAN, not a hang), plus the
    lock wait before its listing is asked for."""
    return SCRIPT_TIMEOUT_S + wait_s + max_bytes / MIN_PUSH_RATE_BPS


def list_argv(spec: HostSpec) -> list[str]:
    return script_argv(spec, "list")


def receive_argv(
    spec: HostSpec, release_id: str, base_id: str | None, tree_hash: str, extractor: str = "auto"
) -> list[str]:
    """Reads the tar on stdin; `base_id` "" means a full push (nothing to hard-link). `extractor`: "auto"
    (GNU tar if the host has it), "tar" or "python" (the stdlib reader)."""
    args = receive_request(release_id, base_id, tree_hash, extractor)["args"]
    return script_argv(spec, "receive", *args)


def receive_request(release_id: str, base_id: str | None, tree_hash: str, extractor: str = "auto") -> dict[str, Any]:
    """The `receive` request of a push session: the same arguments, checked the same way, as `receive_argv`."""
    base = check_release_id(base_id) if base_id else ""
    if extractor not in ("auto", "tar", "python"):
        raise ValueError(f"unknown extractor {extractor!r}")
    return {"op": "receive", "args": [check_release_id(release_id), base, tree_hash, extractor]}


def switch_argv(spec: HostSpec, release_id: str) -> list[str]:
    return script_argv(spec, "switch", check_release_id(release_id))


def prune_argv(spec: HostSpec, keep: int, protect: set[str], stale_after_s: float = 0) -> list[str]:
    """`stale_after_s` > 0: unfinished leftovers untouched for that long go too (the lock's life: their push is
    dead), whatever the keep rule says."""
    if keep < 1:
        raise ValueError("keep must be at least 1")
    argv = script_argv(spec, "prune", str(keep), ",".join(sorted(check_release_id(i) for i in protect)))
    return [*argv, str(int(stale_after_s))] if stale_after_s > 0 else argv


def room_request(stale_after_s: float) -> dict[str, Any]:
    """The push session's `room` request: unfinished leftovers older than `stale_after_s` removed, then the
    free bytes of the releases' filesystem."""
    return {"op": "room", "stale_after_s": int(stale_after_s)}


def rollback_argv(spec: HostSpec, target_id: str | None, reason: str, force: bool = False,
                  keep_unmarked: bool = False) -> list[str]:  # fmt: skip
    """Back to `target_id` (or the newest verified release that is neither current nor bad): switch, its unit and
    env file, restart; the release it leaves is marked bad unless `keep_unmarked` (the failed deploy changed
    the configuration: specops/deploy/blame.py). `force`: a `target_id` marked bad is allowed."""
    target = check_release_id(target_id) if target_id else ""
    argv = script_argv(spec, "rollback", spec.unit_name, target, reason)
    flags = [flag for flag, given in (("force", force), ("keep-unmarked", keep_unmarked)) if given]
    return [*argv, ",".join(flags)] if flags else argv


def restore_config_argv(spec: HostSpec) -> list[str]:
    """Put the current release's recorded unit and env file back (remote/release/relconfig.py)."""
    return script_argv(spec, "restore-config", spec.unit_name)


def release_env_path(spec: HostSpec, release_id: str) -> str:
    """Where a release keeps its env file on the host (root-only 0600, outside the tree hash)."""
    return f"{spec.service_dir}/releases/{check_release_id(release_id)}/{RELEASE_ENV}"


def mark_bad_argv(spec: HostSpec, release_id: str, reason: str, who: str) -> list[str]:
    return script_argv(spec, "mark-bad", check_release_id(release_id), reason, who)


def unmark_bad_argv(spec: HostSpec, release_id: str) -> list[str]:
    return script_argv(spec, "unmark-bad", check_release_id(release_id))


def update_manifest_argv(spec: HostSpec, release_id: str) -> list[str]:
    """Reads the JSON object of changes on stdin."""
    return script_argv(spec, "update-manifest", check_release_id(release_id))


def manifest_path(spec: HostSpec, release_id: str) -> str:
    return f"{spec.service_dir}/releases/{check_release_id(release_id)}/manifest.json"


def tar_argv(root: str) -> list[str]:
    """GNU tar writing the NUL-separated names read from stdin (relative to root) to stdout; root-owned,
    numeric ids, no recursion (the list is exactly what is sent)."""
    return [
        "tar", "--create", "--file=-", f"--directory={root}", "--null", "--no-recursion", "--verbatim-files-from",
        "--files-from=-", "--format=gnu", "--numeric-owner", "--owner=0", "--group=0",
    ]  # fmt: skip


def files_to_send(files: dict[str, dict[str, Any]], base_files: dict[str, Any] | None) -> list[str]:
    """The manifest first, then every file that is new or differs from the base (size, mode or sha256);
    symlinks are always sent (they are a few bytes, and hard-linking a link is not portable)."""
    changed = []
    base = base_files or {}
    for relpath, entry in sorted(files.items()):
        before = base.get(relpath)
        if not isinstance(before, dict) or "link" in entry or "link" in before or _differs(before, entry):
            changed.append(relpath)
    return [*SEND_ALWAYS, *changed]


def _differs(before: dict[str, Any], entry: dict[str, Any]) -> bool:
    """Size, mode or sha256 differ. Equal entries (nearly every file of a patch) are settled by one dict
    comparison in C; only entries that differ somewhere compare the three keys."""
    if before == entry:
        return False
    return (before.get("size"), before.get("mode"), before.get("sha256")) != (
        entry.get("size"),
        entry.get("mode"),
        entry.get("sha256"),
    )


def parse_reply(stdout: str) -> dict[str, Any]:
    """The last line of the script's stdout as a JSON object with an "ok" key."""
    lines = stdout.strip().splitlines()
    try:
        reply = json.loads(lines[-1]) if lines else None
    except ValueError:
        reply = None
    if not isinstance(reply, dict) or "ok" not in reply:
        raise ReplyError(f"unexpected reply: {stdout.strip()[-300:]!r}")
    return reply


def parse_listing(reply: dict[str, Any]) -> Listing:
    """The `list` reply as a Listing; releases oldest first, by when each was created (never by id: a content id
    says nothing about time)."""
    current = reply.get("current")
    releases = [_release_info(raw, current) for raw in reply.get("releases") or [] if isinstance(raw, dict)]
    return Listing(current if isinstance(current, str) else None, sorted(releases, key=newness),
                   parse_watch(reply.get("watch")))  # fmt: skip


def _release_info(raw: dict[str, Any], current: object) -> ReleaseInfo:
    def text(key: str) -> str | None:
        value = raw.get(key)
        return value if isinstance(value, str) else None

    return ReleaseInfo(
        id=str(raw.get("id")),
        complete=raw.get("complete") is True,
        verified=raw.get("verified") is True,
        created_at=text("created_at"),
        profile=text("profile"),
        tree_hash=text("tree_hash"),
        verified_at=text("verified_at"),
        deployed_by=text("deployed_by"),
        gates=parse_gates(raw.get("gates")),
        error=text("error"),
        is_current=raw.get("id") == current,
        bad=parse_bad(raw.get("bad")),
    )


def newness(release: ReleaseInfo) -> tuple[str, str]:
    """The sort key of "newest": the manifest's created_at (a time-based id's own time when it has none)."""
    return order_key(release.created_at, release.id)


def releases_of_build(releases: list[ReleaseInfo], build: str) -> list[ReleaseInfo]:
    """A host's releases of one build (content ids `<build>-<config>`), oldest first."""
    return sorted((r for r in releases if build_part(r.id) == build), key=newness)


def newest_complete(releases: list[ReleaseInfo]) -> ReleaseInfo | None:
    """The push's delta base: the newest release whose push finished (verified or not)."""
    complete = [release for release in releases if release.complete and release.error is None]
    return max(complete, key=newness) if complete else None


def newest_verified(releases: list[ReleaseInfo], exclude: str | None = None) -> ReleaseInfo | None:
    """The rollback target: the newest verified release other than `exclude` (usually current)."""
    targets = [release for release in releases if release.rollback_target and release.id != exclude]
    return max(targets, key=newness) if targets else None
