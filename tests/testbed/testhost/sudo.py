"""Dress a running test host like a cloud GPU host: root login off, a login user with sudo.

    user = add_sudo_user(host, "deploy")                         # NOPASSWD sudo
    user = add_sudo_user(host, "ops", password="s3cret pass")    # sudo asks for the password
    disable_root_login(host)                                     # PermitRootLogin no, sshd reloaded
    (home / ".ssh/config").write_text(user.ssh_config_block("llm-one"))

The user logs in with the host's own client key (the one root's authorized_keys holds), so a test needs no
second key; its sudoers rule sits in /etc/sudoers.d/ as on a real image, checked with `visudo -c`.
Everything is done through `host.exec` (nsenter), never over SSH, so it works after root login is off.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.testbed.testhost.host import TestHost

# sorts before 00-specops-testhost.conf: sshd keeps the FIRST value it reads for a keyword
NO_ROOT_LOGIN_CONF = "/etc/ssh/sshd_config.d/00-no-root-login.conf"


@dataclass(frozen=True)
class SudoUser:
    """A login user on a test host; `password` is None for NOPASSWD sudo."""

    host: TestHost
    name: str
    password: str | None

    def ssh_config_block(self, alias: str) -> str:
        """Like TestHost.ssh_config_block, but logging in as this user."""
        return self.host.ssh_config_block(alias).replace("    User root\n", f"    User {self.name}\n")

    def ssh(self, command: str, check: bool = True) -> str:
        """Run `command` as this user with the real OpenSSH client; its stdout."""
        argv = ["ssh", *self.host.ssh_options(), f"{self.name}@{self.host.ip}", command]
        import subprocess

        done = subprocess.run(argv, capture_output=True, text=True, check=check, timeout=60, stdin=subprocess.DEVNULL)
        return done.stdout


def add_sudo_user(host: TestHost, name: str, password: str | None = None) -> SudoUser:
    """Create `name` with a home, the host's client key, and sudo to any user (NOPASSWD unless `password`)."""
    host.exec(["useradd", "--create-home", "--shell", "/bin/bash", name])
    keys = host.read_file("/root/.ssh/authorized_keys")
    host.write_file(f"/home/{name}/.ssh/authorized_keys", keys, mode=0o600)
    host.exec(["chmod", "0700", f"/home/{name}/.ssh"])
    host.exec(["chown", "-R", f"{name}:{name}", f"/home/{name}/.ssh"])
    if password is None:
        rule = f"{name} ALL=(ALL:ALL) NOPASSWD: ALL\n"
        host.exec(["passwd", "--lock", name])  # no password at all: sudo must never need one
    else:
        rule = f"{name} ALL=(ALL:ALL) ALL\n"
        host.exec(["chpasswd"], input=f"{name}:{password}\n".encode())
    host.write_file(f"/etc/sudoers.d/{name}", rule.encode(), mode=0o440)
    host.exec(["visudo", "-c", "-q"])
    return SudoUser(host, name, password)


def disable_root_login(host: TestHost) -> None:
    """`PermitRootLogin no`, as cloud images ship; sshd re-reads its config (existing sessions stay)."""
    host.write_file(NO_ROOT_LOGIN_CONF, b"PermitRootLogin no\n")
    host.exec(["sshd", "-t"])
    host.exec(["systemctl", "reload", "ssh"])
