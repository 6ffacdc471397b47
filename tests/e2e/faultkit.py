"""The fault-injection suite's tools: a deploy scene driven by subprocesses, and the faults themselves.

Each scenario runs on its own test host in a worker thread, so the CLI runs as a real process (its own
HOME, state and cache folders in `env`), never in-process: many scenarios share one pytest process at once.
The two faults: `kill -9` of the CLI, and a dropped SSH connection (the host's sshd session processes for
root are killed from inside the host, as a network drop or a rebooting bastion would end them).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.deployscene import PATCH, UNPATCHED
from tests.testbed import drift
from tests.testbed.staging import install_models, inventory_toml
from tests.testbed.testhost import TestHost

ROOT = Path(__file__).resolve().parents[2]
SMOKE_TOKENS = 64  # the unpatched build crawls at 8 tok/s in the test engine: a failing smoke stays short
READINESS_S = 60  # the test inventory's readiness deadline (the profile's default is 15 minutes)
SSH_SESSIONS = "^sshd(-session)?: root"  # the per-connection sshd processes; the listener stays
KILL_9, DROP_SSH = "kill-9", "drop-ssh"


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def json(self) -> dict[str, object]:
        loaded = json.loads(self.out) if self.out.startswith("{") else {}
        return loaded if isinstance(loaded, dict) else {}


@dataclass
class FaultScene:
    """One test host dressed as a GPU host and an operator folder for it; `cli` runs the real CLI."""

    host: TestHost
    folder: Path
    env: dict[str, str] = field(default_factory=dict)
    base_dir: str = "/opt/specops"

    def cli(self, *args: str, timeout: float = 300) -> Ran:
        done = subprocess.run([sys.executable, "-m", "specops", *args], cwd=self.folder, env=self.env,
                              capture_output=True, text=True, timeout=timeout)  # fmt: skip
        return Ran(done.returncode, done.stdout, done.stderr)

    def deploy_argv(self, *extra: str, build: Path = UNPATCHED, patched: bool = True) -> list[str]:
        patches = ["--patch", str(PATCH)] if patched else []
        return [sys.executable, "-m", "specops", "deploy", self.host.name, "--build", str(build), *patches, *extra]

    def deploy(self, *extra: str, build: Path = UNPATCHED, patched: bool = True) -> tuple[Ran, dict[str, object]]:
        argv = self.deploy_argv("--json", *extra, build=build, patched=patched)
        done = subprocess.run(argv, cwd=self.folder, env=self.env, capture_output=True, text=True, timeout=400)
        ran = Ran(done.returncode, done.stdout, done.stderr)
        hosts = ran.json().get("hosts", {})
        found = hosts.get(self.host.name, {}) if isinstance(hosts, dict) else {}
        return ran, found if isinstance(found, dict) else {}

    def start(self, *extra: str, build: Path = UNPATCHED, patched: bool = True) -> subprocess.Popen[str]:
        return subprocess.Popen(self.deploy_argv(*extra, build=build, patched=patched), cwd=self.folder,
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip

    def status(self) -> dict[str, object]:
        return self.cli("status", self.host.name, "--json", timeout=120).json()

    def releases(self) -> list[str]:
        listing = self.host.exec(["ls", "-1", f"{self.base_dir}/sglang/releases"], check=False).stdout.decode()
        return sorted(listing.split())


def prepare(host: TestHost, venv: Path, folder: Path, base_dir: str = "/opt/specops") -> FaultScene:
    """What deployscene.make_scene does, with the environment kept in the scene instead of this process."""
    install_models(host, folder)
    drift.install_nvidia_smi(host, "h100x8-580")
    drift.set_torch_cuda_tag(host, venv, version="2.13.0+cu130", cuda="13.0")
    home = folder / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "config").write_text(host.ssh_config_block(host.name))
    toml = inventory_toml(host, venv / "bin" / "python").replace('listen = "0.0.0.0"', 'listen = "127.0.0.1"')
    if base_dir != "/opt/specops":
        toml = toml.replace(f"[hosts.{host.name}]\n", f'[hosts.{host.name}]\nbase_dir = "{base_dir}"\n', 1)
    # a 3 s model load: a fault "during readiness" lands while the engine loads, not after it is ready
    toml = toml.replace('SGLANG_TESTENGINE_LOAD_SECONDS = "0.5"', 'SGLANG_TESTENGINE_LOAD_SECONDS = "3"')
    # the scenarios run side by side (up to 12 hosts on this machine's cores): a 64-token generation's speed
    # there follows the load, not the build: the regression gate (tests/unit/engine/test_smoke_compare.py) never decides
    toml += f"\n[hosts.{host.name}.overrides.ddtree.smoke]\nmax_new_tokens = {SMOKE_TOKENS}\nmax_regression_pct = 100\n"
    toml += f"\n[hosts.{host.name}.overrides.ddtree.readiness]\ntimeout_s = {READINESS_S}\n"
    (folder / "specops.toml").write_text(toml)
    env = dict(os.environ, HOME=str(home), XDG_STATE_HOME=str(folder / "state"),
               XDG_CACHE_HOME=str(folder / "cache"), PYTHONPATH=str(ROOT))  # fmt: skip
    return FaultScene(host, folder, env, base_dir)


def variant_build(folder: Path, tag: str, megabytes: int = 0) -> Path:
    """The test build plus a file naming `tag` (a tree no host has yet, so the deploy pushes), and with
    `megabytes` > 0 one incompressible file that size: a push that lasts, or that fills a disk."""
    build = folder / f"build-{tag}"
    if not build.exists():
        shutil.copytree(UNPATCHED, build, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (build / "fault-variant.txt").write_text(tag + "\n")
        if megabytes:
            (build / "weights.bin").write_bytes(os.urandom(megabytes << 20))
    return build


def drop_ssh(host: TestHost) -> None:
    """End every root SSH session on the host from inside it: the client sees its connection die."""
    host.exec(["pkill", "-KILL", "-f", SSH_SESSIONS], check=False)


def inject(scene: FaultScene, process: subprocess.Popen[str], fault: str, after: str, at: str) -> list[str]:
    """Read the CLI's phase lines; after a line of phase `after` (if any), at the next line of phase `at`
    apply `fault` (at "mid-push": once the new release's folder exists on the host). The lines seen."""
    assert process.stderr is not None
    seen: list[str] = []
    armed = not after
    before = set(scene.releases())
    while line := process.stderr.readline():
        seen.append(line.rstrip())
        phase = _phase_of(line)
        if armed and at == "mid-push" and phase == "push":
            _wait_for_new_release(scene, before)
        if armed and phase == ("push" if at == "mid-push" else at):
            _apply(scene, process, fault)
            return seen
        armed = armed or phase == after  # from the next line on: `after` and `at` may be the same phase
    process.kill()
    process.wait(timeout=30)
    raise AssertionError(f"phase {at!r} never started; saw: {seen}")


def _phase_of(line: str) -> str:
    """The phase word of a CLI line `HOST PHASE message`."""
    words = line.split(maxsplit=2)
    return words[1] if len(words) > 1 else ""


def _wait_for_new_release(scene: FaultScene, before: set[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not set(scene.releases()) - before:
        time.sleep(0.05)


def _apply(scene: FaultScene, process: subprocess.Popen[str], fault: str) -> None:
    if fault == KILL_9:
        os.kill(process.pid, signal.SIGKILL)
    else:
        drop_ssh(scene.host)
    try:
        process.communicate(timeout=180)  # a dropped connection must end the CLI, not hang it
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate(timeout=30)
        raise AssertionError(f"the CLI still ran 180 s after the fault ({fault})") from None


def release_dead_lock(scene: FaultScene) -> Ran | None:
    """`specops lock release HOST` when the dead deploy left its lock (allowed without --force: the holder
    is a process of this machine that is gone)."""
    held = scene.cli("lock", "status", scene.host.name, "--json", timeout=120).json()
    if not held.get("locked"):
        return None
    return scene.cli("lock", "release", scene.host.name, timeout=120)


def wait_served(scene: FaultScene, allowed: set[str], timeout: float = 120) -> dict[str, object]:
    """Poll `status --json` until `current` is one of `allowed`, verified, and answering; the last status."""
    deadline = time.monotonic() + timeout
    found: dict[str, object] = {}
    while time.monotonic() < deadline:
        found = scene.status()
        if found.get("current") in allowed and found.get("verified") and found.get("health") == 200:
            return found
        time.sleep(2)
    return found
