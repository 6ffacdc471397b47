"""Putting a staged build on a host as a new release, and the other release operations, over any Host.

Why this shape (docs/performance.md "## Push"): ONE exec channel carries the whole conversation (the host's
listing, then a tar of only the files that differ from the base release, streamed as tar produces it); the
host hard-links everything else from the base, then re-hashes the whole release and only then removes its
`unfinished` marker. So a one-line patch sends one file on one login shell, a full push is one tar stream, and
a torn or tampered push is never mistaken for a release that can be switched to or rolled back to.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from specops.build.stage import StagedBuild
from specops.build.tree_cache import cached_tree, remember_tree
from specops.commands import release as cmd
from specops.commands.manifest import FileEntry, parse_manifest
from specops.commands.planned import HostCommand
from specops.commands.release import SCRIPT_TIMEOUT_S, Listing, ReleaseInfo, ReplyError
from specops.config.inventory import HostSpec
from specops.errors import ReleaseError
from specops.host.base import Host
from specops.host.process import RunningCommand
from specops.ops.base_guess import BaseGuess
from specops.ops.hostfiles import read_document
from specops.ops.lock import DEFAULT_STALE_AFTER_S
from specops.ops.push_stream import OnBytes, expected_tar_bytes, member_bytes, send_tar
from specops.ops.release_replies import checked_reply, room_refusal, script_failed
from specops.remote.release.script import MANIFEST

Progress = Callable[[str], None]


@dataclass(frozen=True)
class PushResult:
    release_id: str
    tree_hash: str
    base_id: str | None
    sent_files: int
    sent_bytes: int
    linked_files: int
    seconds: float


def read_listing(host: Host, spec: HostSpec, planned: HostCommand | None = None) -> Listing:
    """Every release with its manifest summary, and where `current` points: one round trip. `planned`: a plan's
    own list command (a restart's read, a deploy's last read of what serves), run as it is."""
    argv = list(planned.argv) if planned is not None else cmd.list_argv(spec)
    return cmd.parse_listing(run_script(host, spec, argv))


def list_releases(host: Host, spec: HostSpec) -> list[ReleaseInfo]:
    return read_listing(host, spec).releases


def read_current(host: Host, spec: HostSpec) -> str | None:
    return read_listing(host, spec).current


def identical_release(staged: StagedBuild, releases: list[ReleaseInfo]) -> ReleaseInfo | None:
    """A complete release on the host with exactly the staged tree (current first), or None: the
    orchestrator can then skip the push (and, if it is current, the restart)."""
    same = [r for r in releases if r.complete and r.error is None and r.tree_hash == staged.tree_hash]
    same.sort(key=lambda r: (r.is_current, cmd.newness(r)))
    return same[-1] if same else None


class PushSession:
    """One exec of the host script's `session` op (commands/release_session.py): the host's listing first, then
    the base's files map if the local cache lacks it, then one receive, all on ONE channel: one login shell on
    the host instead of two or three (docs/performance.md "## Push")."""

    def __init__(self, host: Host, spec: HostSpec, command: RunningCommand, on_request: bool = False) -> None:
        self.host, self.spec, self._command = host, spec, command
        self._ask_listing = on_request  # the host waits for {"op": "list"} before it lists
        self._finished = False
        self._listing: Listing | None = None
        self._prepared: tuple[StagedBuild, str, bytes] | None = None  # (stage, release id, manifest member)
        self._base_files: dict[str, dict[str, Any]] = {}
        self._guess: BaseGuess | None = None

    @property
    def listing(self) -> Listing:
        """The host's releases: the first line the host prints (read when first asked for, so `prepare` can run
        while the host is still starting its login shell)."""
        if self._listing is None:
            if self._ask_listing:
                self._ask_listing = False
                self._request({"op": "list"})
            self._listing = cmd.parse_listing(self._reply())
        return self._listing

    def prepare(
        self,
        staged: StagedBuild,
        *,
        release_id: str | None = None,
        manifest_fields: Mapping[str, Any] | None = None,
        now: datetime | None = None,
    ) -> str:
        """The local half of a push that needs no listing (the release id, the manifest as a tar member in memory,
        never in the stage that parallel hosts share); called right after the exec starts, it runs while the host
        starts its shell. Returns the release id."""
        fields = dict(manifest_fields or {})
        release_id = release_id or staged.release_id(str(fields.get("profile") or ""), str(fields.get("unit") or ""))
        manifest = staged.manifest(release_id, now, **fields)
        manifest_text = json.dumps(manifest, sort_keys=True, separators=(",", ":"))  # the C encoder: ~10x
        self._prepared = (staged, release_id, member_bytes(MANIFEST, manifest_text.encode()))
        self._guess = BaseGuess.of(staged)
        return release_id

    def base_files(self, base: ReleaseInfo) -> dict[str, Any] | None:
        """The base release's files map: from the local tree cache when its tree hash is known there (content-
        addressed, and the host verifies the result anyway), else from its manifest; None means a full push."""
        if self._guess is not None and self._guess.tree_hash == base.tree_hash:
            return self._guess.files
        cached = cached_tree(base.tree_hash) or self._base_files.get(base.id)
        if cached is not None:
            return cached
        self._request({"op": "files", "id": base.id}, after_listing=True)
        files = self._reply(errors_ok=True).get("files")
        if isinstance(files, dict):
            self._base_files[base.id] = files  # a plan counts the files to send, then the push diffs: one request
        return files if isinstance(files, dict) else None

    def push(
        self,
        staged: StagedBuild,
        *,
        base: ReleaseInfo | None,
        progress: Progress | None = None,
        on_bytes: OnBytes | None = None,
        release_id: str | None = None,
        manifest_fields: Mapping[str, Any] | None = None,
        now: datetime | None = None,
    ) -> PushResult:
        """Create and verify `releases/<id>` from the stage; unchanged files are hard-linked from `base`."""
        started = time.monotonic()
        say = progress or (lambda _message: None)
        if self._prepared is None or self._prepared[0] is not staged or release_id or manifest_fields or now:
            self.prepare(staged, release_id=release_id, manifest_fields=manifest_fields, now=now)
        assert self._prepared is not None
        _, release_id, manifest_member = self._prepared
        files = self.base_files(base) if base is not None else None
        self._request(cmd.room_request(DEFAULT_STALE_AFTER_S), after_listing=True)  # answered while the diff runs
        if base is not None and files is None:
            say(f"cannot read the manifest of base release {base.id}: sending the whole tree")
        base_id = base.id if base is not None and files is not None else None
        guess = self._guess  # the manifest first, then the files that differ:
        names = guess.names if guess is not None and files is guess.files else cmd.files_to_send(staged.files, files)
        tar_names = names[1:]
        expected = len(manifest_member) + expected_tar_bytes(staged.files, tar_names)
        linked = len(staged.files) - (len(names) - 1)
        say(f"sending {len(names) - 1} changed file(s), ~{expected:,} bytes; hard-linking {linked} from {base_id}")
        self._check_room(expected, say)
        self._finished = True  # closing early from here on is EOF inside the tar: the release stays unfinished
        self._request(cmd.receive_request(release_id, base_id, staged.tree_hash), after_listing=True)
        try:
            sent = send_tar(staged.root, tar_names, self._command.write, on_bytes, expected, first=manifest_member)
        except ReleaseError as local:
            raise self._host_answer_after(local) from None
        self._command.close_input()
        reply = self._reply()
        if reply.get("replaced_unfinished"):
            say(f"replaced the unfinished release {release_id} that a stopped push had left")
        remember_tree(staged)
        return PushResult(
            release_id=release_id,
            tree_hash=str(reply.get("tree_hash")),
            base_id=base_id,
            sent_files=len(names) - 1,
            sent_bytes=sent,
            linked_files=int(reply.get("linked", 0)) + int(reply.get("copied", 0)),
            seconds=time.monotonic() - started,
        )

    def _check_room(self, need: int, say: Progress) -> None:
        """The answer to the room request that `push` sent before its diff (the host works on it meanwhile, one
        round trip less on the push's path): under the deploy's lock, before a byte is sent, the host removed
        the leftovers of dead pushes; a push that cannot fit in what is free is refused (docs/deploy.md "Disk
        space")."""
        reply = self._reply()
        removed = [str(release_id) for release_id in reply.get("removed") or []]
        if removed:
            say(f"removed {len(removed)} unfinished release(s) that stopped pushes had left: {', '.join(removed)}")
        refusal = room_refusal(self.host, reply, need)
        if refusal is not None:
            raise refusal

    def _host_answer_after(self, local: ReleaseError) -> ReleaseError:
        """The local tar failed mid-push: end the stream and read the host's answer before reporting. Closing the
        channel at once would kill the host's receive at an arbitrary point (before its release folder exists, or
        between creating it and marking it `unfinished`); this way the host always finishes and leaves an
        `unfinished` release, and its refusal reaches the operator beside the local cause."""
        self._command.close_input()
        try:
            self._reply()
        except ReleaseError as host_side:
            return ReleaseError(f"{local.message}\n  the host then refused the push: {host_side.message}", local.hint)
        return local

    def close(self) -> None:
        """End the conversation (the host script exits having changed nothing) and close the channel; best
        effort and without waiting: after "end" or EOF the host has nothing left to do."""
        try:
            if not self._finished:
                self._finished = True
                self._request({"op": "end"})
                self._command.close_input()
        finally:
            self._command.close()

    def _request(self, request: dict[str, Any], after_listing: bool = False) -> None:
        if after_listing:
            _ = self.listing  # the host answers in order: its listing line comes before any reply
        self._command.write(json.dumps(request, separators=(",", ":")).encode() + b"\n")

    def _reply(self, errors_ok: bool = False) -> dict[str, Any]:
        line = self._command.read_line().decode("utf-8", errors="replace")
        try:
            reply = cmd.parse_reply(line)
        except ReplyError:
            self._finished = True
            raise script_failed(self.host, self.spec, self._command.wait(check=False)) from None
        if not errors_ok or reply.get("kind") not in (None, "manifest"):
            self._finished = self._finished or reply.get("ok") is not True
            return checked_reply(self.host, reply)
        return reply


@contextlib.contextmanager
def open_push(
    host: Host,
    spec: HostSpec,
    *,
    max_bytes: int = 0,
    on_request: bool = False,
    wait_s: float = 0.0,
    planned: HostCommand | None = None,
) -> Iterator[PushSession]:
    """Start the conversation; its time limit allows `max_bytes` at MIN_PUSH_RATE_BPS (a slow WAN, not a hang).
    `on_request`: the host lists its releases only when `listing` is first read, so a deploy can start the
    session (a login shell, an interpreter) before it holds the lock; `wait_s` more for that wait. `planned`: the
    deploy plan's own session command (its lock step shows it), run as it is."""
    timeout = cmd.push_session_timeout(max_bytes, wait_s)
    argv = planned.argv if planned is not None else cmd.session_argv(spec, on_request)
    command = host.stream(argv, timeout=timeout)
    session = PushSession(host, spec, command, on_request)
    try:
        yield session
    finally:
        session.close()


def push_release(
    host: Host,
    spec: HostSpec,
    staged: StagedBuild,
    *,
    base: ReleaseInfo | None,
    progress: Progress | None = None,
    on_bytes: OnBytes | None = None,
    release_id: str | None = None,
    manifest_fields: Mapping[str, Any] | None = None,
    now: datetime | None = None,
) -> PushResult:
    """A push on a conversation of its own (a deploy pushes on the one its listing came from)."""
    with open_push(host, spec, max_bytes=staged.total_bytes) as session:
        return session.push(staged, base=base, progress=progress, on_bytes=on_bytes, release_id=release_id,
                            manifest_fields=manifest_fields, now=now)  # fmt: skip


def run_script(
    host: Host, spec: HostSpec, argv: list[str], input: bytes | None = None, timeout: float = SCRIPT_TIMEOUT_S
) -> dict[str, Any]:
    result = host.run(argv, input=input, timeout=timeout, check=False)  # a refusal is exit 3 with a JSON reply
    try:
        reply = cmd.parse_reply(result.text)
    except ReplyError:
        raise script_failed(host, spec, result) from None
    return checked_reply(host, reply)


def base_files(host: Host, spec: HostSpec, base: ReleaseInfo) -> Mapping[str, FileEntry] | None:
    """The files map a push would diff against (None: a full push), read without a session; for --dry-run."""
    cached = cached_tree(base.tree_hash)
    if cached is not None:
        return cached
    # unreadable: a full push; newer: refused, as the push itself would
    manifest = read_document(host, cmd.manifest_path(spec, base.id), parse_manifest, SCRIPT_TIMEOUT_S)
    return manifest.files if manifest is not None else None
