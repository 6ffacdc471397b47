"""Transports behind one `Host` protocol (base.py): SSH (ssh.py), this machine (local.py), a recording (recording.py).

Import the concrete module you need; this package imports nothing heavy (paramiko loads only with ssh.py).
"""

from specops.host.base import Host, Result, Tunnel

__all__ = ["Host", "Result", "Tunnel"]
