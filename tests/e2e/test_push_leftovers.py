"""Interrupted pushes on a real test host (SshHost, strict host keys): what two pushes stopped mid-stream
leave behind, and the next push removing it once it is older than the lock's life, before it sends a byte."""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from specops.build.stage import StagedBuild, legacy_release_id, stage_build
from specops.config.inventory import HostSpec
from specops.errors import ReleaseError
from specops.host.ssh.channels import SshHost
from specops.host.ssh.connection import connect
from specops.ops import release as push
from tests.testbed.engine import BUILD_PYTHON
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e

ALIAS = "leftovers-host"
SPEC = HostSpec(name=ALIAS, ssh=ALIAS, python="/usr/bin/python3", model_path="/m", base_dir="/opt/specops")
RELEASES = "/opt/specops/sglang/releases"
STOP_AFTER = 4 * 2**20  # bytes sent before the push is stopped: mid-stream of a 24 MiB file
RECEIVES_RUNNING = (  # host-side: how many release-script sessions for this service dir still run
    "import os\n"
    "def args(pid):\n"
    "    try:\n"
    "        return open('/proc/%s/cmdline' % pid, 'rb').read().split(b'\\0')\n"
    "    except OSError:\n"
    "        return []\n"
    "print(sum(1 for pid in os.listdir('/proc') if pid.isdigit() and b'session' in args(pid)"
    " and b'/opt/specops/sglang' in args(pid)))\n"
)


class Stopped(Exception):
    """The operator's process going away in the middle of the tar stream."""


@pytest.fixture
def ssh_config(testhost: TestHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    config = tmp_path / "ssh_config"
    config.write_text(testhost.ssh_config_block(ALIAS))
    return config


@pytest.fixture
def ssh(ssh_config: Path) -> Iterator[SshHost]:
    with connect(SPEC, ssh_config=ssh_config, known_hosts=[]) as host:
        yield host


def _large_build(tmp_path: Path) -> StagedBuild:
    build = tmp_path / "python"
    shutil.copytree(BUILD_PYTHON, build, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (build / "sglang" / "big_weights.bin").write_bytes(os.urandom(24 * 2**20))
    return stage_build(build, [], tmp_path / "stage")


def _stop_mid_stream(ssh_config: Path, staged: StagedBuild, second: int) -> None:
    """A push on a connection of its own, stopped once STOP_AFTER bytes are out; the connection then closes."""

    def stop(sent: int, _total: int) -> None:
        if sent >= STOP_AFTER:
            raise Stopped

    with connect(SPEC, ssh_config=ssh_config, known_hosts=[]) as host, pytest.raises(Stopped):
        push.push_release(
            host, SPEC, staged, base=None, on_bytes=stop, release_id=_old_id(staged, second), now=_at(second)
        )


def _at(second: int) -> datetime:
    return datetime(2026, 1, 1, 0, 0, second, tzinfo=UTC)


def _old_id(staged: StagedBuild, second: int) -> str:
    """One build pushed four times: four releases only under the time-based ids older specops minted."""
    return legacy_release_id(staged.tree_hash, _at(second))


def _wait_for_the_host_side_to_end(testhost: TestHost) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if testhost.exec(["python3", "-c", RECEIVES_RUNNING]).stdout.strip() == b"0":
            return
        time.sleep(0.5)
    raise AssertionError("the stopped pushes' receives still run on the host")


def test_two_pushes_stopped_mid_stream_leave_leftovers_that_the_third_push_removes(
    testhost: TestHost, ssh_config: Path, ssh: SshHost, tmp_path: Path
) -> None:
    staged = _large_build(tmp_path)
    _stop_mid_stream(ssh_config, staged, 1)
    _stop_mid_stream(ssh_config, staged, 2)
    _wait_for_the_host_side_to_end(testhost)
    left = [(r.id, r.complete) for r in push.list_releases(ssh, SPEC)]
    assert left == [(_old_id(staged, s), False) for s in (1, 2)]
    said: list[str] = []
    young = push.push_release(ssh, SPEC, staged, base=None, progress=said.append, release_id=_old_id(staged, 3),
                              now=_at(3))  # fmt: skip
    assert not any("unfinished" in line for line in said)  # younger than the lock's life: maybe a live push
    for release_id, _ in left:  # as if the lock's life (90 s) had passed since those pushes stopped
        testhost.exec(["find", f"{RELEASES}/{release_id}", "-maxdepth", "1", "-exec", "touch", "-h", "-d",
                       "10 minutes ago", "{}", "+"])  # fmt: skip
    third = push.push_release(ssh, SPEC, staged, base=None, progress=said.append, release_id=_old_id(staged, 4),
                              now=_at(4))  # fmt: skip
    assert f"removed 2 unfinished release(s) that stopped pushes had left: {left[0][0]}, {left[1][0]}" in said
    assert [(r.id, r.complete) for r in push.list_releases(ssh, SPEC)] == [(young.release_id, True),
                                                                          (third.release_id, True)]  # fmt: skip
    listed = testhost.exec(["ls", "-A", RELEASES]).stdout.decode().split()
    assert sorted(listed) == sorted([young.release_id, third.release_id])  # no trash left either


def test_a_push_bigger_than_the_free_space_is_refused_before_a_byte_is_sent(
    testhost: TestHost, ssh_config: Path, tmp_path: Path
) -> None:
    testhost.exec(["mkdir", "-p", "/opt/small"])
    testhost.exec(["mount", "-t", "tmpfs", "-o", "size=12m,mode=0755", "tmpfs", "/opt/small"])
    small = HostSpec(name=ALIAS, ssh=ALIAS, python="/usr/bin/python3", model_path="/m", base_dir="/opt/small")
    with connect(small, ssh_config=ssh_config, known_hosts=[]) as host, pytest.raises(ReleaseError) as caught:
        push.push_release(host, small, _large_build(tmp_path), base=None)
    message = caught.value.message
    found = re.fullmatch(rf"{ALIAS}: no space left for the push: it needs (\d+) MiB, (\d+) MiB are free on "
                         r"/opt/small/sglang; nothing was sent", message)  # fmt: skip
    assert found is not None and int(found[1]) > 24 and int(found[2]) <= 12  # the build and its margin; the tmpfs
    assert caught.value.hint.startswith(f"`specops releases {ALIAS} --prune` or free space on the host")
    assert testhost.exec(["find", "/opt/small", "-mindepth", "1"]).stdout == b""  # nothing was created
