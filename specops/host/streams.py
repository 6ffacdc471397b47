"""Pumping one exec channel: stdin in, stdout and stderr out, all at once, under one deadline.

Why threads: stdout and stderr share one SSH flow-control window. Reading only stdout while the command fills
stderr (or writing a big stdin while the command already prints) stalls both ends: a deadlock that only shows
with large outputs. One thread per direction, each blocked in a short-timeout read, avoids it without polling.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

CHUNK = 2**20
SEND_CHUNK = 2**16


class DeadlinePassed(Exception):
    """Internal: the command's timeout ran out (the transport turns it into RemoteTimeout)."""


class ExecChannel(Protocol):
    """The part of paramiko's Channel used here (its timeout set to a short poll interval)."""

    def recv(self, nbytes: int, /) -> bytes: ...
    def recv_stderr(self, nbytes: int, /) -> bytes: ...
    def send(self, s: bytes, /) -> int: ...
    def shutdown_write(self) -> None: ...


def exchange(channel: ExecChannel, input: bytes | None, deadline: float) -> tuple[bytes, bytes]:
    """Feed stdin (then EOF) and drain stdout and stderr until both end; DeadlinePassed past `deadline`."""
    stop = threading.Event()
    stderr = bytearray()
    reader = threading.Thread(target=_drain, args=(channel.recv_stderr, stderr, deadline, stop), daemon=True)
    reader.start()
    if input:
        threading.Thread(target=_feed, args=(channel, input, stop), daemon=True).start()
    else:
        channel.shutdown_write()  # the command sees EOF at once instead of waiting for input forever
    stdout = bytearray()
    try:
        if not _drain(channel.recv, stdout, deadline, stop):
            raise DeadlinePassed
        reader.join(max(0.0, deadline - time.monotonic()))
        if reader.is_alive():
            raise DeadlinePassed
    finally:
        stop.set()
    return bytes(stdout), bytes(stderr)


def _drain(recv: Callable[[int], bytes], sink: bytearray, deadline: float, stop: threading.Event) -> bool:
    """Read until EOF (True), or until the deadline passes or `stop` is set (False)."""
    while not stop.is_set():
        try:
            chunk = recv(CHUNK)
        except TimeoutError:
            if time.monotonic() > deadline:
                return False
            continue
        if not chunk:
            return True
        sink += chunk
    return False


def _feed(channel: ExecChannel, data: bytes, stop: threading.Event) -> None:
    """Send stdin, then EOF. A command that exits without reading it all is fine (like EPIPE for ssh)."""
    view = memoryview(data)
    try:
        while view and not stop.is_set():
            try:
                sent = channel.send(bytes(view[:SEND_CHUNK]))
            except TimeoutError:
                continue
            if sent == 0:  # the command closed its stdin
                return
            view = view[sent:]
        channel.shutdown_write()
    except Exception:  # a closed channel (any transport error) just ends stdin; run() reports the outcome
        return
