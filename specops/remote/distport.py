"""The dist port's test, run on each rank of a multi-node engine by the host's own Python (stdlib, 3.8+).

Why a real listener and a real connect: a worker that cannot reach rank 0's torch.distributed store (a
firewall, a wrong route or interface) makes rank 0 wait out its timeout ("1/2 clients joined") after a long
model load; a ping proves nothing about a TCP port. Rank 0 binds the port for a few seconds (or, when it is
taken, says which process holds it, and that process's systemd unit) while every other rank connects to it.
Each rank also reports its RDMA devices and whether `nvidia_peermem` is loaded, for InfiniBand engines.

    python -IS -c SCRIPT listen PORT WAIT_S EXPECTED     (rank 0; a `stop` line on stdin ends the wait)
    python -IS -c SCRIPT connect ADDRESS PORT WAIT_S     (every other rank)

One JSON line on stdout: {"role": ..., "bound"/"connected": ..., "error": ..., "holder": ..., "rdma": [...],
"peermem": bool}.
"""

from __future__ import annotations

import errno
import json
import os
import select
import socket
import sys
import time
from typing import TextIO

TCP_LISTEN = "0A"


def rdma_facts() -> dict[str, object]:
    try:
        devices = sorted(os.listdir("/sys/class/infiniband"))
    except OSError:
        devices = []
    return {"rdma": devices, "peermem": os.path.isdir("/sys/module/nvidia_peermem")}


def holder_of(port: int) -> dict[str, object]:
    """The process listening on `port` ("pid N comm") and the systemd unit of its cgroup, when known."""
    inodes = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == TCP_LISTEN and int(fields[1].split(":")[-1], 16) == port:
                inodes.append("socket:[" + fields[9] + "]")
    for pid in (name for name in os.listdir("/proc") if name.isdigit()):
        try:
            if any(os.readlink("/proc/" + pid + "/fd/" + fd) in inodes for fd in os.listdir("/proc/" + pid + "/fd")):
                return {"holder": "pid " + pid + " " + _read("/proc/" + pid + "/comm"), "unit": _unit(pid)}
        except OSError:
            continue
    return {"holder": None, "unit": None}


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return "?"


def _unit(pid: str) -> str | None:
    for part in _read("/proc/" + pid + "/cgroup").split("/"):
        if part.endswith(".service"):
            return part
    return None


def _bound(port: int) -> socket.socket:
    """A listening socket on every address: IPv6 with IPv4 mapped (as torch's store binds), else IPv4 alone
    (a host with IPv6 turned off)."""
    try:
        server = socket.socket(socket.AF_INET6)
    except OSError:
        server = socket.socket(socket.AF_INET)
    else:
        server.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        server.bind(("", port))
    except OSError as error:
        family = server.family
        server.close()
        if error.errno != errno.EADDRNOTAVAIL or family != socket.AF_INET6:
            raise
        server = socket.socket(socket.AF_INET)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("", port))
    server.listen(16)
    return server


def listen(port: int, wait_s: float, expected: int) -> dict[str, object]:
    """Bind the port on every address (as torch's store does), accept up to `expected` connects, or stop early
    at a `stop` line on stdin: the caller's word that every other rank has answered (a worker that cannot reach
    the port never connects, and rank 0 need not hold it for the rest of `wait_s`)."""
    try:
        server = _bound(port)
    except OSError as error:
        found: dict[str, object] = {"bound": False, "error": _error_text(error)}
        if error.errno == errno.EADDRINUSE:
            found.update(holder_of(port))
        return found
    accepted: list[str] = []
    watched: list[socket.socket | TextIO] = [server] + ([sys.stdin] if sys.stdin is not None else [])
    deadline = time.monotonic() + wait_s
    while len(accepted) < expected and time.monotonic() < deadline:
        ready = select.select(watched, [], [], max(0.05, deadline - time.monotonic()))[0]
        if sys.stdin in ready:
            said = _read_stdin()
            if said is None:
                watched.remove(sys.stdin)  # stdin closed (or never given): only the deadline and the connects end it
            elif "stop" in said.split():
                break
        if server in ready:
            try:
                peer, address = server.accept()
            except OSError:
                continue
            peer.close()
            accepted.append(str(address[0]))
    server.close()
    return {"bound": True, "accepted": accepted}


def _read_stdin() -> str | None:
    """What stdin holds now; None at its end."""
    try:
        data = os.read(sys.stdin.fileno(), 4096)
    except OSError:
        return None
    return data.decode("ascii", "replace") if data else None


def connect(address: str, port: int, wait_s: float) -> dict[str, object]:
    """Connect until it works or `wait_s` passes: a refusal (or a timeout) may only mean rank 0's listener is not
    up yet; any other error (no route to the host, an unknown address) is the answer at once."""
    deadline, last = time.monotonic() + wait_s, "no attempt"
    while time.monotonic() < deadline:
        try:
            socket.create_connection((address, port), timeout=min(3.0, max(0.2, deadline - time.monotonic()))).close()
            return {"connected": True}
        except OSError as error:
            last = _error_text(error)
            if not isinstance(error, (ConnectionRefusedError, socket.timeout)):
                break  # no route, no such address: trying again changes nothing
        time.sleep(0.2)
    return {"connected": False, "error": last}


def _error_text(error: OSError) -> str:
    if isinstance(error, socket.timeout):
        return "timed out"
    name = errno.errorcode.get(error.errno or 0, "")
    return (name + ": " if name else "") + (error.strerror or str(error))


def main(argv: list[str]) -> int:
    role = argv[0]
    if role == "listen":
        found = listen(int(argv[1]), float(argv[2]), int(argv[3]))
    else:
        found = connect(argv[1], int(argv[2]), float(argv[3]))
    found.update(rdma_facts())
    found["role"] = role
    sys.stdout.write(json.dumps(found) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
