"""A fleet of test hosts prepared like real SGLang hosts, plus the operator's HOME that reaches them.

Why a whole fleet: the doctor's promise is about wall time for 1 host AND for 8 hosts in parallel, on
hosts that look like the real thing (venv with torch + torchcodec, model folders, a build as `current`,
an nvidia-smi that answers), because the probe's time on the host depends on what it finds there.
The operator side is a temporary HOME with ~/.ssh/config blocks and a specops.toml (hosts + a group),
exactly what an operator writes; nothing touches the real /root.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests.testbed import drift
from tests.testbed.engine import DDTREE_PATCH, copy_build
from tests.testbed.pyenv import ensure_host_venv, venv_python
from tests.testbed.staging import install_build, install_models, inventory_toml
from tests.testbed.testhost import TestHost, cleanup_stale, start_host, stop_host
from tests.testbed.testhost.layout import cgroup_dir

GROUP = "fleet"
GROUP4 = "fleet4"  # the first 4 hosts, when there are more: how wall time grows with hosts (1, 4, N)
SCENARIO = "h200x8-590-nvswitch"  # a recorded 8×H200 NVSwitch host on driver 590 (the nvidia-smi double plays it)
RELEASE = "r1"
START_WORKERS = 4  # 8 boots at once on 2 cores only makes each slower
Log = Callable[[str], None]


@dataclass(frozen=True)
class Fleet:
    """Running, prepared hosts and the operator-side files that reach them."""

    hosts: list[TestHost]
    home: Path
    config: Path
    ssh_config: Path
    python: Path

    @property
    def names(self) -> list[str]:
        return [host.name for host in self.hosts]

    @property
    def cgroups(self) -> list[Path]:
        """Each host's own cgroup (v2): its cpu.stat counts everything that ran inside the host."""
        return [cgroup_dir(host.name) for host in self.hosts]

    def env(self) -> dict[str, str]:
        """The environment of an operator whose HOME is the fleet's (for subprocesses)."""
        return {**os.environ, "HOME": str(self.home)}


def host_names(count: int, prefix: str = "bench") -> list[str]:
    return [f"{prefix}{number}" for number in range(1, count + 1)]


def start_hosts(names: list[str], started: list[TestHost], log: Log) -> None:
    """Boot the hosts in parallel; every host that came up is appended to `started` (the caller stops them)."""
    cleanup_stale()  # hosts of a crashed earlier run would block the names
    errors: list[BaseException] = []
    with ThreadPoolExecutor(max_workers=START_WORKERS) as pool:
        futures = [pool.submit(start_host, name) for name in names]
        for future in futures:
            try:
                host = future.result()
            except Exception as error:  # keep collecting: the others must still be stopped
                errors.append(error)
                continue
            started.append(host)
            log(f"host {host.name} up at {host.ip}")
    if errors:
        raise errors[0]


def stop_hosts(hosts: list[TestHost], log: Log) -> None:
    """Stop every host; one that fails to stop is reported, the rest are still stopped."""
    failures = []
    for host in hosts:
        try:
            stop_host(host)
        except Exception as error:
            failures.append(f"{host.name}: {error}")
    log(f"stopped {len(hosts) - len(failures)} of {len(hosts)} hosts")
    if failures:
        raise RuntimeError("hosts left behind:\n" + "\n".join(failures))


def prepare_hosts(hosts: list[TestHost], scratch: Path) -> None:
    """Models, a patched build as `current` with its manifest, and the nvidia-smi double, on every host."""
    build_root = scratch / "build"
    copy_build(build_root / "python", [DDTREE_PATCH])
    with ThreadPoolExecutor(max_workers=START_WORKERS) as pool:
        list(pool.map(lambda host: _prepare_one(host, build_root, scratch / host.name), hosts))


def _prepare_one(host: TestHost, build_root: Path, scratch: Path) -> None:
    install_models(host, scratch)
    release_dir = install_build(host, build_root, RELEASE)
    manifest = {"verified": True, "created_at": "2025-01-01T00:00:00Z", "source": "specops bench"}
    host.write_file(f"{release_dir}/manifest.json", json.dumps(manifest).encode())
    drift.install_nvidia_smi(host, SCENARIO)


def write_home(hosts: list[TestHost], home: Path, python: Path) -> tuple[Path, Path]:
    """~/.ssh/config (one block per host) and ~/.config/specops/specops.toml (hosts + group `fleet`)."""
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(parents=True, mode=0o700)
    ssh_config = ssh_dir / "config"
    ssh_config.write_text("".join(host.ssh_config_block(host.name) + "\n" for host in hosts))
    config_dir = home / ".config" / "specops"
    config_dir.mkdir(parents=True)
    config = config_dir / "specops.toml"
    members = ", ".join(f'"{host.name}"' for host in hosts)
    tables = "\n".join(inventory_toml(host, python) for host in hosts)
    groups = f"\n[groups]\n{GROUP} = [{members}]\n"
    if len(hosts) > 4:
        four = ", ".join(f'"{host.name}"' for host in hosts[:4])
        groups += f"{GROUP4} = [{four}]\n"
    config.write_text(tables + groups)
    return ssh_config, config


def build_fleet(count: int, scratch: Path, started: list[TestHost], log: Log) -> Fleet:
    """Start `count` hosts (appending to `started` as they come up), prepare them, write the operator HOME."""
    python = venv_python(ensure_host_venv(log))
    names = host_names(count)
    start_hosts(names, started, log)
    hosts = sorted(started, key=lambda host: names.index(host.name))
    prepare_hosts(hosts, scratch)
    log(f"prepared {len(hosts)} hosts (models, build {RELEASE} as current, nvidia-smi double {SCENARIO})")
    home = scratch / "home"
    ssh_config, config = write_home(hosts, home, python)
    return Fleet(hosts=hosts, home=home, config=config, ssh_config=ssh_config, python=python)
