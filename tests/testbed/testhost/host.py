"""A running test host and the ways a test talks to it.

`exec` enters the host's namespaces directly (nsenter: no SSH handshake, ~10 ms) and is what
helpers use to set a host up; `ssh` goes through the real OpenSSH client with strict host-key
checking, which is the path specops itself takes.
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

# a login-like environment: nothing from the outer process (venv, PYTEST_*, CI...) leaks inside
_INNER_ENV = [
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME=/root",
    "USER=root",
    "LOGNAME=root",
    "LANG=C.UTF-8",
    "SYSTEMD_PAGER=",
    "SYSTEMD_COLORS=0",
]


@dataclass(frozen=True)
class TestHost:
    """One host: systemd as PID 1 + sshd, reachable at `ip` (10.200.INDEX.2) as root by key."""

    __test__ = False  # not a pytest test class, despite the name

    name: str
    index: int
    ip: str
    outer_ip: str
    key_path: Path
    known_hosts_path: Path
    systemd_pid: int
    state_dir: Path
    incarnation: str = ""  # which start of this name this is (see layout.HostRecord)

    def reboot(self, *, clean: bool = True) -> None:
        """Reboot the host on the same disk (see reboot.py); returns once `ssh` works again. clean=False: a
        power cut instead of `systemctl reboot`."""
        from tests.testbed.testhost.reboot import reboot_host  # lifecycle imports this module

        reboot_host(self, clean=clean)

    def ssh_options(self) -> list[str]:
        """Options for the real `ssh`: only this host's key and known_hosts, nothing from ~/.ssh."""
        return [
            "-F", "none",
            "-i", str(self.key_path),
            "-o", "IdentitiesOnly=yes",
            "-o", f"UserKnownHostsFile={self.known_hosts_path}",
            "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "StrictHostKeyChecking=yes",
            "-o", "BatchMode=yes",
            "-o", "ConnectTimeout=5",
            "-o", "LogLevel=ERROR",
        ]  # fmt: skip

    def ssh_argv(self, command: str) -> list[str]:
        return ["ssh", *self.ssh_options(), f"root@{self.ip}", command]

    def ssh(self, command: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run `command` through the remote shell with the real OpenSSH client."""
        return subprocess.run(
            self.ssh_argv(command), capture_output=True, text=True, check=check, timeout=timeout,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def exec(
        self, argv: list[str], input: bytes | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[bytes]:
        """Run `argv` as root inside all of the host's namespaces, with a clean login-like env."""
        full = ["nsenter", "-t", str(self.systemd_pid), "-a", "-r", "-w", "env", "-i", *_INNER_ENV, *argv]
        return subprocess.run(
            full, input=input, capture_output=True, check=check, timeout=timeout,
            stdin=None if input is not None else subprocess.DEVNULL,
        )  # fmt: skip

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """Create or replace `path` inside the host (through its overlay), parent dirs included."""
        script = 'mkdir -p "$(dirname "$1")" && cat > "$1" && chmod "$2" "$1"'
        self.exec(["sh", "-c", script, "sh", path, f"{mode:o}"], input=data)

    def read_file(self, path: str) -> bytes:
        return self.exec(["cat", path]).stdout

    def ssh_config_block(self, alias: str) -> str:
        """An ~/.ssh/config block so that `ssh ALIAS` (and specops) reach this host strictly."""
        return (
            f"Host {alias}\n"
            f"    HostName {self.ip}\n"
            "    User root\n"
            f"    IdentityFile {self.key_path}\n"
            f"    UserKnownHostsFile {self.known_hosts_path}\n"
            "    StrictHostKeyChecking yes\n"
            "    IdentitiesOnly yes\n"
        )

    def login_command(self) -> str:
        """A copy-paste shell line that logs in to the host."""
        return shlex.join(
            [
                "ssh", "-i", str(self.key_path), "-o", f"UserKnownHostsFile={self.known_hosts_path}",
                "-o", "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes", f"root@{self.ip}",
            ]
        )  # fmt: skip
