"""SSH transport: the ONLY module that imports paramiko (a layering test enforces it).

For now it resolves inventory targets through ~/.ssh/config the way OpenSSH would (HostName, User, Port,
IdentityFile, UserKnownHostsFile), so `specops hosts` shows where specops will really connect.
"""

from __future__ import annotations

import getpass
import os
from pathlib import Path

from specops.host.target import SshTarget, split_ssh_spec

DEFAULT_SSH_CONFIG = Path("~/.ssh/config")


def resolve_ssh_target(spec: str, ssh_config: Path | None = None) -> SshTarget:
    """Apply ~/.ssh/config to an inventory `ssh` value; explicit user/port in the value win."""
    import paramiko

    user, host, port = split_ssh_spec(spec)
    config_path = (ssh_config or DEFAULT_SSH_CONFIG).expanduser()
    options: dict[str, object] = {}
    if config_path.is_file():
        options = dict(paramiko.SSHConfig.from_path(str(config_path)).lookup(host))
    identity = options.get("identityfile", [])
    known_hosts = str(options.get("userknownhostsfile", "")).split()
    return SshTarget(
        alias=spec,
        hostname=str(options.get("hostname", host)),
        user=user or str(options.get("user") or getpass.getuser()),
        port=port or int(str(options.get("port", 22))),
        identity_files=tuple(os.path.expanduser(str(p)) for p in (identity if isinstance(identity, list) else [])),
        known_hosts_files=tuple(os.path.expanduser(p) for p in known_hosts),
        proxy_jump=str(options["proxyjump"]) if "proxyjump" in options else None,
    )
