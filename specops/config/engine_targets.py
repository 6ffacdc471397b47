"""A multi-node engine resolved into one Target per rank: each host with the engine's profile and its Rank.

The profile is the one named, else rank 0's host's; every rank runs it, because the ranks of one engine must
agree on every launch flag. SGLang's rules are checked per rank as for a host, plus the engine's own: its
parallelism is the engine's (tp_size, pp_size), so a profile's pp_size would be ignored.
"""

from __future__ import annotations

from collections.abc import Callable

from specops.config.engine_spec import EngineSpec, Rank
from specops.config.engines import engine_tp
from specops.config.inventory import HostSpec
from specops.config.loader import Config, Target
from specops.config.values import dist_address
from specops.errors import ConfigError


def resolve_engine(
    config: Config, name: str, profile_name: str | None, address_of: Callable[[HostSpec], str]
) -> list[Target]:
    """The engine's ranks in order. `address_of(host)` is rank 0's address when the engine sets no dist_addr
    (the CLI passes its ssh HostName); it must be an IP or host name, or nothing renders."""
    engine = config.inventory.engines[name]
    hosts = [config.inventory.hosts[host] for host in engine.hosts]
    profile_name = profile_name or hosts[0].profile
    targets = [config.resolve(host.name, profile_name) for host in hosts]
    _check_engine_rules(config, engine, targets[0])
    tp = engine_tp(engine, hosts)
    if tp is None:  # the loader refused this; kept for the type checker
        raise ConfigError([f"{config.display}: engines.{name}.tp_size: not set and not derivable from gpus"])
    address = _dist_address(config, engine, address_of(hosts[0]))
    return [
        Target(host=target.host, profile=target.profile,
               rank=Rank(engine=name, rank=index, nnodes=engine.nnodes, dist_init_addr=address, tp_size=tp,
                         pp_size=engine.pp_size, env=engine.environment()))
        for index, target in enumerate(targets)
    ]  # fmt: skip


def _dist_address(config: Config, engine: EngineSpec, fallback: str) -> str:
    """ADDR:PORT for --dist-init-addr; an address from ~/.ssh/config is checked like a configured one."""
    address = engine.dist_addr or fallback
    try:
        address = dist_address(address)
    except ValueError as exc:
        raise ConfigError(
            [f"{config.display}: engines.{engine.name}.dist_addr: not set, and rank 0's ssh HostName {exc}"],
            hint=f"set engines.{engine.name}.dist_addr to the address the other ranks reach rank 0 at",
        ) from None
    host = f"[{address}]" if ":" in address else address
    return f"{host}:{engine.dist_port}"


def _check_engine_rules(config: Config, engine: EngineSpec, target: Target) -> None:
    """The profile's rules that depend on the engine's parallelism."""
    profile, where = target.profile, f"{config.display}: engines.{engine.name}"
    lines = []
    if profile.server.pp_size != 1:
        source = config.profiles[profile.name].source
        lines.append(f"{source}: server.pp_size: a multi-node engine's pp_size is the engine's: set "
                     f"engines.{engine.name}.pp_size instead")  # fmt: skip
    if profile.is_dflash_family and engine.pp_size != 1:
        lines.append(f"{where}.pp_size: {profile.algorithm} needs pp_size = 1; got {engine.pp_size}")
    if lines:
        raise ConfigError(lines, hint=f"these are SGLang's own start-up rules for {profile.algorithm}")


def k8s_target(ranks: list[Target]) -> Target:
    """The engine as one Kubernetes render: rank 0's host and profile with the engine's parallelism and
    k8s.nodes = its ranks, so the existing LeaderWorkerSet code renders one group of that size (the LWS, not
    the engine's dist_addr or interface names, says how pods reach the leader)."""
    first, rank = ranks[0], ranks[0].rank
    if rank is None:
        return first
    k8s = first.host.k8s.model_copy(update={"nodes": rank.nnodes})
    host = first.host.model_copy(update={"tp_size": rank.tp_size, "k8s": k8s})
    server = first.profile.server.model_copy(update={"pp_size": rank.pp_size})
    return Target(host=host, profile=first.profile.model_copy(update={"server": server}))
