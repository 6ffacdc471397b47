"""`release`: what an operator may remove without --force (stale, or their own crashed run) and with it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from specops.commands.lock import lock_argv, parse_lock_reply
from specops.host.local import LocalHost
from specops.ops.lock import LockHolder, acquire, status
from specops.ops.lock_admin import release
from tests.unit.lock.conftest import age_lock, holder_json


def _remote_holder() -> LockHolder:
    return replace(LockHolder.current("specops deploy llm-two"), user="alice", machine="ci-runner-7", pid=4242)


def test_releasing_a_free_lock_says_so(local: LocalHost, root: str) -> None:
    outcome = release(local, root=root)
    assert (outcome.released, outcome.info, outcome.reason) == (False, None, "the lock is free")


def test_a_live_holder_is_kept_without_force_and_removed_with_it(local: LocalHost, root: str) -> None:
    lock = acquire(local, _remote_holder(), root=root, heartbeat_s=60)
    kept = release(local, root=root)
    assert not kept.released and kept.reason == "the holder is alive (its heartbeat is recent)"
    assert kept.info is not None and kept.info.holder is not None and kept.info.holder.who == "alice@ci-runner-7"
    assert Path(root).is_dir()
    forced = release(local, force=True, root=root)
    assert forced.released and forced.info is not None and forced.info.holder == lock.holder
    assert status(local, root=root) is None
    lock.release()


def test_a_stale_lock_is_released_without_force(local: LocalHost, root: str) -> None:
    lock = acquire(local, _remote_holder(), root=root, heartbeat_s=60)
    age_lock(root, 100)
    outcome = release(local, root=root, stale_after_s=90)
    assert outcome.released and outcome.info is not None and outcome.info.stale
    assert status(local, root=root) is None
    lock.release()


def test_my_own_dead_process_lock_is_released_without_force(local: LocalHost, root: str) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock = acquire(local, replace(LockHolder.current("crashed deploy"), pid=int(dead.stdout)), root=root)
    lock._stop.set()
    outcome = release(local, root=root)
    assert outcome.released, outcome.reason
    assert status(local, root=root) is None


def test_a_lock_without_holder_json_is_still_a_lock(local: LocalHost, root: str) -> None:
    Path(root).mkdir(parents=True)  # a holder killed between mkdir and writing holder.json
    info = status(local, root=root)
    assert info is not None and info.holder is None
    assert info.describe().startswith("an unknown holder (holder.json missing or unreadable), last sign of life")
    assert release(local, force=True, root=root).released
    assert not Path(root).exists()


def test_status_reports_the_heartbeat_age_on_the_host_clock(local: LocalHost, root: str) -> None:
    began = time.monotonic()  # the heartbeat's boot-clock second is taken at the acquire: on a loaded machine
    with acquire(local, _remote_holder(), root=root, heartbeat_s=60):  # the status may come seconds later
        age_lock(root, 42)
        info = status(local, root=root, stale_after_s=30)
        waited = int(time.monotonic() - began)
        assert info is not None and info.heartbeat_age_s is not None and info.stale
        assert 42 <= info.heartbeat_age_s <= 43 + waited
        shown = info.to_json()["holder"]
        assert isinstance(shown, dict) and "token" not in shown and shown["user"] == "alice"
        assert holder_json(root)["user"] == "alice"


def test_lock_argv_refuses_unknown_operations_and_odd_tokens() -> None:
    with pytest.raises(ValueError, match="unknown lock operation"):
        lock_argv("steal", "/run/specops/lock")
    with pytest.raises(ValueError, match="alphanumeric"):
        lock_argv("release", "/run/specops/lock", token="x; rm -rf /")
    assert lock_argv("status", "/run/specops/lock")[-4:] == ["status", "/run/specops/lock", "", "0"]


def test_parse_lock_reply_reads_state_clock_and_holder() -> None:
    reply = parse_lock_reply('state=held\nnow=1000\nbeat=990\nholder:\n{"user": "alice"}\n')
    assert (reply.state, reply.heartbeat_age_s, reply.holder_text) == ("held", 10, '{"user": "alice"}')
    free = parse_lock_reply("state=free\nnow=1000\n")
    assert (free.state, free.heartbeat_age_s, free.holder_text) == ("free", None, None)


def test_a_truncated_holder_never_replaces_the_real_one(local: LocalHost, root: str) -> None:
    """A client that dies mid-send (kill -9 during a heartbeat) must not leave a half-written holder.json."""
    with acquire(local, _remote_holder(), root=root, heartbeat_s=60) as lock:
        before = Path(root, "holder.json").read_bytes()
        partial = lock.holder.to_json()[:40]
        result = local.run(lock_argv("heartbeat", root, lock.holder.token), input=partial, check=False)
        assert result.exit_code == 1 and "input=incomplete" in result.stderr_text
        assert Path(root, "holder.json").read_bytes() == before
        assert sorted(os.listdir(Path(root).parent)) == ["lock", "lock.guard"]
