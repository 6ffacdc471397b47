"""The rendezvous of a multi-node engine (`--nnodes N --node-rank R --dist-init-addr ADDR:PORT`), as torch's
TCPStore does it for SGLang: rank 0 listens on the dist-init port and waits for the other N-1 ranks; the
others connect (retrying until rank 0 is up). Then every rank holds its connection: a lost peer takes the
engine down on both sides, as NCCL's watchdog does when a node dies.

Env knob: SGLANG_TESTENGINE_DIST_TIMEOUT seconds (default 300) for both waits. Rank 0 timing out prints
torch's own words: `torch.distributed.DistStoreError: Timed out after N seconds waiting for clients.
1/2 clients joined.`
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time

from sglang.srt.testengine_log import log

STORE_ERROR = "torch.distributed.DistStoreError"


def _timeout() -> float:
    value = os.environ.get("SGLANG_TESTENGINE_DIST_TIMEOUT", "")
    return float(value) if value else 300.0


def split_address(address: str) -> tuple[str, int]:
    """ADDR:PORT (an IPv6 address in brackets) -> (host, port), as SGLang reads --dist-init-addr."""
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def _fail(message: str) -> None:
    sys.stderr.write(f"{STORE_ERROR}: {message}\n")
    sys.stderr.flush()
    os._exit(1)


def _watch(peer: socket.socket, who: str) -> None:
    """Block until the peer's connection ends, then take this rank down (the engine cannot go on without it)."""
    try:
        while peer.recv(64):
            pass
    except OSError:
        pass
    log(f"Lost connection to {who}: the distributed engine cannot continue. Exiting.")
    sys.stdout.flush()
    os._exit(1)


def _serve_store(nnodes: int, host: str, port: int) -> list[socket.socket]:
    timeout = _timeout()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("::" if family == socket.AF_INET6 else "0.0.0.0", port))  # torch's store binds every interface
    listener.listen(nnodes)
    log(f"Rank 0 hosts the store on port {port}; waiting for {nnodes - 1} more node(s)")
    peers: list[socket.socket] = []
    deadline = time.monotonic() + timeout
    while len(peers) < nnodes - 1:
        listener.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            peer, _ = listener.accept()
        except TimeoutError:
            _fail(f"Timed out after {int(timeout)} seconds waiting for clients. {len(peers) + 1}/{nnodes} clients "
                  "joined.")  # fmt: skip
        peer.settimeout(None)
        rank = peer.recv(16).decode(errors="replace").strip()
        log(f"Node rank {rank} joined ({len(peers) + 2}/{nnodes})")
        peers.append(peer)
    listener.close()
    for peer in peers:
        peer.sendall(b"go\n")
    return peers


def _join_store(rank: int, host: str, port: int) -> socket.socket:
    timeout = _timeout()
    deadline = time.monotonic() + timeout
    while True:
        try:
            peer = socket.create_connection((host, port), timeout=2)
            break
        except OSError:
            if time.monotonic() >= deadline:
                _fail(f"Timed out after {int(timeout)} seconds waiting to connect to the store at {host}:{port}.")
            time.sleep(0.2)
    peer.sendall(f"{rank}\n".encode())
    peer.settimeout(max(deadline - time.monotonic(), 0.001))
    try:
        if not peer.recv(16):
            _fail(f"Connection to the store at {host}:{port} closed before all clients joined.")
    except TimeoutError:
        _fail(f"Timed out after {int(timeout)} seconds waiting for all clients to join the store at {host}:{port}.")
    peer.settimeout(None)
    return peer


def rendezvous(nnodes: int, rank: int, address: str) -> None:
    """Wait for every rank; afterwards a watcher per peer connection ends this process when it drops."""
    host, port = split_address(address)
    log(f"Init torch distributed begin. nnodes={nnodes}, node_rank={rank}, dist_init_addr={address}")
    if rank == 0:
        peers = [(peer, "a worker node") for peer in _serve_store(nnodes, host, port)]
    else:
        peers = [(_join_store(rank, host, port), "the rank 0 node")]
    for peer, who in peers:
        threading.Thread(target=_watch, args=(peer, who), daemon=True).start()
    log("Init torch distributed ends.")
