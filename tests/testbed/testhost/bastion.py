"""Bastion topologies and client keys for the SSH e2e tests (test hosts from this package).

    hide_behind(target, bastion)   # the target's network now exists only inside the bastion's namespace
    agent = Agent.start(folder)    # a real `ssh-agent -D -a SOCK`; agent.add(key_path); agent.stop()
    write_encrypted_key(path, "passphrase")   # an OpenSSH-format ed25519 key protected by a passphrase
    authorize(host, public_line)   # append to the host's /root/.ssh/authorized_keys

hide_behind moves the outer end of the target's veth pair (stho<N>, 10.200.N.1) into the bastion's network
namespace: afterwards the operator's namespace has no route to 10.200.N.2, and only the bastion (whose sshd
forwards, AllowTcpForwarding yes by default) reaches the target, from 10.200.N.1. Nothing else changes: the
target's known_hosts line (for 10.200.N.2) stays right, and stopping either host removes the pair with its netns.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.testbed.testhost.host import TestHost
from tests.testbed.testhost.layout import outer_ip, outer_link


def hide_behind(target: TestHost, bastion: TestHost) -> None:
    """Make `target` reachable only from `bastion`'s network namespace."""
    link = outer_link(target.index)
    subprocess.run(["ip", "link", "set", link, "netns", str(bastion.systemd_pid)], check=True, capture_output=True)
    commands = f"addr add {outer_ip(target.index)}/30 dev {link}\nlink set {link} up\n"
    subprocess.run(
        ["nsenter", "-t", str(bastion.systemd_pid), "-n", "ip", "-batch", "-"],
        input=commands, text=True, check=True, capture_output=True,
    )  # fmt: skip


def accepted_logins(host: TestHost, source: str) -> int:
    """How many SSH logins from `source` the host's sshd has accepted so far (its journal)."""
    journal = host.exec(["journalctl", "-u", "ssh", "--no-pager", "-o", "cat"], check=False).stdout.decode()
    return sum(1 for line in journal.splitlines() if line.startswith("Accepted publickey") and f" {source} " in line)


def write_encrypted_key(path: Path, passphrase: str) -> str:
    """PATH (0600, OpenSSH format, bcrypt-encrypted) and PATH.pub; returns the public line."""
    key = Ed25519PrivateKey.generate()
    encryption = serialization.BestAvailableEncryption(passphrase.encode())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, encryption)
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(private)
    Path(f"{path}.pub").write_text(f"{public.decode()} specops-test-encrypted\n")
    return public.decode()


def authorize(host: TestHost, public_line: str) -> None:
    host.exec(["sh", "-c", "cat >> /root/.ssh/authorized_keys"], input=f"{public_line}\n".encode())


@dataclass
class Agent:
    """A real ssh-agent in the foreground (-D), so the test owns its process and stops it by its pid."""

    socket: Path
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, folder: Path) -> Agent:
        sock = folder / "agent.sock"
        process = subprocess.Popen(
            ["ssh-agent", "-D", "-a", str(sock)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while not sock.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("ssh-agent did not start")
            time.sleep(0.01)
        return cls(sock, process)

    def add(self, key: Path) -> None:
        env = {"SSH_AUTH_SOCK": str(self.socket), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        subprocess.run(["ssh-add", "-q", str(key)], env=env, check=True, capture_output=True, stdin=subprocess.DEVNULL)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
