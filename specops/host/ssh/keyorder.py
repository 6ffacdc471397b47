"""Which keys to offer, in OpenSSH's order (ssh_config(5) IdentityFile, IdentitiesOnly; pure, no paramiko):

1. the IdentityFile keys that ssh-agent holds (matched through KEY.pub), signed by the agent: no passphrase;
2. the agent's other keys, unless IdentitiesOnly;
3. the IdentityFile keys not in the agent, read from their files (a passphrase is asked only here).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from specops.host.ssh.resolve import default_identity_files
from specops.host.ssh.target import SshTarget


@dataclass(frozen=True)
class Candidate:
    """One key to offer: the agent's key number `agent_index`, or the key file `path`."""

    label: str  # how "tried: ..." in an authentication error names it
    agent_index: int | None = None
    path: str | None = None


def public_blob(path: str) -> bytes | None:
    """The key's public blob from PATH.pub (matching it with the agent's keys needs no passphrase)."""
    try:
        return base64.b64decode(Path(f"{path}.pub").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None


def key_order(target: SshTarget, agent_keys: Sequence[tuple[bytes, str]]) -> list[Candidate]:
    """`agent_keys`: (public blob, "type comment") of each key the agent holds, in the agent's order."""
    files = [path for path in default_identity_files(target) if os.path.isfile(path)]
    named = {blob: path for path in files if (blob := public_blob(path)) is not None}
    held = [index for index, (blob, _) in enumerate(agent_keys) if blob in named]
    order = [Candidate(f"{named[agent_keys[index][0]]} (ssh-agent)", agent_index=index) for index in held]
    if not target.identities_only:
        order += [
            Candidate(f"ssh-agent {described}".strip(), agent_index=index)
            for index, (_, described) in enumerate(agent_keys)
            if index not in held
        ]
    in_agent = {named[agent_keys[index][0]] for index in held}
    return order + [Candidate(path, path=path) for path in files if path not in in_agent]
