"""Transports behind one `Host` protocol (base.py): SSH (ssh.py), this machine (local.py), a recording (recording.py).

Import the concrete module you need; this package imports nothing heavy (paramiko loads only with ssh.py).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from specops.host.base import Host, Result, Tunnel

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec

__all__ = ["Host", "Result", "Tunnel", "ssh_opener"]


def ssh_opener(spec: HostSpec) -> Callable[[], AbstractContextManager[Host]]:
    """A connect-later function: fleets call it inside each worker thread, so hosts connect in parallel, and
    paramiko is imported only when a connection is really made."""

    def open_host() -> AbstractContextManager[Host]:
        from specops.host.ssh import connect

        return connect(spec)

    return open_host
