"""The audit log explains every change to a host: also a deploy that stopped half-way with an error."""

from __future__ import annotations

import json
import socket

from specops.errors import ReleaseError
from specops.ops.audit import local_audit_path
from specops.ops.lock import LockHolder
from tests.unit.deploy.test_deploy_branches import serving
from tests.unit.deploy.world import World


def test_a_deploy_that_stops_with_an_error_under_its_lock_is_audited_with_the_cause(world: World) -> None:
    """Every change to a host is explained by the audit log, also when the deploy stopped half-way."""
    scene = serving(world)
    scene.on_command["switch"] = lambda: ReleaseError("gpu1: release x is unfinished (its push did not verify)")
    run = world.run(scene)
    assert (run.outcome["outcome"], run.result.code) == ("error", 5)
    entry = json.loads(local_audit_path().read_text().splitlines()[-1])
    assert (entry["action"], entry["outcome"]) == ("deploy", "error")
    assert entry["message"] == "gpu1: release x is unfinished (its push did not verify)"
    assert entry["to"] == run.outcome["attempted"] and entry["from"] == "20260101T000000Z-old"
    appends = [argv for argv in run.host.commands if argv[-1:] == ("/opt/specops/sglang/audit.jsonl",)]
    assert len(appends) == 1  # and on the host, by the same single append a finished deploy uses


def test_a_deploy_that_never_got_the_lock_writes_no_audit_line(world: World) -> None:
    scene = serving(world)
    scene.lock_holder = LockHolder.current("specops deploy gpu1 (alive elsewhere)").to_json().decode()
    scene.lock_holder = scene.lock_holder.replace(socket.gethostname(), "another-machine")
    run = world.run(scene)
    assert run.result.code == 6
    assert not local_audit_path().exists() or '"deploy"' not in local_audit_path().read_text()
