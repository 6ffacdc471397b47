"""The host's only network: a veth pair on its own /30 (outer 10.200.N.1, inner 10.200.N.2).

No default route inside, no forwarding outside: a host can reach the outer machine and nothing
else. Each side is configured with one `ip -batch` run, to keep process starts per host low.
"""

from __future__ import annotations

import subprocess

from tests.testbed.testhost.layout import inner_ip, inner_link, outer_ip, outer_link


def _ip_batch(commands: list[str], prefix: list[str] | None = None) -> None:
    argv = [*(prefix or []), "ip", "-batch", "-"]
    done = subprocess.run(argv, input="\n".join(commands) + "\n", capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()}")


def subnet_in_use(index: int) -> bool:
    """True if any link already has an address in 10.200.INDEX.0/30 (ours or anyone else's)."""
    out = subprocess.run(
        ["ip", "-4", "-o", "addr", "show", "to", f"10.200.{index}.0/30"], capture_output=True, text=True
    ).stdout
    return bool(out.strip())


def link_exists(name: str) -> bool:
    return subprocess.run(["ip", "link", "show", "dev", name], capture_output=True).returncode == 0


def plug_in(index: int, systemd_pid: int) -> None:
    """Create the pair with its inner end already in the host's netns and bring both ends up."""
    outer, inner = outer_link(index), inner_link(index)
    _ip_batch(
        [
            f"link add {outer} type veth peer name {inner} netns {systemd_pid}",
            f"addr add {outer_ip(index)}/30 dev {outer}",
            f"link set {outer} up",
        ]
    )
    _ip_batch(
        [
            "link set lo up",
            f"link set {inner} name eth0",
            f"addr add {inner_ip(index)}/30 dev eth0",
            "link set eth0 up",
        ],
        prefix=["nsenter", "-t", str(systemd_pid), "-n"],
    )


def unplug(link: str) -> None:
    """Delete the outer end if it outlived the host's netns (normally it goes with it)."""
    if link_exists(link):
        subprocess.run(["ip", "link", "del", "dev", link], capture_output=True)
