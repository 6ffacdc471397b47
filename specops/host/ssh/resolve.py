"""An inventory `ssh` value (and its `jump`) resolved through ~/.ssh/config into an SshTarget, as OpenSSH would.

Pure: no paramiko, no network. connection.py connects to what this returns; `specops hosts` shows it.

ProxyJump `a,b` for host T means: reach `a` (with a's own config, and a's own ProxyJump or ProxyCommand if it
has one, as `ssh -W` would), then `b` through `a`, then T through `b`. The inventory's `jump` replaces the
config's ProxyJump/ProxyCommand for that host, like `ssh -J` on the command line; `none` means directly.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from pathlib import Path

from specops.errors import ConfigError
from specops.host.ssh.config import local_user, lookup
from specops.host.ssh.target import SshTarget, split_ssh_spec

DEFAULT_SSH_CONFIG = Path("~/.ssh/config")
DEFAULT_IDENTITIES = tuple(f"~/.ssh/id_{kind}" for kind in ("rsa", "ecdsa", "ecdsa_sk", "ed25519", "ed25519_sk"))
MAX_HOPS = 8
_TOKEN = re.compile(r"%(.)")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def resolve_ssh_target(
    spec: str, ssh_config_path: Path | None = None, jump: str | None = None, environ: Mapping[str, str] | None = None
) -> SshTarget:
    """Apply ~/.ssh/config to an inventory `ssh` value; explicit user/port in the value win."""
    config = (ssh_config_path or DEFAULT_SSH_CONFIG).expanduser()
    return _resolve(spec, config, jump, os.environ if environ is None else environ, chain=())


def _resolve(
    spec: str, config: Path, jump: str | None, environ: Mapping[str, str], chain: tuple[str, ...]
) -> SshTarget:
    user, host, port = _split(spec, config)
    options = lookup(config, host, user)
    first = {key: values[0] for key, values in options.items()}
    hostname = _expand(first.get("hostname", host), {"h": host}, "HostName", environ=None)
    user = user or first.get("user") or local_user()
    port = port or _port(first.get("port", "22"), config)
    alias = first.get("hostkeyalias")
    tokens = _tokens(host, hostname, user, port, alias)
    paths = {
        key: tuple(_path(value, tokens, key, environ) for value in options.get(key, []))
        for key in ("identityfile", "certificatefile")
    }
    revoked = first.get("revokedhostkeys")
    proxy_jump, proxy_command = _proxy(first, jump)
    target = SshTarget(
        alias=spec,
        hostname=hostname,
        user=user,
        port=port,
        identity_files=paths["identityfile"],
        known_hosts_files=_known_files(options.get("userknownhostsfile"), tokens, config, environ),
        global_known_hosts_files=_known_files(options.get("globalknownhostsfile"), None, config, environ),
        host_key_alias=alias,
        revoked_host_keys=None if revoked is None else _path(revoked, tokens, "RevokedHostKeys", environ),
        proxy_jump=proxy_jump,
        proxy_command=proxy_command,
        identities_only=first.get("identitiesonly", "no").lower() == "yes",
        connect_timeout=float(first["connecttimeout"]) if "connecttimeout" in first else None,
        certificate_files=paths["certificatefile"],
        agent_socket=_agent(first.get("identityagent"), tokens, environ),
    )
    if proxy_jump is None:
        return target
    return _with_jumps(target, proxy_jump, config, environ, chain)


def _with_jumps(
    target: SshTarget, proxy_jump: str, config: Path, environ: Mapping[str, str], chain: tuple[str, ...]
) -> SshTarget:
    """Resolve each hop; only the first keeps its own ProxyJump/ProxyCommand (`ssh -J` ignores the others')."""
    hops = parse_jump(proxy_jump, config)
    if len(chain) + len(hops) > MAX_HOPS or target.alias in chain or set(hops) & {*chain, target.alias}:
        raise ConfigError(
            [f"{config}: ProxyJump for {target.alias} loops or has more than {MAX_HOPS} hops: {' -> '.join(chain)}"],
            hint="exclude the jump host from its own ProxyJump, e.g. `Host * !bastion`",
        )
    resolved = []
    for index, hop in enumerate(hops):
        own_proxy = None if index == 0 else "none"
        resolved.append(_resolve(hop, config, own_proxy, environ, chain=(*chain, target.alias)))
    outer = resolved[0].jumps  # the first hop's own hops come before it
    return _replace_jumps(target, (*outer, _replace_jumps(resolved[0], ()), *resolved[1:]))


def _replace_jumps(target: SshTarget, jumps: tuple[SshTarget, ...]) -> SshTarget:
    from dataclasses import replace

    return replace(target, jumps=jumps)


def parse_jump(value: str, config: Path | str = "ProxyJump") -> list[str]:
    """`[ssh://][user@]host[:port]` hops, comma-separated, as `ssh` values; [] for `none`."""
    if value.strip().lower() == "none":
        return []
    hops = []
    for raw in value.split(","):
        hop = raw.strip().removeprefix("ssh://").rstrip("/")
        if not hop or hop.startswith("-") or any(c.isspace() or c in "'\"`$;&|<>\\" for c in hop):
            raise ConfigError([f"{config}: ProxyJump {value!r}: {raw.strip()!r} is not [user@]host[:port]"])
        _split(hop, config)
        hops.append(hop)
    return hops


def default_identity_files(target: SshTarget) -> tuple[str, ...]:
    """The keys OpenSSH tries: the IdentityFiles, or ~/.ssh/id_* when none is named."""
    return target.identity_files or tuple(os.path.expanduser(path) for path in DEFAULT_IDENTITIES)


def _proxy(first: Mapping[str, str], jump: str | None) -> tuple[str | None, str | None]:
    if jump is not None:  # the inventory's jump wins over ~/.ssh/config, like `ssh -J`
        return (None, None) if jump.strip().lower() == "none" else (jump, None)
    proxy_jump = first.get("proxyjump")
    proxy_command = first.get("proxycommand")
    return (
        None if proxy_jump is None or proxy_jump.lower() == "none" else proxy_jump,
        None if proxy_command is None or proxy_command.lower() == "none" else proxy_command,
    )


def _split(spec: str, config: Path | str) -> tuple[str | None, str, int | None]:
    try:
        user, host, port = split_ssh_spec(spec)
    except ValueError:
        raise ConfigError([f"{config}: {spec!r} is not [user@]host[:port]"]) from None
    if port is not None and not 1 <= port <= 65535:
        raise ConfigError([f"{config}: {spec!r}: port {port} is outside 1-65535"])
    return user, host, port


def _port(value: str, config: Path) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 65535:
        raise ConfigError([f"{config}: Port {value!r} is not a port number (1-65535)"])
    return int(value)


def _tokens(alias: str, hostname: str, user: str, port: int, key_alias: str | None) -> dict[str, str]:
    """ssh_config(5) TOKENS for paths and commands (%k: HostKeyAlias, else the alias as given)."""
    return {
        "%": "%", "d": os.path.expanduser("~"), "u": local_user(), "h": hostname, "r": user, "p": str(port),
        "n": alias, "i": str(os.getuid()), "l": socket.gethostname(), "L": socket.gethostname().split(".")[0],
        "k": key_alias or alias,
    }  # fmt: skip


def _known_files(
    values: list[str] | None, tokens: Mapping[str, str] | None, config: Path, environ: Mapping[str, str]
) -> tuple[str, ...] | None:
    """User/GlobalKnownHostsFile: None when not set (the defaults apply), () for `none`, else the files, which
    REPLACE the defaults as in OpenSSH. User files take `~` and tokens; global ones are used as written."""
    if values is None:
        return None
    if "none" in (value.lower() for value in values):
        if len(values) > 1:
            raise ConfigError([f"{config}: known hosts files {' '.join(values)!r}: `none` must appear alone"])
        return ()
    if tokens is None:
        return tuple(values)
    return tuple(_path(value, tokens, "UserKnownHostsFile", environ) for value in values)


def _expand(value: str, tokens: Mapping[str, str], keyword: str, environ: Mapping[str, str] | None) -> str:
    """%-tokens, then (for paths) ${VAR} from the environment; an unknown token or variable is an error."""

    def token(found: re.Match[str]) -> str:
        if found.group(1) not in tokens and found.group(1) != "%":
            raise ConfigError([f"~/.ssh/config: {keyword} {value!r}: unknown token %{found.group(1)}"])
        return "%" if found.group(1) == "%" else tokens[found.group(1)]

    def variable(found: re.Match[str]) -> str:
        assert environ is not None
        if found.group(1) not in environ:
            raise ConfigError([f"~/.ssh/config: {keyword} {value!r}: ${{{found.group(1)}}} is not set"])
        return environ[found.group(1)]

    expanded = _TOKEN.sub(token, value)
    return _ENV.sub(variable, expanded) if environ is not None else expanded


def _path(value: str, tokens: Mapping[str, str], keyword: str, environ: Mapping[str, str]) -> str:
    return os.path.expanduser(_expand(value, tokens, keyword, environ)) if value != "none" else value


def _agent(value: str | None, tokens: Mapping[str, str], environ: Mapping[str, str]) -> str | None:
    """IdentityAgent: `none`, `SSH_AUTH_SOCK` (the default), `$VAR`, or a socket path."""
    if value is None or value == "SSH_AUTH_SOCK":
        return environ.get("SSH_AUTH_SOCK") or None
    if value.lower() == "none":
        return None
    if value.startswith("$") and not value.startswith("${"):
        return environ.get(value[1:]) or None
    return _path(value, tokens, "IdentityAgent", environ)
