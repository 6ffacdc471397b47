"""What the host's release script answered, turned into the errors an operator can act on.

The script prints one JSON object per answer: {"ok": true, ...} or {"ok": false, "kind": ..., "error": ...}.
A reply that is not JSON at all means the script never ran (no such interpreter, killed): that error names the
`python` setting to check instead of showing a parse failure.
"""

from __future__ import annotations

from typing import Any

from specops.commands.hostdata import too_new
from specops.config.inventory import HostSpec
from specops.errors import ReleaseError, ReleaseVerifyFailed
from specops.host.base import Host, Result


def checked_reply(host: Host, reply: dict[str, Any]) -> dict[str, Any]:
    """The reply if it says ok; else the error it carries, as the ReleaseError that explains it."""
    if reply.get("ok") is True:
        return reply
    if reply.get("kind") == "mismatch":
        raise mismatch_error(host, reply)
    if reply.get("kind") == "schema":  # a file on the host was written by a newer specops
        raise too_new(host.name, str(reply.get("error")))
    raise ReleaseError(f"{host.name}: {reply.get('error')}", hint=reply_hint(str(reply.get("kind"))))


PUSH_MARGIN_BYTES = 1 << 20  # free space a push leaves at least (and 1/20 of its size): manifest, summaries, logs
MIB = 1 << 20


def room_refusal(host: Host, reply: dict[str, Any], need: int) -> ReleaseError | None:
    """The refusal of a push of `need` bytes when the host's `room` reply says less is free (plus a margin);
    None when it fits or the host did not say."""
    free, path = reply.get("free"), str(reply.get("path") or "the service dir")
    wanted = need + PUSH_MARGIN_BYTES + need // 20
    if not isinstance(free, int) or free >= wanted:
        return None
    needed, left = -(-wanted // MIB), free // MIB
    return ReleaseError(
        f"{host.name}: no space left for the push: it needs {needed:,} MiB, {left:,} MiB are free on {path}; "
        "nothing was sent",
        hint=f"`specops releases {host.name} --prune` or free space on the host (`df -h {path}`), then deploy again",
    )


def script_failed(host: Host, spec: HostSpec, result: Result) -> ReleaseError:
    tail = result.err_tail(10) or result.out_tail(10)
    op = result.argv[4] if len(result.argv) > 4 else "?"
    message = f"{host.name}: the release script ({op}) exited with {result.exit_code}"
    if tail:
        message += "\n" + "\n".join(f"  | {line}" for line in tail.splitlines())
    hint = f"is {spec.python} (hosts.{spec.name}.python) a working Python 3.8+ on the host?"
    return ReleaseError(message, hint=hint)


def mismatch_error(host: Host, reply: dict[str, Any]) -> ReleaseVerifyFailed:
    expected, actual = str(reply.get("expected")), str(reply.get("actual"))
    files = [str(name) for name in reply.get("files") or []]
    message = f"{host.name}: {reply.get('error')}: staged {expected}, on the host {actual}"
    if files:
        message += "\n" + "\n".join(f"  | {name}" for name in files)
    hint = (
        "the release was left `unfinished` (never switched to or rolled back to); if a file of the base release "
        "was changed on the host, push the whole tree (no base)"
    )
    return ReleaseVerifyFailed(message, expected, actual, hint=hint)


def reply_hint(kind: str) -> str:
    return {
        "exists": "a release with this id exists already: wait a second and push again",
        "unsafe": "the tar stream was refused as unsafe; this is a bug in specops if it came from a push",
        "unfinished": "that release's push did not verify: push again",
        "disk-full": "free space on that filesystem (`df -h` on the host; lower keep_releases, or remove other files)"
        ", then deploy again",
        "current": "specops manages `current` as a symlink to releases/<id>",
    }.get(kind, "")
