"""Transports behind one `Host` protocol (base.py): SSH (ssh/), this machine (local.py), a recording (recording.py).

Import the concrete module you need; this package imports nothing heavy (paramiko loads only with
ssh/connection.py, ssh/auth.py and ssh/channels.py).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from specops.host.base import Host, Result, Tunnel

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.secrets import Secret

__all__ = ["Host", "Result", "Tunnel", "plain_opener", "ssh_opener"]


def ssh_opener(spec: HostSpec, become_password: Secret | None = None) -> Callable[[], AbstractContextManager[Host]]:
    """A connect-later function: fleets call it inside each worker thread, so hosts connect in parallel, and
    paramiko is imported only when a connection is really made. A host with `become = "sudo"` comes back
    acting through sudo (checked once on connect; `become_password` is the run's --ask-become-pass answer)."""

    def open_host() -> AbstractContextManager[Host]:
        from specops.host.become import Become
        from specops.host.ssh.connection import connect

        host = connect(spec)
        if spec.uses_sudo:
            try:
                host.become(Become(user=spec.become_user, password=become_password))
            except BaseException:
                host.close()
                raise
        return host

    return open_host


def plain_opener(
    name: str, ssh: str, jump: str | None, sudo_as: str | None
) -> Callable[[], AbstractContextManager[Host]]:
    """`ssh_opener` for settings already validated by an earlier run (a doctor's cached plan, which connects
    before the config's models load): the host's name, its `ssh` and `jump` values, and the user it acts as
    through sudo (None: no sudo). No password: a plain doctor never asks for one."""

    def open_host() -> AbstractContextManager[Host]:
        from specops.host.become import Become
        from specops.host.ssh.connection import connect
        from specops.host.ssh.target import PlainReach

        host = connect(PlainReach(name, ssh, jump))
        if sudo_as is not None:
            try:
                host.become(Become(user=sudo_as))
            except BaseException:
                host.close()
                raise
        return host

    return open_host
