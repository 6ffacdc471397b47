"""A deploy run again from the console script connects and starts its two commands while specops loads
(specops/cli/early/deploy.py), and deploys exactly as the first run did, on a real test host.

Each run is the real console script in a new interpreter; the harness only counts the early-started commands
the deploy took over (host/ssh/prestart.py) and prints the count when the process exits."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene

HARNESS = """\
import atexit
import sys
from specops.host.ssh import prestart

taken = []
original = prestart.PrestartedCommands.take

def take(self, words, timeout):
    command = original(self, words, timeout)
    if command is not None:
        taken.append(words[-1])
    return command

prestart.PrestartedCommands.take = take
atexit.register(lambda: print("TAKEN=" + str(len(taken)), file=sys.stderr))
sys.argv = ["specops", *sys.argv[1:]]
from specops.cli.entry import entry
entry()
"""


def console_deploy(scene: Scene, build: Path) -> tuple[int, dict[str, object], int]:
    """`specops deploy HOST --build B --patch P --json` as a new process: exit code, the host's outcome, and
    how many early-started commands it took over."""
    argv = [sys.executable, "-c", HARNESS, "deploy", scene.host.name, "--build", str(build), "--patch", str(PATCH),
            "--json"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=400, check=False, cwd=scene.folder)
    found = json.loads(done.stdout)["hosts"][scene.host.name] if done.stdout.startswith("{") else {}
    taken = [line for line in done.stderr.splitlines() if line.startswith("TAKEN=")]
    assert taken, done.stderr[-2000:]
    return done.returncode, found, int(taken[-1].removeprefix("TAKEN="))


def variant(scene: Scene, tag: str) -> Path:
    build = scene.folder / f"build-{tag}"
    shutil.copytree(UNPATCHED, build, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (build / "sglang" / "variant.py").write_text(f"TAG = {tag!r}\n")
    return build


def test_the_second_deploy_starts_early_and_deploys_the_same_way(scene: Scene) -> None:
    code, first, taken = console_deploy(scene, variant(scene, "one"))
    assert (code, first.get("outcome"), taken) == (0, "deployed", 0), first
    two = variant(scene, "two")
    code, second, taken = console_deploy(scene, two)
    assert (code, second.get("outcome"), taken) == (0, "deployed", 2), second  # the conversation and the push
    assert second["previous"] == first["release"] and second["release"] != first["release"]
    assert (second.get("push") or {}).get("sent_files") == 1  # the delta over the serving release, as always
    status = scene.cli("status", scene.host.name, "--json")
    assert status.code == 0 and json.loads(status.out)["current"] == second["release"], status.out + status.err
    code, third, taken = console_deploy(scene, two)
    assert (code, third.get("outcome"), taken) == (0, "unchanged", 2), third
