"""A test host dressed as a GPU host for deploy tests, and a way to run the real CLI against it.

The nvidia-smi double (8×H100, driver 580) and a cu130 tag in torch/version.py make the doctor's preflight
see a plausible GPU host; everything else is real: SSH, systemd, the venv with torch and torchcodec, the
test engine serving over HTTP through the SSH tunnel (it listens on 127.0.0.1 only). `gpus=False` leaves the
host as it is made, a CPU box: no nvidia-smi and the venv's CPU torch (a staging host).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.testbed import drift
from tests.testbed.engine import BUILD_PYTHON, DDTREE_PATCH
from tests.testbed.staging import install_models, inventory_toml
from tests.testbed.testhost import TestHost
from tests.unit.clirun import CliResult, run_cli

UNPATCHED = BUILD_PYTHON
PATCH = DDTREE_PATCH


@dataclass
class Scene:
    host: TestHost
    venv: Path
    folder: Path
    capsys: pytest.CaptureFixture[str]

    def cli(self, *args: str) -> CliResult:
        return run_cli(self.capsys, *args)

    def deploy(self, *args: str, patched: bool = True) -> tuple[CliResult, dict[str, object]]:
        patches = ["--patch", str(PATCH)] if patched else []
        result = self.cli("deploy", self.host.name, "--build", str(UNPATCHED), *patches, "--json", *args)
        document = json.loads(result.out) if result.out.startswith("{") else {}
        hosts = document.get("hosts", {}) if isinstance(document, dict) else {}
        return result, hosts.get(self.host.name, {})

    def journal(self) -> str:
        return self.host.exec(["journalctl", "-u", "sglang", "--no-pager", "-o", "cat"], check=False).stdout.decode()


def make_scene(
    host: TestHost, venv: Path, folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    gpus: bool = True,
) -> Scene:  # fmt: skip
    install_models(host, folder)
    if gpus:
        drift.install_nvidia_smi(host, "h100x8-580")
        drift.set_torch_cuda_tag(host, venv, version="2.13.0+cu130", cuda="13.0")
    home = folder / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "config").write_text(host.ssh_config_block(host.name))
    toml = inventory_toml(host, venv / "bin" / "python").replace('listen = "0.0.0.0"', 'listen = "127.0.0.1"')
    (folder / "specops.toml").write_text(toml)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(folder / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder / "cache"))
    monkeypatch.chdir(folder)
    return Scene(host, venv, folder, capsys)


def watch_for(scene: Scene, seconds: int, failures: int = 2) -> None:
    """Give the scene's deploys a guard watch of `seconds` after "verified": `failures` failed probes in a row
    (one every 2 s, each given 2 s) end it."""
    toml = scene.folder / "specops.toml"
    toml.write_text(toml.read_text() + f"\n[hosts.{scene.host.name}.overrides.ddtree.readiness]\n"
                    f"watch_s = {seconds}\nwatch_timeout_s = 2\nwatch_failures = {failures}\n")  # fmt: skip


def status_of(scene: Scene) -> dict[str, object]:
    result = scene.cli("status", scene.host.name, "--json")
    found = json.loads(result.out) if result.out.startswith("{") else {}
    return found if isinstance(found, dict) else {}


def watch_until(scene: Scene, state: str, timeout: float) -> dict[str, object]:
    """Poll `status --json` until the guard's watch is in `state`; the status then."""
    deadline = time.monotonic() + timeout
    found: dict[str, object] = {}
    while time.monotonic() < deadline:
        found = status_of(scene)
        watch = found.get("watch")
        if isinstance(watch, dict) and watch.get("state") == state:
            return found
        time.sleep(1)
    raise AssertionError(f"the watch never reached {state!r}: {found}")


SceneFactory = Callable[[], Scene]
