"""Connections shared by the hosts of one run: ONE connection per jump host, however many hosts it leads to.

A fleet command reaches each host in its own thread; the first thread to need the bastion opens it, the others
wait for it and then open their own channel through it. A bastion that could not be reached fails every host
that was waiting for it with the same error at once (not one timeout after another). The connections live until
the process ends (or `close_all`): a deploy's canary and its later batches use the same bastion connection.
"""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class SharedConnections(Generic[T]):
    """Keyed, thread-safe, opened on first use; `opened` counts real opens (for tests and benchmarks)."""

    def __init__(self, close: Callable[[T], None], alive: Callable[[T], bool]) -> None:
        self._close, self._alive = close, alive
        self._lock = threading.Lock()
        self._key_locks: dict[Hashable, threading.Lock] = {}
        self._open: dict[Hashable, T] = {}
        self._failed: dict[Hashable, tuple[float, BaseException]] = {}
        self.opened = 0

    def get(self, key: Hashable, open_connection: Callable[[], T]) -> T:
        arrived = time.monotonic()
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            current = self._open.get(key)
            if current is not None and self._alive(current):
                return current
            failure = self._failed.get(key)
            if failure is not None and failure[0] >= arrived:  # it failed while this thread waited for it
                raise failure[1]
            try:
                connection = open_connection()
            except BaseException as error:
                self._failed[key] = (time.monotonic(), error)
                raise
            self._open[key] = connection
            self.opened += 1
            return connection

    def close_all(self) -> None:
        with self._lock:
            connections, self._open = list(self._open.values()), {}
            self._failed.clear()
        for connection in connections:
            self._close(connection)


def register_at_exit(pool: SharedConnections[T]) -> SharedConnections[T]:
    atexit.register(pool.close_all)
    return pool
