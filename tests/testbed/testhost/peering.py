"""Let test hosts reach each other, as the ranks of one multi-node engine must.

    peer([a, b, c])      # every host now routes to every other host's address through this machine

Each host has one veth pair on its own /30 and no route beyond it. Peering adds, inside every host, a
route to each other host's /30 through its own outer end, and turns on IPv4 forwarding on the outer
ends of these hosts only (`net.ipv4.conf.stho<N>.forwarding`). The machine's own forwarding switch
(`conf.all`) and every other link stay as they were, so neither the machine's network nor another
session's test hosts become reachable from a peered host; the setting goes away with the link when a
host stops. A host's own address and known_hosts line do not change.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.testbed.testhost.host import TestHost
from tests.testbed.testhost.layout import outer_ip, outer_link


def _subnet(index: int) -> str:
    return f"10.200.{index}.0/30"


def _forward_on(link: str) -> None:
    """Forward packets that arrive on this outer end (per link: the machine-wide switch stays off)."""
    Path(f"/proc/sys/net/ipv4/conf/{link}/forwarding").write_text("1\n")


def _route_to_peers(host: TestHost, peers: list[TestHost]) -> None:
    commands = "".join(f"route replace {_subnet(p.index)} via {outer_ip(host.index)} dev eth0\n" for p in peers)
    subprocess.run(
        ["nsenter", "-t", str(host.systemd_pid), "-n", "ip", "-batch", "-"],
        input=commands, text=True, check=True, capture_output=True,
    )  # fmt: skip


def peer(hosts: list[TestHost]) -> None:
    """Make every host in `hosts` reach every other one at its address (host.ip), in both directions."""
    if len(hosts) < 2:
        raise ValueError("peering needs at least two test hosts")
    for host in hosts:
        _forward_on(outer_link(host.index))
    for host in hosts:
        _route_to_peers(host, [other for other in hosts if other is not host])
