"""[engines.NAME]'s model and a rank's launch facts: apart from the validation (specops/config/engines.py) so
that the inventory can hold engines without importing what checks them against the hosts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from specops.config.fields import DistAddress, InterfaceNames, Name

_DOC = {
    "hosts": "the engine's hosts in rank order, at least 2: the first is rank 0, which serves HTTP and is gated",
    "dist_port": "the port rank 0 listens on for the other ranks (torch.distributed's store, --dist-init-addr)",
    "dist_addr": "how the other ranks reach rank 0: an IP address or host name; default: rank 0's ssh HostName",
    "tp_size": "tensor parallel size over all ranks (--tp-size); default: all GPUs of the hosts / pp_size",
    "pp_size": "pipeline parallel size over all ranks (--pp-size)",
    "nccl_socket_ifname": "NCCL_SOCKET_IFNAME of every rank: the interface(s) NCCL uses, e.g. 'eth0' or '^docker'",
    "gloo_socket_ifname": "GLOO_SOCKET_IFNAME of every rank: the interface Gloo (and the store) uses",
}


class EngineSpec(BaseModel):
    """[engines.NAME]: one SGLang engine over several hosts, each keeping its own [hosts.NAME] table."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    name: Name
    hosts: list[Name] = Field(description=_DOC["hosts"])
    dist_port: int = Field(default=5000, ge=1, le=65535, description=_DOC["dist_port"])
    dist_addr: DistAddress | None = Field(default=None, description=_DOC["dist_addr"])
    tp_size: int | None = Field(default=None, ge=1, le=1024, description=_DOC["tp_size"])
    pp_size: int = Field(default=1, ge=1, le=64, description=_DOC["pp_size"])
    nccl_socket_ifname: InterfaceNames | None = Field(default=None, description=_DOC["nccl_socket_ifname"])
    gloo_socket_ifname: InterfaceNames | None = Field(default=None, description=_DOC["gloo_socket_ifname"])

    @property
    def nnodes(self) -> int:
        return len(self.hosts)

    def environment(self) -> dict[str, str]:
        """The interface variables every rank's unit sets (only those configured)."""
        pairs = (("NCCL_SOCKET_IFNAME", self.nccl_socket_ifname), ("GLOO_SOCKET_IFNAME", self.gloo_socket_ifname))
        return {name: value for name, value in pairs if value is not None}


@dataclass(frozen=True)
class Rank:
    """One rank of a multi-node engine: what its unit adds to the single-host launch command."""

    engine: str
    rank: int
    nnodes: int
    dist_init_addr: str  # ADDR:PORT (an IPv6 address in brackets)
    tp_size: int
    pp_size: int
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def serves_http(self) -> bool:
        return self.rank == 0


def engine_unsupported(name: str, engine: EngineSpec) -> str:
    """The refusal of a command that does not handle multi-node engines yet (rather than a wrong action)."""
    return (
        f"engine {name!r} spans hosts {', '.join(engine.hosts)}: this command does not support multi-node "
        f"engines yet (`specops render {name}` does)"
    )


def refuse_engine_ranks(engines: Mapping[str, EngineSpec], hosts: list[str], action: str) -> None:
    """Refuse to `action` (deploy, restart, roll back) a host that is a rank of a multi-node engine, alone.

    Why: a rank's unit carries --nnodes/--node-rank; a single-host release, restart or rollback of one rank would
    leave the other ranks waiting at the rendezvous (or start a single-host engine in the engine's place), so the
    engine stops serving. Read-only commands (doctor, status, logs) still take a rank by its host name."""
    from specops.errors import UsageError

    for engine in engines.values():
        for rank, host in enumerate(engine.hosts):
            if host in hosts:
                raise UsageError(
                    f"host {host!r} is rank {rank} of engine {engine.name!r} ({', '.join(engine.hosts)}): "
                    f"specops does not {action} one rank of a multi-node engine alone",
                    hint="see docs/multinode.md (an engine is deployed, restarted and rolled back as one)",
                )
