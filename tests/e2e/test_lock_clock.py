"""The deploy lock on a real test host whose wall clock stepped back after the last heartbeat: its age is the
real one (the host's boot clock), so `specops lock status` says it and a dead holder's lock is taken over."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from specops.commands.lock import BEAT_FILE, DEFAULT_LOCK_ROOT
from specops.config.inventory import HostSpec
from specops.host.ssh.channels import SshHost
from specops.host.ssh.connection import connect
from specops.ops.lock import LockHolder, acquire, status
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e

ALIAS = "llm-clock"
SPEC = HostSpec(name=ALIAS, ssh=ALIAS, python="/usr/bin/python3", model_path="/m")
STEPPED = (  # the last heartbeat 300 s ago by the boot clock; the wall clock was an hour ahead then
    f'read -r boot up < "$1/{BEAT_FILE}" && printf "%s %s\\n" "$boot" "$((up - 300))" > "$1/{BEAT_FILE}" && '
    'touch -d "1 hour" "$1/holder.json"'
)


@pytest.fixture
def host(testhost: TestHost, tmp_path: Path) -> Iterator[SshHost]:
    config = tmp_path / "ssh_config"
    config.write_text(testhost.ssh_config_block(ALIAS))
    with connect(SPEC, ssh_config=config, known_hosts=[]) as connected:
        yield connected


def test_a_wall_clock_stepped_back_neither_freezes_nor_hides_a_dead_holders_age(
    testhost: TestHost, host: SshHost
) -> None:
    other = replace(LockHolder.current("specops deploy llm-clock"), user="alice", machine="ci-runner-7", pid=4242)
    crashed = acquire(host, other)
    crashed._stop.set()  # what kill -9 on another machine does to the heartbeat
    testhost.exec(["sh", "-c", STEPPED, "sh", DEFAULT_LOCK_ROOT])
    info = status(host)
    assert info is not None and info.heartbeat_age_s is not None
    assert info.heartbeat_age_s >= 300 and info.stale  # the wall clock alone: "last heartbeat 0s ago", never stale
    with acquire(host, LockHolder.current("rescuer"), stale_after_s=90) as lock:
        assert lock.took_over is not None and lock.took_over.holder is not None
        assert lock.took_over.holder.machine == "ci-runner-7"
    assert status(host) is None
