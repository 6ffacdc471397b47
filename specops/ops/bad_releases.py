"""Marking a release bad, by hand: `specops releases HOST --mark-bad ID [--reason TEXT]` and `--unmark-bad ID`.

A rollback marks the release it leaves by itself (on the host, in the same step); this is the operator's way to
say "never go back to this one" about any release, and to take the mark back. The mark is one atomic manifest
rewrite on the host (remote/release/marks.py), so it takes no lock: a running deploy or the guard's watch are
not disturbed. Each change is one audit line, on the host and locally, saying who and why.
"""

from __future__ import annotations

from typing import Any

from specops.commands import release as cmd
from specops.commands.release import ReleaseInfo, ReplyError
from specops.config.inventory import HostSpec
from specops.errors import UsageError
from specops.host.base import Host
from specops.ops import audit
from specops.ops.lock_holder import local_who
from specops.ops.release import read_listing
from specops.ops.release_replies import checked_reply, script_failed

TIMEOUT_S = 120.0
DEFAULT_REASON = "marked bad by hand"


def mark_bad(host: Host, spec: HostSpec, wanted: str, reason: str = "") -> ReleaseInfo:
    """Record the mark on the host (with who and why) and audit it; UsageError when no such release is there.
    `wanted`: a release id, or a build id (this host's one release of that build)."""
    release_id = _known(host, spec, wanted).id
    why = reason.strip() or DEFAULT_REASON
    info = _release(_run(host, spec, cmd.mark_bad_argv(spec, release_id, why, local_who())))
    audit.record(host, spec, audit.new_entry("mark-bad", outcome="marked", to_release=release_id, message=why))
    return info


def unmark_bad(host: Host, spec: HostSpec, wanted: str) -> ReleaseInfo:
    """Remove the mark (a no-op for a release without one) and audit it."""
    before = _known(host, spec, wanted)
    release_id = before.id
    info = _release(_run(host, spec, cmd.unmark_bad_argv(spec, release_id)))
    message = f"was: {before.bad_reason}" if before.bad_reason else "was not marked"
    audit.record(host, spec, audit.new_entry("unmark-bad", outcome="unmarked", to_release=release_id,
                                             message=message))  # fmt: skip
    return info


def _known(host: Host, spec: HostSpec, wanted: str) -> ReleaseInfo:
    return one_release(spec.name, read_listing(host, spec).releases, wanted)


def one_release(host: str, releases: list[ReleaseInfo], wanted: str) -> ReleaseInfo:
    """The release `wanted` names on this host: its id, or a build id (cmd.BUILD_ID) that this host holds exactly
    one release of; refused, naming what the host has, when it holds none or several (several configurations)."""
    found = next((r for r in releases if r.id == wanted), None)
    if found is not None:
        return found
    lists = f"`specops releases {host}` lists the releases it keeps"
    if not cmd.BUILD_ID.fullmatch(wanted):
        raise UsageError(f"{host}: no release {wanted} on the host", hint=lists)
    of_build = cmd.releases_of_build(releases, wanted)
    if not of_build:
        raise UsageError(f"{host}: no release of build {wanted} on the host", hint=lists)
    if len(of_build) > 1:
        ids = ", ".join(r.id for r in of_build)
        raise UsageError(f"{host}: build {wanted} has {len(of_build)} releases on the host ({ids}): it is ambiguous",
                         hint=f"name one release id: specops releases {host} --mark-bad ID")  # fmt: skip
    return of_build[0]


def _release(reply: dict[str, Any]) -> ReleaseInfo:
    return cmd.parse_listing({"current": None, "releases": [reply]}).releases[0]


def _run(host: Host, spec: HostSpec, argv: list[str]) -> dict[str, Any]:
    result = host.run(argv, timeout=TIMEOUT_S, check=False)  # a refusal is exit 3 with a JSON reply
    try:
        reply = cmd.parse_reply(result.text)
    except ReplyError:
        raise script_failed(host, spec, result) from None
    return checked_reply(host, reply)
