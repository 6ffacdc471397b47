"""`deploy --dry-run` on a group with silent and refusing hosts: every reachable host's plan, one line per
unreachable host, all connected in parallel within ONE connect timeout (ConnectTimeout of ~/.ssh/config), exit 4.

The silent hosts are loopback listeners that accept TCP and never say a word of SSH; the refusing one is a
loopback port nothing listens on. No other address is ever contacted.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

import specops.host.ssh.connection
from specops.config.inventory import HostSpec
from specops.host.base import Host
from specops.host.ssh.resolve import resolve_ssh_target
from tests.unit.deploy.scene import HOST, PYTHON, use_scene
from tests.unit.deploy.world import World

CONNECT_TIMEOUT_S = 1
SILENT = ("silent1", "silent2", "silent3", "silent4", "silent5")


@pytest.fixture
def silent_ports() -> Iterator[list[int]]:
    """Listening sockets that never accept(): the kernel completes the TCP handshake, no banner ever comes."""
    with ExitStack() as stack:
        servers = [stack.enter_context(socket.create_server(("127.0.0.1", 0))) for _ in SILENT]
        yield [int(server.getsockname()[1]) for server in servers]


def _refused_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


def _fleet(world: World, hosts: dict[str, int]) -> list[str]:
    """Add loopback hosts to the config and a ConnectTimeout to ~/.ssh/config; route only HOST to the scene."""
    config = world.folder / "specops.toml"
    blocks = [f'\n[hosts.{name}]\nssh = "deploy@127.0.0.1:{port}"\npython = "{PYTHON}"\n'
              f'model_path = "/srv/models/target"\nprofile = "nextn"\n' for name, port in hosts.items()]  # fmt: skip
    config.write_text(config.read_text() + "".join(blocks))
    ssh_dir = Path(world.folder / "home" / ".ssh")
    ssh_dir.mkdir(parents=True, exist_ok=True)
    (ssh_dir / "config").write_text(f"Host *\n    ConnectTimeout {CONNECT_TIMEOUT_S}\n")
    scripted = [world.scene().host()]
    use_scene(world.monkeypatch, world.scene(), scripted, [True])
    real_connect = specops.host.ssh.connection.open_ssh

    def connect(spec: HostSpec) -> Host:
        if spec.name == HOST:
            return scripted[-1]
        return real_connect(resolve_ssh_target(spec.ssh), name=spec.name, known_hosts=[])

    world.monkeypatch.setattr(specops.host.ssh.connection, "connect", connect)
    return [HOST, *hosts]


def test_dry_run_shows_every_reachable_plan_and_a_line_per_silent_host(world: World, silent_ports: list[int]) -> None:
    refused = _refused_port()
    names = _fleet(world, {**dict(zip(SILENT, silent_ports, strict=True)), "refused": refused})
    began = time.monotonic()
    result = world.cli("deploy", *names, "--build", str(world.build), "--dry-run")
    elapsed = time.monotonic() - began
    assert result.code == 4, result.out + result.err
    assert f"{HOST}: would deploy " in result.out
    for name, port in zip(SILENT, silent_ports, strict=True):
        assert (f"{name}: unreachable (exit 4): deploy@127.0.0.1:{port}: SSH handshake failed: no SSH handshake "
                f"within {CONNECT_TIMEOUT_S}s\n") in result.out  # fmt: skip
        assert f"try `ssh -v -p {port} deploy@127.0.0.1`" in result.out  # a valid ssh line, not `ssh host:port`
    assert f"refused: unreachable (exit 4): deploy@127.0.0.1:{refused}: connection refused" in result.out
    assert result.out.rstrip().endswith("dry run: nothing was changed (6 of 7 hosts could not be read)")
    assert "Traceback" not in result.out + result.err
    # one after the other, five silent hosts would take 5 x 1 s; in parallel, one connect timeout
    assert elapsed < 2 * CONNECT_TIMEOUT_S + 1.5, f"{elapsed:.1f}s"


def test_json_dry_run_marks_the_unreachable_host_and_keeps_the_others(world: World, silent_ports: list[int]) -> None:
    names = _fleet(world, {"silent1": silent_ports[0]})
    result = world.cli("deploy", *names, "--build", str(world.build), "--dry-run", "--json")
    assert result.code == 4, result.out + result.err
    hosts = json.loads(result.out)["hosts"]
    assert [(entry["host"], entry["action"]) for entry in hosts] == [(HOST, "deploy"), ("silent1", "unreachable")]
    assert hosts[1]["error"]["exit_code"] == 4
    assert f"no SSH handshake within {CONNECT_TIMEOUT_S}s" in hosts[1]["error"]["message"]
