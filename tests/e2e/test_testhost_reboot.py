"""A test host reboots like a machine: the same disk, address and host key; a new boot id; transient units and
/run gone; the units enabled inside the host started again."""

from __future__ import annotations

import pytest

from tests.testbed.testhost import TestHost

ENABLED_UNIT = """\
[Unit]
Description=e2e: enabled for multi-user.target
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
[Install]
WantedBy=multi-user.target
"""


@pytest.mark.e2e
@pytest.mark.parametrize("clean", [True, False], ids=["systemctl-reboot", "power-cut"])
def test_a_reboot_keeps_the_disk_and_starts_what_is_enabled(testhost: TestHost, clean: bool) -> None:
    testhost.write_file("/etc/systemd/system/e2e-enabled.service", ENABLED_UNIT.encode())
    testhost.write_file("/etc/systemd/system/e2e-disabled.service", ENABLED_UNIT.encode())
    testhost.write_file("/var/lib/e2e-disk", b"kept\n")
    before = testhost.ssh(
        "systemctl daemon-reload && systemctl enable --quiet e2e-enabled && touch /run/e2e-gone && "
        "systemd-run --quiet --unit=e2e-sleeper sleep 600 && cat /proc/sys/kernel/random/boot_id"
    ).stdout.strip()
    old_pid1 = testhost.systemd_pid

    testhost.reboot(clean=clean)

    assert testhost.systemd_pid != old_pid1
    after = testhost.ssh(
        "hostname; cat /var/lib/e2e-disk; cat /proc/sys/kernel/random/boot_id; "
        "systemctl is-active e2e-enabled e2e-disabled e2e-sleeper; systemctl is-enabled e2e-enabled",
        check=False,
    ).stdout.splitlines()
    assert after[:2] == [testhost.name, "kept"]
    assert after[2] != before and len(after[2]) == 36  # a new boot
    assert after[3:] == ["active", "inactive", "inactive", "enabled"]
    assert testhost.ssh("ls /run/e2e-gone", check=False).returncode != 0  # /run is fresh
