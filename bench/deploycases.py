"""The timed deploy cases: specops (console script and in-process), the same change by hand, a crashing build.

Each case prepares its tree untimed, times only what an operator waits for, and checks afterwards that the
command did its job (a verified deploy that pushed one file; the file on the host and the unit restarted; the
crash named and rolled back), raising CaseFailed otherwise, so a broken run can never look fast. A case
returns its headline figure (seconds) and keeps its other figures in `extras`.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from typing import Any

from bench import execcount
from bench.cases import Case, CaseFailed, console_script
from bench.cpuwindows import CpuWindows
from bench.crashcase import crash_latency
from bench.deployscene import CHANGED_FILE, MANUAL_DIR, MANUAL_UNIT, Scene, set_change_line
from bench.deployscene import UNIT as SPECOPS_UNIT
from tests.testbed.testhost.layout import cgroup_dir

DEPLOYED = "deployed"
ENGINE_EXIT = "old engine's exit (drain seconds)"
WATCH_UNIT = "specops-watch-sglang.service"
ENGINE_UP = "The server is fired up and ready to roll!"
ENGINE_UP_WAIT_S = 180.0
GOAL_CPU_OPERATOR = "operator CPU in the goal's windows (CPU-s)"
GOAL_CPU_HOST = "host CPU outside the engine in the goal's windows (CPU-s)"


@dataclass
class Extras:
    """Per case key and figure name: one value per timed round (the warm-up's are dropped)."""

    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    last_count: execcount.ExecCount | None = None
    restart_in_gates: list[bool | None] = field(default_factory=list)

    def add(self, key: str, name: str, value: float) -> None:
        self.values.setdefault(key, {}).setdefault(name, []).append(value)

    def drop_warmup(self) -> None:
        self.values.clear()
        self.restart_in_gates.clear()


def check_deploy(scene: Scene, code: int, stdout: str, stderr: str) -> dict[str, Any]:
    """The deploy verified a new release that it pushed as exactly one changed file; its --json host entry."""
    try:
        found = json.loads(stdout)["hosts"][scene.host.name]
    except (ValueError, KeyError, TypeError):
        raise CaseFailed(f"deploy exited {code} without a --json host entry: {stderr.strip()[-600:]}") from None
    if code != 0 or found.get("outcome") != DEPLOYED:
        raise CaseFailed(f"deploy exited {code}, outcome {found.get('outcome')}: {found.get('cause')}")
    if "gates" not in found.get("phases", {}):
        raise CaseFailed(f"deploy reported no gates phase: {found.get('phases')}")
    if (found.get("push") or {}).get("sent_files") != 1:
        raise CaseFailed(f"a one-line change should push 1 file, the deploy pushed {found.get('push')}")
    return dict(found)


def initial_deploy(scene: Scene) -> str:
    """Untimed: the test build deployed and verified (the full tree, the unit installed); the serving release."""
    set_change_line(scene.build, scene.next_change())
    argv = [str(console_script()), *scene.deploy_argv(scene.build)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=scene.env(), check=False)
    try:
        found = json.loads(done.stdout)["hosts"][scene.host.name]
    except (ValueError, KeyError, TypeError):
        raise CaseFailed(f"the first deploy exited {done.returncode}: {done.stderr.strip()[-1500:]}") from None
    if done.returncode != 0 or found.get("outcome") != DEPLOYED:
        raise CaseFailed(f"the first deploy exited {done.returncode}: {found.get('outcome')}: {found.get('cause')}")
    return str(found["release"])


def _overhead(scene: Scene, extras: Extras, key: str, wall: float, found: dict[str, Any]) -> float:
    gates = float(found["phases"]["gates"])
    extras.add(key, "wall", wall)
    # the old engine's own exit, from SIGTERM to its unit inactive (the drain, as --json reports it)
    extras.add(key, ENGINE_EXIT, float((found.get("drain") or {}).get("seconds") or 0.0))
    for phase, seconds in found["phases"].items():
        extras.add(key, f"phase {phase}", float(seconds))
    return wall - gates


def specops_cli(scene: Scene, extras: Extras) -> float:
    """`specops --json deploy HOST --build B --patch P` as a new process: wall time minus the gates phase."""
    set_change_line(scene.build, scene.next_change())
    argv = [str(console_script()), *scene.deploy_argv(scene.build)]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=scene.env(), check=False)
    wall = time.perf_counter() - started
    return _overhead(scene, extras, "cli", wall, check_deploy(scene, done.returncode, done.stdout, done.stderr))


@contextmanager
def operator_env(scene: Scene) -> Iterator[None]:
    """The operator's HOME and XDG folders for an in-process run, restored afterwards."""
    saved = {name: os.environ.get(name) for name in scene.env_overrides()}
    os.environ.update(scene.env_overrides())
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def specops_in_process(scene: Scene, extras: Extras) -> float:
    """The same through `specops.cli.main.main([...])` (no interpreter start, imports already done), with every
    SSH channel it opens counted and the CPU of the goal's windows measured (bench/cpuwindows.py)."""
    from specops.cli.main import main

    set_change_line(scene.build, scene.next_change())
    out, err = io.StringIO(), io.StringIO()
    windows = CpuWindows(cgroup_dir(scene.host.name))
    with operator_env(scene), execcount.counting(on_phase=windows.mark) as count:
        windows.mark(execcount.BEFORE)
        started = time.perf_counter()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(scene.deploy_argv(scene.build))
        wall = time.perf_counter() - started
        windows.mark("(ended)")
    overhead = _overhead(scene, extras, "in", wall, check_deploy(scene, code, out.getvalue(), err.getvalue()))
    operator_cpu, host_cpu = windows.in_goal()
    extras.add("in", GOAL_CPU_OPERATOR, operator_cpu)
    extras.add("in", GOAL_CPU_HOST, host_cpu)
    extras.add("in", "execs", len(count.execs))
    extras.add("in", "tunnels", len(count.tunnels))
    extras.add("in", "connections", count.connections)
    extras.add("in", "requests", len(count.requests))
    extras.restart_in_gates.append(_restart_in_gates(count))
    extras.last_count = count
    return overhead


def _restart_in_gates(count: execcount.ExecCount) -> bool | None:
    """Whether the exec that restarted the unit opened inside the gates phase (None: no exec shows a restart)."""
    gates_at = count.first_exec_after("gates")
    restarts = [c.at for c in count.execs if " restart " in f" {c.command} " or "restart" in c.command.split()]
    if gates_at is None or not restarts:
        return None
    return restarts[0] >= gates_at


def _rsync(scene: Scene) -> subprocess.CompletedProcess[str]:
    argv = ["rsync", "-a", "-i", "-e", f"ssh -F {scene.ssh_config}", f"{scene.manual_tree}/",
            f"{scene.host.name}:{MANUAL_DIR}/"]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, env=scene.env(), check=False)


def rsync_untimed(scene: Scene) -> subprocess.CompletedProcess[str]:
    done = _rsync(scene)
    if done.returncode != 0:
        raise CaseFailed(f"rsync exited {done.returncode}: {done.stderr.strip()[-600:]}")
    return done


def _invocation(scene: Scene, unit: str = MANUAL_UNIT) -> str:
    argv = ["systemctl", "show", "-p", "InvocationID", "--value", unit]
    return scene.host.exec(argv).stdout.decode().strip()


def _wait_up(scene: Scene, unit: str, invocation: str) -> None:
    deadline = time.monotonic() + ENGINE_UP_WAIT_S
    argv = ["journalctl", f"_SYSTEMD_INVOCATION_ID={invocation}", "-o", "cat", "--no-pager"]
    while ENGINE_UP not in scene.host.exec(argv, check=False).stdout.decode():
        if time.monotonic() > deadline:
            status = scene.host.exec(["systemctl", "status", "--no-pager", "-n", "15", unit], check=False)
            raise CaseFailed(f"the engine of {unit} was not up after {ENGINE_UP_WAIT_S:.0f} s:\n"
                             f"{status.stdout.decode(errors='replace')[-2000:]}")  # fmt: skip
        time.sleep(0.5)


def _serve_with(scene: Scene, stop: str, start: str) -> None:
    """Untimed: one engine serves the host's GPU at a time, so the hand case swaps its unit in and out."""
    # the guard's watch after "verified" would take a stopped specops engine for a failure and roll it back
    scene.host.exec(["systemctl", "stop", WATCH_UNIT], check=False)
    scene.host.exec(["systemctl", "stop", stop])
    scene.host.exec(["systemctl", "reset-failed", start], check=False)  # these starts are not a crash loop
    scene.host.exec(["systemctl", "start", start])
    _wait_up(scene, start, _invocation(scene, start))


def by_hand(scene: Scene, extras: Extras) -> float:
    """`rsync -a` of the changed tree onto the copy, then `ssh HOST systemctl restart UNIT`, up to its return.
    The restart stops a serving engine, as a deploy's does: the hand unit is started (untimed) first."""
    _serve_with(scene, SPECOPS_UNIT, MANUAL_UNIT)
    try:
        return _by_hand_timed(scene, extras)
    finally:
        _serve_with(scene, MANUAL_UNIT, SPECOPS_UNIT)  # the next specops case drains a serving engine too


def _by_hand_timed(scene: Scene, extras: Extras) -> float:
    set_change_line(scene.manual_tree, scene.next_change())
    before = _invocation(scene)
    restart = ["ssh", "-F", str(scene.ssh_config), scene.host.name, "systemctl", "restart", MANUAL_UNIT]
    started = time.perf_counter()
    synced = _rsync(scene)
    middle = time.perf_counter()
    restarted = subprocess.run(restart, capture_output=True, text=True, timeout=120, env=scene.env(), check=False)
    ended = time.perf_counter()
    _check_by_hand(scene, synced, restarted, before)
    extras.add("hand", "rsync", middle - started)
    extras.add("hand", "restart", ended - middle)
    return ended - started


def _check_by_hand(
    scene: Scene, synced: subprocess.CompletedProcess[str], restarted: subprocess.CompletedProcess[str], before: str
) -> None:
    """Exactly one file sent and on the host, a new run of the unit, and its engine up (waited for untimed, so
    its start-up never overlaps the next case)."""
    if synced.returncode != 0 or restarted.returncode != 0:
        raise CaseFailed(f"rsync exited {synced.returncode}, ssh restart {restarted.returncode}: "
                         f"{(synced.stderr + restarted.stderr).strip()[-600:]}")  # fmt: skip
    sent = [line for line in synced.stdout.splitlines() if line.startswith("<f")]  # itemized: a file sent
    if len(sent) != 1 or not sent[0].endswith(CHANGED_FILE):
        raise CaseFailed(f"rsync should send only {CHANGED_FILE}, it sent: {sent}")
    on_host = scene.host.read_file(f"{MANUAL_DIR}/{CHANGED_FILE}").decode()
    if on_host != (scene.manual_tree / CHANGED_FILE).read_text():
        raise CaseFailed(f"{MANUAL_DIR}/{CHANGED_FILE} on the host is not the rsynced file")
    invocation = _invocation(scene)
    if not invocation or invocation == before:
        raise CaseFailed(f"systemctl restart {MANUAL_UNIT} started no new run (InvocationID {invocation!r})")
    _wait_up(scene, MANUAL_UNIT, invocation)


def all_cases(scene: Scene, extras: Extras) -> list[Case]:
    """The cases in report order; the keys are what the report's ratios refer to."""
    return [
        Case("cli", "`specops --json deploy` console script: wall − gates phase",
             lambda: specops_cli(scene, extras)),
        Case("in", "`specops --json deploy` in-process (`main([...])`): wall − gates phase",
             lambda: specops_in_process(scene, extras)),
        Case("hand", "by hand: `rsync -a` + `ssh HOST systemctl restart UNIT`, to its return",
             lambda: by_hand(scene, extras)),
        Case("crash", "crashing build: journal line → cause on the CLI's screen",
             lambda: crash_latency(scene, extras)),
    ]  # fmt: skip
