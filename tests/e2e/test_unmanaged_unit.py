"""A unit that specops did not write is never overwritten or restarted, even with --force (on a real host)."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.e2e.deployscene import Scene
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e

FOREIGN_UNIT = "[Unit]\nDescription=someone else's service\n\n[Service]\nExecStart=/bin/sleep infinity\n"


def _unit_state(host: TestHost) -> tuple[str, str]:
    text = host.exec(["cat", "/etc/systemd/system/foreign.service"]).stdout
    pid = host.exec(["systemctl", "show", "foreign.service", "-p", "MainPID", "--value"]).stdout.decode().strip()
    return hashlib.sha256(text).hexdigest(), pid


def test_a_deploy_onto_someone_elses_unit_stops_before_writing_it(scene: Scene) -> None:
    host = scene.host
    host.write_file("/etc/systemd/system/foreign.service", FOREIGN_UNIT.encode())
    host.exec(["systemctl", "daemon-reload"])
    host.exec(["systemctl", "start", "foreign.service"])
    before = _unit_state(host)
    assert before[1] not in ("", "0")
    config = scene.folder / "specops.toml"
    config.write_text(config.read_text() + 'service = "foreign"\n')

    doctor = scene.cli("--json", "doctor", host.name, "--only", "unit.managed")
    (check,) = json.loads(doctor.out)["hosts"][host.name]["checks"]
    assert (check["status"], doctor.code) == ("fail", 1)
    assert "was not written by specops" in check["summary"]

    result, outcome = scene.deploy("--force")
    assert result.code == 1, result.out + result.err
    assert "was not written by specops" in str(outcome.get("cause")) + result.err
    assert _unit_state(host) == before  # the same file, the same process: not rewritten, not restarted
