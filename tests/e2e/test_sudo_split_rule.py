"""sudo with per-command rules, on a REAL test host: the password must reach sudo, never a command's stdin."""

from __future__ import annotations

from pathlib import Path

import pytest

from specops.config.inventory import HostSpec
from specops.config.secrets import Secret
from specops.host.become import Become
from specops.host.ssh.connection import connect
from tests.testbed.testhost import TestHost
from tests.testbed.testhost.sudo import add_sudo_user

pytestmark = pytest.mark.e2e

PASSWORD = "split-pass-4711"
SPLIT_RULES = b"split ALL=(ALL:ALL) ALL\nsplit ALL=(ALL:ALL) NOPASSWD: /usr/bin/timeout\n"


def test_a_nopasswd_rule_for_timeout_alone_never_hands_the_password_to_the_command(
    testhost: TestHost, tmp_path: Path
) -> None:
    """sudoers asks for a password for everything but `timeout`, which every specops command runs under. If
    the check (`sudo ... true`) chose password mode, sudo would not read the password line for the real
    commands, and `cat` (or the probe's Python, or a pushed file) would get it on stdin."""
    user = add_sudo_user(testhost, "split", password=PASSWORD)
    testhost.write_file("/etc/sudoers.d/split", SPLIT_RULES, mode=0o440)
    testhost.exec(["visudo", "-c", "-q"])
    config = tmp_path / "config"
    config.write_text(user.ssh_config_block("split-host"))
    spec = HostSpec(name="split-host", ssh="split-host", python="/usr/bin/python3", model_path="/models/target")
    with connect(spec, ssh_config=config, known_hosts=[]) as host:
        host.become(Become(password=Secret(PASSWORD)))
        result = host.run(["cat"], input=b"payload\n")
        whoami = host.run(["id", "-un"]).text.strip()
    assert PASSWORD not in result.text
    assert result.stdout == b"payload\n"
    assert whoami == "root"
