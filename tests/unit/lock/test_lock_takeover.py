"""A lock whose holder is provably dead is taken over at once; other holders keep the heartbeat rule.

A deploy killed with `kill -9` cannot release its lock. When its holder record names THIS machine (host name
and machine id) and its process is gone, or its pid now belongs to another process (another start time), the
next deploy takes the lock over without waiting for the heartbeat to age, and says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from specops.commands.lock import lock_argv, parse_lock_reply
from specops.errors import LockHeld
from specops.host.local import LocalHost
from specops.ops.lock import HostLock, LockHolder, acquire
from specops.ops.lock_holder import dead_here, machine_id
from tests.unit.lock.conftest import holder_json


def _gone_pid() -> int:
    """The pid of a process of ours that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _held_by(local: LocalHost, root: str, holder: LockHolder) -> HostLock:
    """A lock left as a killed deploy leaves it: holder.json written, heartbeat fresh, nobody beating."""
    held = acquire(local, holder, root=root)
    held._stop.set()
    return held


def test_the_lock_of_a_killed_deploy_on_this_machine_is_taken_over_at_once(local: LocalHost, root: str) -> None:
    pid = _gone_pid()
    _held_by(local, root, replace(LockHolder.current("specops deploy llm-two (killed)"), pid=pid))
    events: list[str] = []
    with acquire(local, LockHolder.current("next"), root=root, on_event=events.append) as lock:
        assert holder_json(root)["command"] == "next"
        assert lock.took_over is not None and lock.took_over.holder is not None
        assert lock.took_over.holder.pid == pid
    assert events == [f"llm-two: {lock.takeover_note}"]
    assert lock.takeover_note.startswith(
        f"took over the lock of a deploy that no longer runs (process {pid} no longer runs on this machine): "
    )
    assert "`specops deploy llm-two (killed)`" in events[0]


def test_a_reused_pid_is_not_the_holder(local: LocalHost, root: str) -> None:
    """Our own pid runs, but not since the holder's start time: the holder is dead."""
    holder = replace(LockHolder.current("specops deploy (killed)"), process_start="0:1")
    _held_by(local, root, holder)
    with acquire(local, LockHolder.current("next"), root=root) as lock:
        assert "is another program now" in lock.takeover_note


@pytest.mark.parametrize(
    "change",
    [
        {},  # this very process: alive
        {"machine": "ci-runner-7"},  # another machine: its heartbeat decides
        {"machine_id": "0" * 32},  # the same host name on another machine
        {"machine_id": ""},  # written by a specops that recorded no machine id: cannot be proven
    ],
    ids=["alive", "other-host-name", "other-machine-id", "no-machine-id"],
)
def test_a_holder_not_provably_dead_keeps_its_lock(local: LocalHost, root: str, change: dict[str, str]) -> None:
    dead_pid = {} if not change else {"pid": _gone_pid()}
    _held_by(local, root, replace(LockHolder.current("specops deploy llm-two"), **dead_pid, **change))
    with pytest.raises(LockHeld, match="llm-two: locked by "):
        acquire(local, LockHolder.current("next"), root=root)
    assert holder_json(root)["command"] == "specops deploy llm-two"


def test_the_host_takes_over_only_the_holder_the_caller_proved_dead(local: LocalHost, root: str) -> None:
    """Another deploy took the lock between our look and our takeover: its lock is kept."""
    _held_by(local, root, LockHolder.current("the live one"))
    mine = LockHolder.current("mine")
    argv = lock_argv("acquire", root, mine.token, 90, dead_token="a" * 32)
    reply = parse_lock_reply(local.run(argv, input=mine.to_json()).text)
    assert reply.state == "held" and holder_json(root)["command"] == "the live one"


def test_a_holder_record_without_the_new_fields_still_reads() -> None:
    record = json.loads(LockHolder.current("old").to_json())
    for name in ("machine_id", "process_start"):
        del record[name]
    holder = LockHolder.from_json(json.dumps(record))
    assert holder is not None and holder.machine_id == "" and holder.command == "old"
    assert dead_here(replace(holder, pid=_gone_pid())) == ""  # never proven dead automatically


def test_this_process_records_its_machine_and_start() -> None:
    holder = LockHolder.current("x")
    assert holder.machine_id == machine_id() != ""
    assert holder.process_start.count(":") == 1 and dead_here(holder) == ""
    assert os.getpid() == holder.pid
