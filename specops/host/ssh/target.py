"""Parse an inventory `ssh` value: an alias, `host`, `user@host`, `host:port` or `[v6]:port`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class SshTarget:
    """Where and as whom to connect, after ~/.ssh/config is applied."""

    alias: str
    hostname: str
    user: str
    port: int
    identity_files: tuple[str, ...]
    known_hosts_files: tuple[str, ...] | None = None  # UserKnownHostsFile: None = not set (the defaults apply)
    global_known_hosts_files: tuple[str, ...] | None = None  # GlobalKnownHostsFile, likewise
    host_key_alias: str | None = None  # HostKeyAlias: the name known_hosts and certificates are checked for
    revoked_host_keys: str | None = None  # RevokedHostKeys: a file of revoked public keys
    proxy_jump: str | None = None
    proxy_command: str | None = None
    identities_only: bool = False
    connect_timeout: float | None = None
    certificate_files: tuple[str, ...] = ()
    agent_socket: str | None = None  # ssh-agent's socket (SSH_AUTH_SOCK or IdentityAgent); None: no agent
    jumps: tuple[SshTarget, ...] = ()  # the ProxyJump hops, outermost first, each resolved like a host

    @property
    def route(self) -> str:
        """`bastion -> gpu-1`: the hops and the host, the way `specops hosts` and errors show the path."""
        via = [hop.alias for hop in self.jumps] or (["ProxyCommand"] if self.proxy_command else [])
        return " -> ".join([*via, self.alias])

    @property
    def known_hosts_name(self) -> str:
        """The name known_hosts is searched for, as OpenSSH does: HostKeyAlias as written when set, else the
        HostName, as `[host]:port` off port 22."""
        if self.host_key_alias:
            return self.host_key_alias
        return self.hostname if self.port == 22 else f"[{self.hostname}]:{self.port}"

    @property
    def principal(self) -> str:
        """The name a host certificate must list (OpenSSH: HostKeyAlias when set, else the HostName)."""
        return self.host_key_alias or self.hostname

    @property
    def address(self) -> str:
        """`user@host:port`, the way errors name the place specops tried to reach."""
        host = f"[{self.hostname}]" if ":" in self.hostname else self.hostname
        return f"{self.user}@{host}:{self.port}"


def split_ssh_spec(spec: str) -> tuple[str | None, str, int | None]:
    """`user@host:port` -> (user, host, port); parts that are absent come back as None."""
    user: str | None = None
    if "@" in spec:
        user, spec = spec.split("@", 1)
    port: int | None = None
    if spec.startswith("["):
        host, _, rest = spec[1:].partition("]")
        if rest.startswith(":"):
            port = int(rest[1:])
        return user, host, port
    if spec.count(":") == 1:
        spec, port_text = spec.split(":")
        port = int(port_text)
    return user, spec, port


class Reach(Protocol):
    """What connecting to an inventory host needs: its name, its `ssh` value and its `jump` hosts."""

    @property
    def name(self) -> str: ...
    @property
    def ssh(self) -> str: ...
    @property
    def jump(self) -> str | None: ...


@dataclass(frozen=True)
class PlainReach:
    """A Reach kept as plain values (a doctor's remembered plan), without the config's models."""

    name: str
    ssh: str
    jump: str | None
