"""Pushing releases to a real test host over SshHost (paramiko, strict host keys): a full push of the test
engine build, a one-line-patch re-push that sends one file and hard-links the rest, switch, list and prune."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from specops.build.stage import stage_build
from specops.commands.release import newest_complete
from specops.config.inventory import HostSpec
from specops.errors import ReleaseVerifyFailed
from specops.host.ssh.channels import SshHost
from specops.host.ssh.connection import connect
from specops.ops import release as push
from specops.ops import release_changes as changes
from tests.testbed.engine import BUILD_PYTHON, DDTREE_PATCH, RENUMBER_PATCH
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e

ALIAS = "push-host"
SPEC = HostSpec(name=ALIAS, ssh=ALIAS, python="/usr/bin/python3", model_path="/m", base_dir="/opt/specops")
RELEASES = "/opt/specops/sglang/releases"
SPEC_INFO = "sglang/srt/speculative/spec_info.py"


@pytest.fixture
def ssh(testhost: TestHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SshHost]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    config = tmp_path / "ssh_config"
    config.write_text(testhost.ssh_config_block(ALIAS))
    with connect(SPEC, ssh_config=config, known_hosts=[]) as host:
        yield host


def _inodes(testhost: TestHost, release_id: str) -> dict[str, str]:
    out = testhost.exec(["sh", "-c", 'cd "$1" && find . -type f -printf "%P %i\\n"', "sh", f"{RELEASES}/{release_id}"])
    return dict(line.split(" ") for line in out.stdout.decode().splitlines())


def test_push_delta_switch_list_prune(testhost: TestHost, ssh: SshHost, tmp_path: Path) -> None:
    staged = stage_build(BUILD_PYTHON, [], tmp_path / "w1")
    first = push.push_release(ssh, SPEC, staged, base=None, now=datetime(2026, 1, 1, tzinfo=UTC))
    print(f"[push] full: {first.sent_files} files, {first.sent_bytes:,} B, {first.seconds:.2f}s")
    assert first.sent_files == len(staged.files) and first.base_id is None
    assert testhost.exec(["test", "!", "-e", f"{RELEASES}/{first.release_id}/unfinished"]).returncode == 0
    host_hash = testhost.exec(["sh", "-c", f"cd {RELEASES}/{first.release_id} && sha256sum {SPEC_INFO}"])
    assert host_hash.stdout.decode().split()[0] == staged.files[SPEC_INFO]["sha256"]
    changes.update_manifest(ssh, SPEC, first.release_id, {"verified": True, "verified_at": "2026-01-01T00:01:00Z"})
    assert changes.switch_current(ssh, SPEC, first.release_id) is None

    patched = stage_build(BUILD_PYTHON, [DDTREE_PATCH], tmp_path / "w2")
    base = newest_complete(push.list_releases(ssh, SPEC))
    assert base is not None and base.id == first.release_id
    started = time.monotonic()
    second = push.push_release(ssh, SPEC, patched, base=base, now=datetime(2026, 1, 2, tzinfo=UTC))
    print(
        f"[push] one-line patch: {second.sent_files} file, {second.sent_bytes:,} B, {time.monotonic() - started:.2f}s"
    )
    assert (second.sent_files, second.linked_files) == (1, len(staged.files) - 1)
    old, new = _inodes(testhost, first.release_id), _inodes(testhost, second.release_id)
    assert [name for name in new if name != "manifest.json" and new[name] != old.get(name)] == [SPEC_INFO]
    assert b"SpeculativeAlgorithm.DDTREE)" in testhost.read_file(
        f"/opt/specops/sglang/current/../{second.release_id}/{SPEC_INFO}"
    )

    assert changes.switch_current(ssh, SPEC, second.release_id) == first.release_id
    current = testhost.exec(["readlink", "/opt/specops/sglang/current"]).stdout.decode().strip()
    assert current == f"{RELEASES}/{second.release_id}"
    listing = push.read_listing(ssh, SPEC)
    assert listing.current == second.release_id
    assert [(r.id, r.complete, r.verified, r.is_current) for r in listing.releases] == [
        (first.release_id, True, True, False),
        (second.release_id, True, False, True),
    ]

    third_stage = stage_build(BUILD_PYTHON, [DDTREE_PATCH, RENUMBER_PATCH], tmp_path / "w3")
    third = push.push_release(ssh, SPEC, third_stage, base=listing.releases[-1], now=datetime(2026, 1, 3, tzinfo=UTC))
    assert changes.prune(ssh, SPEC, keep=1, protect=set()) == []  # r1: newest verified, r2: current, r3: newest
    changes.update_manifest(ssh, SPEC, second.release_id, {"verified": True})
    assert changes.prune(ssh, SPEC, keep=1, protect=set()) == [first.release_id]
    assert [r.id for r in push.list_releases(ssh, SPEC)] == [second.release_id, third.release_id]
    remaining = _inodes(testhost, second.release_id)
    assert remaining.keys() == new.keys()  # the hard links kept the content alive after the base was removed


def test_a_large_push_reports_its_bytes_as_they_go_and_the_total_is_exact(
    testhost: TestHost, ssh: SshHost, tmp_path: Path
) -> None:
    """What the progress bar is drawn from, over real SSH: counts that only grow, a total known from the first
    count, and a last count equal to that total and to what was sent. The cache of trees is empty (fresh
    XDG_CACHE_HOME), so the base's files map comes through the same conversation."""
    build = tmp_path / "python"
    shutil.copytree(BUILD_PYTHON, build, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (build / "sglang" / "big_weights.bin").write_bytes(os.urandom(24 * 2**20))
    staged = stage_build(build, [], tmp_path / "w1")
    counts: list[tuple[int, int]] = []
    first = push.push_release(ssh, SPEC, staged, base=None, on_bytes=lambda *count: counts.append(count))
    assert len(counts) > 3 and counts == sorted(counts)
    assert {total for _, total in counts} == {first.sent_bytes} and counts[-1][0] == first.sent_bytes
    shutil.rmtree(tmp_path / "cache")  # forget the tree: the delta push asks the host for its base's files
    patched = stage_build(build, [DDTREE_PATCH], tmp_path / "w2")
    with push.open_push(ssh, SPEC, max_bytes=patched.total_bytes) as session:
        [base] = session.listing.releases
        second = session.push(patched, base=base)
    assert (second.base_id, second.sent_files) == (first.release_id, 1)
    assert second.sent_bytes < 64 * 1024  # one file and the manifest, not the 24 MiB


def test_a_build_with_setuid_and_world_writable_files_lands_0755_and_0644_on_the_host(
    testhost: TestHost, ssh: SshHost, tmp_path: Path
) -> None:
    build = tmp_path / "python"
    shutil.copytree(BUILD_PYTHON, build, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    hostile = {"sglang/setuid_tool.py": 0o4755, "sglang/open_exec.py": 0o777, "sglang/open_data.py": 0o666}
    for name, mode in hostile.items():
        (build / name).write_text("# " + name + "\n")
        os.chmod(build / name, mode)
    os.chmod(build / "sglang", 0o777)
    staged = stage_build(build, [], tmp_path / "w")
    pushed = push.push_release(ssh, SPEC, staged, base=None, now=datetime(2026, 2, 1, tzinfo=UTC))
    assert pushed.tree_hash == staged.tree_hash
    root = f"{RELEASES}/{pushed.release_id}"
    listing = testhost.exec(["sh", "-c", 'cd "$1" && find . -printf "%P %m %y\\n"', "sh", root]).stdout.decode()
    modes = {name: mode for name, mode, _kind in (line.split(" ") for line in listing.splitlines())}
    assert (modes["sglang/setuid_tool.py"], modes["sglang/open_exec.py"], modes["sglang/open_data.py"]) == (
        "755",
        "755",
        "644",
    )
    kinds = {line.split(" ")[2] for line in listing.splitlines()}
    unexpected = [
        line for line in listing.splitlines() if line.split(" ")[1:] not in (["644", "f"], ["755", "f"], ["755", "d"])
    ]
    assert kinds == {"f", "d"} and unexpected == []


def test_a_release_that_did_not_verify_stays_private_to_root(testhost: TestHost, ssh: SshHost, tmp_path: Path) -> None:
    """A local user of the host (here `nobody`) can read a verified release, never one that is not: the
    folder stays 0700 while it streams in and after its check failed."""
    first = push.push_release(ssh, SPEC, stage_build(BUILD_PYTHON, [], tmp_path / "w1"), base=None,
                              now=datetime(2026, 3, 1, tzinfo=UTC))  # fmt: skip
    verified = f"{RELEASES}/{first.release_id}"
    user_reads = ["runuser", "-u", "nobody", "--", "cat", f"{verified}/{SPEC_INFO}"]
    assert testhost.exec(user_reads, check=False).returncode == 0  # the engine's run_as user reads it
    testhost.exec(["sh", "-c", f"echo '# changed on the host' >> {verified}/sglang/version.py"])  # spoils the base
    patched = stage_build(BUILD_PYTHON, [DDTREE_PATCH], tmp_path / "w2")
    with pytest.raises(ReleaseVerifyFailed):
        push.push_release(ssh, SPEC, patched, base=newest_complete(push.list_releases(ssh, SPEC)),
                          now=datetime(2026, 3, 2, tzinfo=UTC))  # fmt: skip
    (failed,) = [r.id for r in push.list_releases(ssh, SPEC) if r.id != first.release_id]
    mode = testhost.exec(["stat", "-c", "%a", f"{RELEASES}/{failed}"]).stdout.decode().strip()
    assert (mode, testhost.exec(["test", "-e", f"{RELEASES}/{failed}/unfinished"], check=False).returncode) == (
        "700",
        0,
    )
    user_reads[-1] = f"{RELEASES}/{failed}/{SPEC_INFO}"
    refused = testhost.exec(user_reads, check=False)
    assert refused.returncode != 0 and b"Permission denied" in refused.stderr
