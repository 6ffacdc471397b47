"""Reboot a test host: its PID 1 stops and a new one boots on the same upper layer (the same disk), with the
same name, address, keys and machine id.

What a reboot really does, kept: `/run` and `/tmp` are fresh tmpfs (transient units are gone), the boot id is
new (pid1.sh), and the units enabled inside the host start. The host boots `specops-testhost.target`, not
`multi-user.target` (that would start what the outer machine enables), so before each boot the units the host
itself enabled for `multi-user.target` (their links in the upper layer) are linked into the boot target too.

clean=True stops the host as `systemctl reboot` does (units get their stop signal); clean=False is a power
cut (SIGKILL to PID 1: nothing runs its stop path).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from pathlib import Path

from tests.testbed.testhost import network, procs
from tests.testbed.testhost.host import TestHost
from tests.testbed.testhost.layout import HostRecord
from tests.testbed.testhost.leftovers import mounts_mentioning
from tests.testbed.testhost.lifecycle import TestHostError, boot, wait_for_ssh
from tests.testbed.testhost.teardown import kill_cgroup, reap_launcher, remember_launcher, remove_cgroup
from tests.testbed.testhost.upper import BOOT_TARGET

UNIT_DIR = "etc/systemd/system"


def reboot_host(host: TestHost, *, clean: bool = True, timeout: float = 120) -> int:
    """Stop the host's PID 1 and boot it again on its disk; return once `ssh` works. The new PID 1's pid."""
    record = HostRecord.load(host.state_dir)
    if record is None or record.incarnation != host.incarnation:
        raise TestHostError(f"test host {host.name} is not running (stopped, or its name was reused)")
    _shut_down(host, record, clean, timeout)
    _link_enabled_units(host.state_dir / "upper")
    try:
        pid1 = boot(record, host.state_dir, lambda launcher: remember_launcher(host.state_dir, launcher))
        object.__setattr__(host, "systemd_pid", pid1)  # the same TestHost: fixtures and tests keep theirs
        wait_for_ssh(host, record.systemd_start or 0, timeout)
    except TestHostError as error:
        console = (host.state_dir / "console.log").read_text(errors="replace").splitlines()[-30:]
        raise TestHostError(
            f"test host {host.name} did not boot again: {error}\n--- console:\n" + "\n".join(console)
        ) from error
    return pid1


def _shut_down(host: TestHost, record: HostRecord, clean: bool, timeout: float) -> None:
    """PID 1 gone, its launcher reaped, its cgroup and network end removed, its mounts gone: the disk stays."""
    if clean:
        with contextlib.suppress(subprocess.TimeoutExpired):  # the connection may die with the host
            host.ssh("systemctl reboot", check=False, timeout=15)
        procs.wait_gone(record.systemd_pid, record.systemd_start, timeout)
    procs.kill_if_same(record.systemd_pid, record.systemd_start)  # a power cut, or a shutdown that hung
    if not procs.wait_gone(record.systemd_pid, record.systemd_start, 10):
        raise TestHostError(f"test host {host.name}: its PID 1 did not stop")
    reap_launcher(record, host.state_dir)
    kill_cgroup(Path(record.cgroup))
    network.unplug(record.link)
    remove_cgroup(Path(record.cgroup))
    deadline = time.monotonic() + 10
    while mounts_mentioning(host.state_dir):  # the overlay goes with the mount namespace's last process
        if time.monotonic() > deadline:
            raise TestHostError(f"test host {host.name}: its disk is still mounted after PID 1 stopped")
        time.sleep(0.05)


def _link_enabled_units(upper: Path) -> None:
    """The host's own `multi-user.target.wants/` links (not the outer machine's) into the boot target's."""
    enabled = upper / UNIT_DIR / "multi-user.target.wants"
    wants = upper / UNIT_DIR / f"{BOOT_TARGET}.wants"
    shutil.rmtree(wants, ignore_errors=True)
    links = [entry for entry in enabled.iterdir() if entry.is_symlink()] if enabled.is_dir() else []
    if links:
        wants.mkdir()
        for link in links:
            (wants / link.name).symlink_to(link.readlink())
