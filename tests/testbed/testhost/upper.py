"""Seed a host's overlay upper layer before it is mounted.

The host's root is an overlay: lower = the outer `/` (read-only in effect), upper = STATE/upper.
Writing the per-host files straight into the upper folder, before the mount, is plain file I/O
from Python and needs no process inside the host. Two overlay rules make it correct:

* a directory that exists in both layers is merged, and the upper copy's owner and mode win, so
  every directory created here copies the lower one's owner and mode;
* a 0:0 character device in the upper layer is a *whiteout*: the lower file is hidden. That is how
  the outer machine's private SSH host keys disappear from inside the host.
"""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path

from tests.testbed.testhost.keys import write_keypair

BOOT_TARGET = "specops-testhost.target"
HOST_KEY = "etc/ssh/ssh_host_ed25519_key"

# Booting the outer machine's multi-user.target would start whatever it enables (postgres...).
# The host boots basic.target + sshd + logind instead; tests start their own units.
_TARGET_UNIT = """\
[Unit]
Description=specops test host: basic system + OpenSSH
Requires=basic.target
After=basic.target
Wants=ssh.service systemd-logind.service systemd-user-sessions.service
AllowIsolate=yes
"""

_SSHD_CONF = """\
# specops test host: only the host's own fresh key, root by key only
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
"""

# journal in /run (a tmpfs): fast, and nothing lands in the upper layer
_JOURNALD_CONF = "[Journal]\nStorage=volatile\nRuntimeMaxUse=32M\n"

# host-only units that would fail or only add noise inside a container
_ALWAYS_MASKED = (
    "getty@tty1.service",
    "console-getty.service",
    "systemd-timesyncd.service",
    "e2scrub_reap.service",
    "systemd-networkd-wait-online.service",
)


def _ensure_dir(upper: Path, lower: Path, rel: str) -> Path:
    """Create upper/rel and its parents, each with the owner and mode of the lower directory."""
    current_upper, current_lower = upper, lower
    for part in Path(rel).parts:
        current_upper, current_lower = current_upper / part, current_lower / part
        if current_upper.exists():
            continue
        try:
            info = os.lstat(current_lower)
            mode, uid, gid = stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid
        except FileNotFoundError:
            mode, uid, gid = 0o755, 0, 0
        current_upper.mkdir()
        os.chown(current_upper, uid, gid)
        os.chmod(current_upper, mode)
    return current_upper


def _write(upper: Path, lower: Path, rel: str, text: str, mode: int = 0o644) -> None:
    target = _ensure_dir(upper, lower, str(Path(rel).parent)) / Path(rel).name
    target.write_text(text)
    os.chmod(target, mode)


def _whiteout(upper: Path, lower: Path, rel: str) -> None:
    target = _ensure_dir(upper, lower, str(Path(rel).parent)) / Path(rel).name
    os.mknod(target, stat.S_IFCHR | 0o000, os.makedev(0, 0))


def _mask(upper: Path, lower: Path, unit: str) -> None:
    target = _ensure_dir(upper, lower, "etc/systemd/system") / unit
    if not target.is_symlink():
        target.symlink_to("/dev/null")


def _outer_timers(lower: Path) -> list[str]:
    wants = lower / "etc/systemd/system/timers.target.wants"
    return sorted(p.name for p in wants.glob("*.timer")) if wants.is_dir() else []


def seed_upper(upper: Path, lower: Path, name: str, client_public_line: str) -> str:
    """Write the host's identity, sshd, journald and boot config; return its public host key line."""
    _write(upper, lower, "etc/hostname", f"{name}\n")
    outer_hosts = (lower / "etc/hosts").read_text() if (lower / "etc/hosts").exists() else ""
    _write(upper, lower, "etc/hosts", f"{outer_hosts.rstrip()}\n127.0.1.1\t{name}\n")
    _write(upper, lower, "etc/machine-id", f"{uuid.uuid4().hex}\n", 0o444)

    own_key_names = {Path(HOST_KEY).name, f"{Path(HOST_KEY).name}.pub"}
    for outer_key in sorted((lower / "etc/ssh").glob("ssh_host_*")):
        if outer_key.name not in own_key_names:
            _whiteout(upper, lower, f"etc/ssh/{outer_key.name}")
    if (lower / "etc/ssh/sshd_not_to_be_run").exists():
        _whiteout(upper, lower, "etc/ssh/sshd_not_to_be_run")
    host_key = _ensure_dir(upper, lower, "etc/ssh") / Path(HOST_KEY).name
    host_public_line = write_keypair(host_key, f"root@{name}")
    _write(upper, lower, "etc/ssh/sshd_config.d/00-specops-testhost.conf", _SSHD_CONF)
    _write(upper, lower, "root/.ssh/authorized_keys", f"{client_public_line}\n", 0o600)

    _write(upper, lower, "etc/systemd/journald.conf.d/00-specops-testhost.conf", _JOURNALD_CONF)
    _write(upper, lower, f"etc/systemd/system/{BOOT_TARGET}", _TARGET_UNIT)
    (upper / "etc/systemd/system/default.target").symlink_to(BOOT_TARGET)
    for unit in (*_outer_timers(lower), *_ALWAYS_MASKED):
        _mask(upper, lower, unit)
    return host_public_line
