"""One test host dressed as a GPU host, the operator's folder that reaches it, and the builds it gets.

Why a dressed host: a deploy's cost depends on what the host has (the preflight probes the venv with torch
and torchcodec, the models, the nvidia-smi double), so the host looks like the real thing, as in the deploy
e2e tests (tests/e2e/deployscene.py). The operator side is a temporary HOME (~/.ssh/config), its own state
and cache folders, and a specops.toml, so nothing in the real /root is touched.

Builds: every deploy gets a tree no release on the host has yet (a numbered comment line in
`sglang/version.py`), so each one pushes exactly one changed file over the serving release; specops would
reuse an existing release instead of pushing, and a benchmark that alternated two trees would measure that.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.fleet import SCENARIO
from tests.testbed import drift
from tests.testbed.engine import BUILD_PYTHON, DDTREE_PATCH, copy_build
from tests.testbed.pyenv import ensure_host_venv, venv_python
from tests.testbed.staging import install_models, inventory_toml
from tests.testbed.testhost import TestHost, cleanup_stale, start_host

HOST_NAME = "deploybench"
UNIT = "sglang.service"
MANUAL_UNIT = "sglang-manual.service"
MANUAL_DIR = "/opt/manual/sglang"  # the operator's own copy of the release, updated by rsync
MANUAL_PORT = 30001  # next to the specops unit's engine (30000) on the same host
CHANGED_FILE = "sglang/version.py"  # the one-line change of every round
CRASH_FILE = "sglang/launch_server.py"
CRASH_SWITCH = 'os.environ.get("SGLANG_TESTENGINE_CRASH_AFTER_LOAD")'
CRASH_MESSAGE = "CUDA out of memory. Tried to allocate 2.00 GiB"  # specops's `cuda-oom` journal signature
Log = Callable[[str], None]


class SceneError(RuntimeError):
    """The scene could not be set up as described: no figure can come from it."""


@dataclass
class Scene:
    """The host, the operator's files, and the local trees the cases deploy."""

    host: TestHost
    folder: Path
    venv: Path
    config: Path
    ssh_config: Path
    build: Path  # the unpatched build that `specops deploy --build` stages (with --patch DDTREE_PATCH)
    crash_build: Path  # the same, with an engine that dies after loading its weights
    manual_tree: Path  # the patched tree the operator rsyncs by hand
    counter: int = field(default=0)

    def env(self) -> dict[str, str]:
        """The operator's environment (for the console script and, temporarily, in-process runs)."""
        return {**os.environ, **self.env_overrides()}

    def env_overrides(self) -> dict[str, str]:
        return {"HOME": str(self.folder / "home"), "XDG_STATE_HOME": str(self.folder / "state"),
                "XDG_CACHE_HOME": str(self.folder / "cache")}  # fmt: skip

    def next_change(self) -> int:
        """A number no tree on the host has carried yet: the content of the next one-line change."""
        self.counter += 1
        return self.counter

    def deploy_argv(self, build: Path) -> list[str]:
        return ["--config", str(self.config), "--json", "deploy", self.host.name, "--build", str(build),
                "--patch", str(DDTREE_PATCH)]  # fmt: skip

    def current_release(self) -> str:
        link = self.host.exec(["readlink", "/opt/specops/sglang/current"]).stdout.decode().strip()
        return link.rsplit("/", 1)[-1]


def set_change_line(tree: Path, number: int) -> None:
    """Replace the tree's one changing line (appended to CHANGED_FILE) with one naming `number`."""
    path = tree / CHANGED_FILE
    base = [line for line in path.read_text().splitlines() if not line.startswith("# deploy-bench change")]
    path.write_text("\n".join([*base, f"# deploy-bench change {number}"]) + "\n")


def make_crash_build(dest: Path) -> Path:
    """The test build whose engine raises a CUDA OOM right after loading its weights (a known signature)."""
    shutil.copytree(BUILD_PYTHON, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    path = dest / CRASH_FILE
    text = path.read_text()
    if CRASH_SWITCH not in text:
        raise SceneError(f"{CRASH_FILE} of the test engine no longer reads {CRASH_SWITCH}: update bench/deployscene")
    path.write_text(text.replace(CRASH_SWITCH, CRASH_SWITCH[:-1] + f', "{CRASH_MESSAGE}")'))
    return dest


def write_operator(host: TestHost, folder: Path, venv: Path) -> tuple[Path, Path]:
    """~/.ssh/config and specops.toml (engine on 127.0.0.1: HTTP rides the SSH connection, as on GPU hosts)."""
    ssh_dir = folder / "home" / ".ssh"
    ssh_dir.mkdir(parents=True, mode=0o700)
    ssh_config = ssh_dir / "config"
    ssh_config.write_text(host.ssh_config_block(host.name))
    toml = inventory_toml(host, venv_python(venv)).replace('listen = "0.0.0.0"', 'listen = "127.0.0.1"')
    config = folder / "specops.toml"
    config.write_text(toml)
    return config, ssh_config


def dress_host(host: TestHost, folder: Path, venv: Path) -> None:
    """Models, the nvidia-smi double (8×H100, driver 580) and a CUDA tag on torch: a plausible GPU host."""
    install_models(host, folder)
    drift.install_nvidia_smi(host, SCENARIO)
    drift.set_torch_cuda_tag(host, venv, version="2.13.0+cu130", cuda="13.0")


def start_scene(folder: Path, started: list[TestHost], log: Log) -> Scene:
    """Boot and dress the host (appended to `started` at once: the caller stops it) and stage the trees."""
    venv = ensure_host_venv(log)
    cleanup_stale()  # a host of a crashed earlier run would block the name
    host = start_host(HOST_NAME)
    started.append(host)
    log(f"host {host.name} up at {host.ip}")
    dress_host(host, folder, venv)
    config, ssh_config = write_operator(host, folder, venv)
    build = folder / "build"
    shutil.copytree(BUILD_PYTHON, build, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    manual_tree = copy_build(folder / "manual", [DDTREE_PATCH])
    crash_build = make_crash_build(folder / "crash-build")
    return Scene(host, folder, venv, config, ssh_config, build, crash_build, manual_tree)


def manual_unit_text(scene: Scene) -> str:
    """The specops unit, pointed at the operator's copy and another port: what a hand-run service looks like."""
    text = scene.host.read_file(f"/etc/systemd/system/{UNIT}").decode()
    current = "/opt/specops/sglang/current"
    if current not in text or "--port 30000" not in text:
        raise SceneError(f"the deployed {UNIT} names no {current} or --port 30000: update bench/deployscene")
    return text.replace(current, MANUAL_DIR).replace("--port 30000", f"--port {MANUAL_PORT}")


def prepare_manual(scene: Scene, rsync: Callable[[], subprocess.CompletedProcess[str]]) -> None:
    """A copy of the serving release, brought level with the local tree once, and its own unit (not started)."""
    host = scene.host
    host.exec(["mkdir", "-p", MANUAL_DIR])
    host.exec(["sh", "-c", f"cp -a /opt/specops/sglang/current/. {MANUAL_DIR}/"])
    rsync()  # untimed: the copy's mtimes now match the local tree, so later runs send only what changed
    host.write_file(f"/etc/systemd/system/{MANUAL_UNIT}", manual_unit_text(scene).encode())
    host.exec(["systemctl", "daemon-reload"])
