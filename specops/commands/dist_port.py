"""Pure builder for one rank's side of a multi-node engine's dist port test (specops/remote/distport.py).

Why one builder: the doctor runs it without a plan, and a deploy's preflight runs the very command its plan
shows (specops/deploy/engine_commands.py), so the command line is written once.
"""

from __future__ import annotations

from specops.remote.bundle import distport_script

LISTEN_S = 20.0  # rank 0's listener stays up this long at most (it ends once every rank connected)
# each worker retries a refused connect this long: rank 0's own connection (and its listener) may come up
# seconds later, through a jump host or on a loaded machine
CONNECT_S = 15.0


def split_dist_addr(dist_init_addr: str) -> tuple[str, int]:
    """'10.1.0.11:5000' -> ('10.1.0.11', 5000); '[fd00::1]:5000' -> ('fd00::1', 5000)."""
    host, _, port = dist_init_addr.rpartition(":")
    return host.strip("[]"), int(port)


def dist_port_argv(python: str, rank: int, nnodes: int, dist_init_addr: str) -> list[str]:
    """Rank 0 listens (for nnodes - 1 connects), the others connect: the host's Python, no site, no user path."""
    address, port = split_dist_addr(dist_init_addr)
    if rank == 0:
        args = ["listen", str(port), str(LISTEN_S), str(nnodes - 1)]
    else:
        args = ["connect", address, str(port), str(CONNECT_S)]
    return [python, "-I", "-S", "-c", distport_script(), *args]
