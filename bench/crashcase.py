"""Crash latency: how long after the engine's fatal journal line the operator's screen names the cause.

Method: the console script deploys a build whose engine raises `RuntimeError: CUDA out of memory` right
after loading its weights (specops's `cuda-oom` signature), without --json, so its phase lines go to stderr
(a pipe: the line mode, the same events the live view shows). A reader thread stamps every stderr line with
the wall clock when it arrives. The journal's own stamp is `__REALTIME_TIMESTAMP` of the first line of the
unit's journal that matches the signature's pattern (`journalctl -o json`): when journald received it. The
test host shares this machine's kernel clock (no time namespace), so the two stamps are directly comparable.
Latency = arrival of the first stderr line naming the signature's cause − that journal stamp.

After the clock stops: the deploy must have rolled back to the release that served before (the cause named,
the old release current again), and the crashed release is deleted on the host, so the next one-line deploy
pushes over the serving release as usual (specops takes the newest complete release as its delta base).
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from typing import IO, TYPE_CHECKING

from bench.cases import CaseFailed, console_script
from bench.deployscene import Scene, set_change_line

if TYPE_CHECKING:
    from bench.deploycases import Extras

SIGNATURE_ID = "cuda-oom"
RELEASES = "/opt/specops/sglang/releases"


def signature() -> tuple[re.Pattern[str], str]:
    """The journal pattern and the on-screen cause of the signature the crashing build triggers."""
    from specops.engine.signatures import SIGNATURES

    found = next((s for s in SIGNATURES if s.id == SIGNATURE_ID), None)
    if found is None:
        raise CaseFailed(f"specops has no journal signature {SIGNATURE_ID!r} any more: update bench/crashcase")
    return found.pattern, found.cause


def _stamp_lines(stream: IO[str], lines: list[tuple[float, str]]) -> None:
    for line in stream:
        lines.append((time.time(), line.rstrip("\n")))


def _read_run(process: subprocess.Popen[str], lines: list[tuple[float, str]]) -> tuple[str, int]:
    """stdout and the exit status, while a thread stamps the stderr lines as they arrive."""
    assert process.stderr is not None and process.stdout is not None
    reader = threading.Thread(target=_stamp_lines, args=(process.stderr, lines), daemon=True)
    reader.start()
    stdout = process.stdout.read()
    code = process.wait(timeout=600)
    reader.join(timeout=30)
    return stdout, code


def _releases(scene: Scene) -> set[str]:
    return set(scene.host.exec(["ls", "-1", RELEASES]).stdout.decode().split())


def journal_stamp(scene: Scene, pattern: re.Pattern[str], since: float) -> float:
    """Wall-clock seconds of the first line of the unit's journal since `since` that matches `pattern`."""
    argv = ["journalctl", "-u", "sglang", "-o", "json", "--no-pager", "--since", f"@{int(since) - 1}"]
    for raw in scene.host.exec(argv).stdout.decode().splitlines():
        entry = json.loads(raw)
        message, stamp = entry.get("MESSAGE"), int(entry["__REALTIME_TIMESTAMP"]) / 1e6
        if isinstance(message, str) and stamp >= since and pattern.search(message):
            return stamp
    raise CaseFailed(f"the crashing engine wrote no journal line matching {pattern.pattern!r}")


def crash_latency(scene: Scene, extras: Extras) -> float:
    """Deploy the crashing build; seconds from its fatal journal line to the cause on the CLI's stderr."""
    pattern, cause = signature()
    set_change_line(scene.crash_build, scene.next_change())
    serving, releases = scene.current_release(), _releases(scene)
    argv = [str(console_script()), *[word for word in scene.deploy_argv(scene.crash_build) if word != "--json"]]
    lines: list[tuple[float, str]] = []
    started = time.time()
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=scene.env()) as process:
        try:
            stdout, code = _read_run(process, lines)
        finally:
            if process.poll() is None:  # Ctrl-C or a timeout: no deploy keeps running against a stopped host
                process.kill()
    wall = time.time() - started
    named = next(((at, line) for at, line in lines if cause in line), None)
    _check_rolled_back(scene, code, stdout, lines, named, serving)
    assert named is not None
    crashed = journal_stamp(scene, pattern, started)
    for release in _releases(scene) - releases:
        scene.host.exec(["rm", "-rf", f"{RELEASES}/{release}"])
    extras.add("crash", "wall", wall)
    extras.add("crash", "journal line after start", crashed - started)
    return named[0] - crashed


def _check_rolled_back(
    scene: Scene, code: int, stdout: str, lines: list[tuple[float, str]], named: tuple[float, str] | None,
    serving: str,
) -> None:  # fmt: skip
    """The deploy failed on the crash, named its cause on screen and put the serving release back."""
    shown = "\n".join(line for _, line in lines)[-1500:]
    if named is None:
        raise CaseFailed(f"the crashing deploy (exit {code}) never named the cause on screen:\n{shown}\n{stdout}")
    if code == 0 or "rolled-back" not in stdout:
        raise CaseFailed(f"the crashing deploy exited {code} without rolling back:\n{stdout[-1500:]}")
    if scene.current_release() != serving:
        raise CaseFailed(f"after the crash {scene.current_release()} serves, not {serving} as before")
