"""Put kernel-transport entries (the NVIDIA driver's Xid lines) into a TEST HOST's journal, never the machine's.

Why this way: `journalctl -k` shows entries with _TRANSPORT=kernel, which journald writes only for what it reads
from /dev/kmsg, and /dev/kmsg is the shared machine's real kernel log: never written by tests. A client cannot
forge trusted fields (`_TRANSPORT`, `_BOOT_ID`) through journald's sockets either. `systemd-journal-remote`
(Debian package systemd-journal-remote) turns a journal export stream, trusted fields included, into a journal
file; written into the host's own journal folder (/run/log/journal/<machine-id>/: the test hosts keep a volatile
journal), the real `journalctl -k -b` on that host reads it like any other file of the current boot.

The boot id and the clocks are copied from an entry the host's journald has just written (a marker line), so the
injected lines sort right after it: `journalctl --after-cursor` from a cursor taken before sees them.
"""

from __future__ import annotations

import struct
import uuid

from tests.testbed.testhost import TestHost

JOURNAL_REMOTE = "/lib/systemd/systemd-journal-remote"
PACKAGE = "systemd-journal-remote"


def _marker(host: TestHost) -> dict[str, str]:
    """Log a marker through the host's journald and read back its export fields (boot id, machine id, clocks)."""
    tag = f"specops-testbed-{uuid.uuid4().hex[:12]}"
    host.exec(["logger", "-t", tag, "kernel lines follow"])
    for _ in range(50):
        done = host.exec(["journalctl", "-t", tag, "-o", "export", "--no-pager", "-n", "1"], check=False)
        fields = dict(line.split("=", 1) for line in done.stdout.decode().splitlines() if "=" in line)
        if fields.get("_BOOT_ID"):
            return fields
        host.exec(["sleep", "0.1"])
    raise RuntimeError(f"{host.name}: the marker line never reached the journal")


def _field(name: str, value: str) -> bytes:
    """One export-format field; a value with a newline uses the binary form (name, newline, le64 size, data)."""
    data = value.encode()
    if b"\n" in data:
        return name.encode() + b"\n" + struct.pack("<Q", len(data)) + data + b"\n"
    return name.encode() + b"=" + data + b"\n"


def export_stream(messages: list[str], marker: dict[str, str]) -> bytes:
    """Kernel-transport entries, one per message, 1 µs apart right after the marker entry."""
    realtime, monotonic = int(marker["__REALTIME_TIMESTAMP"]), int(marker["__MONOTONIC_TIMESTAMP"])
    stream = b""
    for offset, message in enumerate(messages, start=1):
        fields = {
            "__REALTIME_TIMESTAMP": str(realtime + offset), "__MONOTONIC_TIMESTAMP": str(monotonic + offset),
            "_BOOT_ID": marker["_BOOT_ID"], "_MACHINE_ID": marker["_MACHINE_ID"],
            "_HOSTNAME": marker.get("_HOSTNAME", ""), "_TRANSPORT": "kernel", "PRIORITY": "4",
            "SYSLOG_FACILITY": "0", "SYSLOG_IDENTIFIER": "kernel", "MESSAGE": message,
        }  # fmt: skip
        stream += b"".join(_field(name, value) for name, value in fields.items()) + b"\n"
    return stream


def inject_kernel_lines(host: TestHost, messages: list[str]) -> None:
    """Make `messages` kernel entries of the host's current boot, after everything it logged so far."""
    marker = _marker(host)
    folder = f"/run/log/journal/{marker['_MACHINE_ID']}"
    target = f"{folder}/specops-kernel-{uuid.uuid4().hex[:8]}.journal"
    host.exec([JOURNAL_REMOTE, "-o", target, "-"], input=export_stream(messages, marker))
