"""The leftovers of dead pushes and the disk check, through the real host script (LocalHost): a push first
removes `unfinished` releases untouched for longer than the lock's life, then refuses before sending a byte
when the releases' filesystem has too little room; `prune` with the lock's life removes them too."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import pytest

from specops.build.stage import stage_build
from specops.config.inventory import HostSpec
from specops.errors import ReleaseError
from specops.host.local import LocalHost
from specops.ops import release as push
from specops.ops import release_changes as changes
from specops.ops import release_replies
from specops.ops.lock import DEFAULT_STALE_AFTER_S
from specops.remote.release.catalog import prune_plan

LONG_AGO = time.time() - DEFAULT_STALE_AFTER_S - 600


def _releases(spec: HostSpec) -> Path:
    return Path(spec.service_dir) / "releases"


def _leftover(spec: HostSpec, release_id: str, *, aged: bool) -> None:
    """What a push killed mid-stream leaves: the folder, its marker, a file half written."""
    folder = _releases(spec) / release_id
    folder.mkdir(parents=True)
    (folder / "unfinished").touch()
    (folder / "half.bin").write_bytes(b"x" * 1000)
    if aged:
        for path in (folder / "unfinished", folder / "half.bin", folder):
            os.utime(path, (LONG_AGO, LONG_AGO))


def _complete(spec: HostSpec, release_id: str, verified: bool = True) -> None:
    """A release created before every leftover of these tests (a host orders its releases by `created_at`)."""
    folder = _releases(spec) / release_id
    folder.mkdir(parents=True)
    created = f"2020-01-01T00:00:0{release_id[-1]}Z"
    (folder / "manifest.json").write_text(json.dumps({"id": release_id, "verified": verified, "created_at": created}))


def _row(release_id: str, complete: bool = True, verified: bool = True) -> dict[str, object]:
    return {"id": release_id, "complete": complete, "verified": verified, "error": None}


def test_the_pruning_rule_takes_stale_leftovers_even_after_the_newest_complete_release() -> None:
    releases = [_row("r-01"), _row("r-02"), _row("r-03", complete=False), _row("r-04", complete=False)]
    assert prune_plan(releases, "r-02", 5, set()) == []  # newer than every complete release: kept by age alone
    assert prune_plan(releases, "r-02", 5, set(), frozenset({"r-03", "r-04"})) == ["r-03", "r-04"]
    assert prune_plan(releases, "r-02", 1, set(), frozenset({"r-04"})) == ["r-01", "r-04"]  # r-01: beyond keep
    # never current, the newest verified or a protected id, even when named stale
    assert prune_plan(releases, "r-01", 1, {"r-03"}, frozenset({"r-01", "r-02", "r-03"})) == []


def test_a_push_removes_the_stale_leftovers_of_dead_pushes_and_keeps_a_young_one(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    push.push_release(host, spec, stage_build(build, [], tmp_path / "w1"), base=None, release_id="r-01")
    changes.switch_current(host, spec, "r-01")
    _leftover(spec, "r-02", aged=True)
    _leftover(spec, "r-03", aged=True)
    _leftover(spec, "r-04", aged=False)  # may be a push whose lock is still alive elsewhere: never touched
    said: list[str] = []
    push.push_release(host, spec, stage_build(build, [], tmp_path / "w2"), base=None, release_id="r-05",
                      progress=said.append)  # fmt: skip
    assert "removed 2 unfinished release(s) that stopped pushes had left: r-02, r-03" in said
    assert sorted(p.name for p in _releases(spec).iterdir()) == ["r-01", "r-04", "r-05"]


def test_prune_with_the_locks_life_removes_stale_leftovers_but_never_a_complete_release_it_keeps(
    host: LocalHost, spec: HostSpec
) -> None:
    _complete(spec, "r-01")
    _complete(spec, "r-02", verified=False)
    _leftover(spec, "r-03", aged=True)
    _leftover(spec, "r-04", aged=False)
    changes.switch_current(host, spec, "r-02")
    assert changes.prune(host, spec, keep=5, protect=set()) == []  # without the lock's life: the old rule only
    assert changes.prune(host, spec, keep=5, protect=set(), stale_after_s=DEFAULT_STALE_AFTER_S) == ["r-03"]
    assert sorted(p.name for p in _releases(spec).iterdir()) == ["r-01", "r-02", "r-04"]


def test_a_push_that_cannot_fit_is_refused_before_a_byte_is_sent(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    push.push_release(host, spec, stage_build(build, [], tmp_path / "w1"), base=None, release_id="r-01")
    _leftover(spec, "r-02", aged=True)
    free = os.statvfs(spec.service_dir).f_bavail * os.statvfs(spec.service_dir).f_frsize
    monkeypatch.setattr(release_replies, "PUSH_MARGIN_BYTES", free + (1 << 30))  # this disk, made too small
    with pytest.raises(ReleaseError) as caught:
        push.push_release(host, spec, stage_build(build, [], tmp_path / "w2"), base=None, release_id="r-03")
    message = caught.value.message
    assert (
        message.startswith("local: no space left for the push: it needs ")
        and " MiB are free on " + spec.service_dir in message
    )
    assert message.endswith("; nothing was sent")
    assert caught.value.hint.startswith("`specops releases local --prune` or free space on the host")
    assert sorted(p.name for p in _releases(spec).iterdir()) == ["r-01"]  # leftovers gone first, r-03 never begun


def test_the_refusal_says_what_is_needed_and_what_is_free() -> None:
    class Named:
        name = "llm-one"

    reply = {"ok": True, "free": 100 << 20, "path": "/opt/sglang"}
    error = release_replies.room_refusal(Named(), reply, 200 << 20)  # type: ignore[arg-type]
    assert error is not None
    assert error.message == (
        "llm-one: no space left for the push: it needs 211 MiB, 100 MiB are free on /opt/sglang; nothing was sent"
    )
    assert error.hint == (
        "`specops releases llm-one --prune` or free space on the host (`df -h /opt/sglang`), then deploy again"
    )
    assert release_replies.room_refusal(Named(), {**reply, "free": 211 << 20}, 200 << 20) is None  # type: ignore[arg-type]


def test_a_push_stopped_mid_stream_ends_tar_instead_of_waiting_on_it(tmp_path: Path) -> None:
    """An error or Ctrl-C raised while the tar streams (here: from the progress callback) must not leave the
    push waiting for a tar blocked on a full pipe that nobody reads any more."""
    import threading

    from specops.ops.push_stream import send_tar

    (tmp_path / "big.bin").write_bytes(os.urandom(16 * 2**20))  # far more than the pipe holds
    outcome: list[BaseException] = []

    def stop(_sent: int, _total: int) -> None:
        raise RuntimeError("stopped")

    def run() -> None:
        try:
            send_tar(tmp_path, ["big.bin"], lambda chunk: True, stop)
        except RuntimeError as error:
            outcome.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(120)  # a deadlock guard, not a speed check: tar blocked forever before the fix
    assert not worker.is_alive() and [str(error) for error in outcome] == ["stopped"]


def test_a_session_dropped_mid_push_shows_the_end_of_its_output_not_the_whole_listing(spec: HostSpec) -> None:
    from specops.host.base import Result

    class Named:
        name = "llm-one"

    listing = json.dumps({"ok": True, "releases": [{"id": f"2026010{i % 9}T000000Z-{i:012x}"} for i in range(600)]})
    result = Result(("python3", "-IS", "-c", "...", "session", "/opt/specops/sglang"), 255, listing.encode(), b"", 1.0)
    error = release_replies.script_failed(Named(), spec, result)  # type: ignore[arg-type]
    lines = error.message.splitlines()
    assert lines[0] == "llm-one: the release script (session) exited with 255"
    assert lines[1].startswith("  | … ") and "more characters not shown" in lines[1]
    assert len(listing) > 20_000 and len(error.message) < 2_300


def test_a_push_goes_on_when_another_deploy_links_the_same_build_file_while_tar_reads_it(tmp_path: Path) -> None:
    """The stage is hard-linked to the operator's build: another deploy of the same build staging it (a link made)
    or removing its stage moves the file's ctime, and GNU tar says "file changed as we read it" and exits 1
    although not a byte changed. The push goes on (the host verifies every sha256); the bytes are the file's."""
    import tarfile

    from specops.ops.push_stream import send_tar

    content = os.urandom(16 * 2**20)  # far more than the pipe holds: tar is mid-file when the first chunk arrives
    (tmp_path / "big.bin").write_bytes(content)
    received = bytearray()

    def write(chunk: bytes) -> bool:
        if not received:
            os.link(tmp_path / "big.bin", tmp_path / "other-stage.bin")  # what a second deploy's stage does
        received.extend(chunk)
        return True

    send_tar(tmp_path, ["big.bin"], write)
    with tarfile.open(fileobj=io.BytesIO(bytes(received))) as archive:
        member = archive.extractfile("big.bin")
        assert member is not None and member.read() == content


def test_a_push_still_fails_when_tar_fails_for_another_reason(tmp_path: Path) -> None:
    from specops.ops.push_stream import send_tar

    with pytest.raises(ReleaseError) as raised:
        send_tar(tmp_path, ["missing.bin"], lambda chunk: True)
    assert raised.value.message.startswith(f"tar failed in {tmp_path}: tar: missing.bin: Cannot stat")
