"""A deploy that finds the lock of a killed deploy from this machine takes it over, says so, and records it."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

from specops.ops.audit import local_audit_path
from specops.ops.lock import LockHolder
from tests.unit.deploy.scene import release
from tests.unit.deploy.world import World


def test_a_deploy_takes_over_a_dead_local_holders_lock_and_records_it(world: World) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    killed = replace(LockHolder.current("specops deploy gpu1 (killed)"), pid=child.pid)
    scene = world.scene(releases=[release("20260101T000000Z-old", "0" * 64)], current="20260101T000000Z-old",
                        unit=world.unit_text, lock_holder=killed.to_json().decode())  # fmt: skip
    run = world.run(scene)
    assert (run.outcome["outcome"], run.result.code) == ("deployed", 0)
    note = run.outcome["lock_taken_over"]
    assert note.startswith(f"took over the lock of a deploy that no longer runs (process {child.pid} no longer runs")
    assert "`specops deploy gpu1 (killed)`" in note
    acquires = [argv for argv in run.host.commands if argv[4:5] == ("acquire",)]
    assert [len(argv) for argv in acquires] == [8, 9] and acquires[1][8] == killed.token
    run.assert_followed()
    assert not [argv for argv in run.dry_host.commands if argv[4:5] == ("acquire",)]  # a dry run takes nothing
    entry = json.loads(local_audit_path().read_text().splitlines()[-1])
    assert (entry["action"], entry["lock_taken_over"]) == ("deploy", note)
    assert killed.token not in local_audit_path().read_text()
