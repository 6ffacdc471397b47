"""`specops trial` on a real test host: a DDTREE candidate beside a serving NEXTN engine on a 2-GPU host.

Production (NEXTN) is deployed on GPU 0; the candidate runs on GPU 1, port 30001, as a transient unit. What is
asserted is what the operator sees (the report, the exit code) and that production was never touched: its
unit's InvocationID, `current`, and that nothing of the trial is left (no unit, no process, GPU 1 free).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene
from tests.testbed import drift
from tests.unit.clirun import CliResult

pytestmark = pytest.mark.e2e

TRIAL_PORT = "30001"


def _serve_nextn(scene: Scene) -> None:
    """Production: NEXTN on GPU 0 of a 2×H200 host (the nvidia-smi double shows what each engine holds)."""
    drift.install_nvidia_smi(scene.host, "h200x2-580")
    config = scene.folder / "specops.toml"
    text = config.read_text().replace('profile = "ddtree"', 'profile = "nextn"')
    config.write_text(text.replace("limit_nofile = 20000", 'limit_nofile = 20000\ngpus = "0"'))
    result = scene.cli("deploy", scene.host.name, "--build", str(UNPATCHED), "--json", "--force")
    assert result.code == 0, result.out + result.err


def _production(scene: Scene) -> tuple[str, str]:
    invocation = scene.host.exec(["systemctl", "show", "sglang", "-p", "InvocationID", "--value"]).stdout
    current = scene.host.exec(["readlink", "/opt/specops/sglang/current"]).stdout
    return invocation.decode().strip(), current.decode().strip()


def _trial(scene: Scene, *args: str, gpus: str = "1") -> CliResult:
    return scene.cli("trial", scene.host.name, "--build", str(UNPATCHED), "--profile", "ddtree", "--gpus", gpus,
                     "--port", TRIAL_PORT, *args)  # fmt: skip


def _nothing_left(scene: Scene) -> None:
    units = scene.host.exec(["systemctl", "list-units", "--all", "--plain", "--no-legend", "specops-trial-*"])
    assert units.stdout.decode().strip() == ""
    procs = scene.host.exec(["pgrep", "-f", f"--port {TRIAL_PORT}"], check=False)
    assert procs.stdout.decode().strip() == ""
    apps = scene.host.exec(["nvidia-smi", "--query-gpu=index,memory.used", "--format=csv,noheader,nounits"])
    used = dict(line.split(", ") for line in apps.stdout.decode().splitlines())
    assert used["1"] == "0", used


def test_a_patched_ddtree_candidate_agrees_with_nextn_and_leaves_nothing(scene: Scene) -> None:
    _serve_nextn(scene)
    before = _production(scene)
    result = _trial(scene, "--patch", str(PATCH), "--json")
    assert result.code == 0, result.out + result.err
    report = json.loads(result.out)
    assert report["outcome"] == "agrees" and report["causes"] == []
    assert report["comparison"]["agreement"] == 1.0
    assert report["comparison"]["ratios"]["tokens_per_s"] > 0
    assert report["smoke"]["passed"] is True and report["trial_removed"] is True
    assert report["production_invocation"] == {"before": before[0], "after": before[0]}
    assert _production(scene) == before
    assert not before[1].endswith(str(report["release"]))
    _nothing_left(scene)
    human = _trial(scene, "--patch", str(PATCH))
    assert human.code == 0, human.out + human.err
    assert "AGREES with production" in human.out and "tokens/s:" in human.out
    assert f"production served throughout (the same run, InvocationID {before[0][:12]})" in human.out


def test_an_unpatched_ddtree_candidate_fails_naming_the_degenerate_output(scene: Scene) -> None:
    _serve_nextn(scene)
    before = _production(scene)
    stopped = _trial(scene)  # the deploy's preflight sees the unpatched build: nothing is started
    assert stopped.code == 1, stopped.out + stopped.err
    assert "FAILED: preflight: sglang.algorithm: DDTREE" in stopped.out and "trial unit" not in stopped.out
    result = _trial(scene, "--force")  # started anyway: its answers show what the preflight predicted
    assert result.code == 1, result.out + result.err
    assert "FAILED" in result.out and "degenerate output" in result.out and "!!!!" in result.out
    assert _production(scene) == before
    _nothing_left(scene)


def test_a_trial_on_productions_own_gpu_is_refused_before_anything_starts(scene: Scene) -> None:
    _serve_nextn(scene)
    before = _production(scene)
    releases = scene.host.exec(["ls", "/opt/specops/sglang/releases"]).stdout
    result = _trial(scene, gpus="0")
    assert result.code == 1, result.out + result.err
    assert "trial refused, nothing started" in result.err
    assert 'GPU 0 serves production (sglang.service: gpus = "0")' in result.err
    assert "GPU 0 is in use by pid" in result.err
    assert _production(scene) == before
    assert scene.host.exec(["ls", "/opt/specops/sglang/releases"]).stdout == releases
    _nothing_left(scene)


def test_ctrl_c_during_the_smoke_stops_and_removes_the_trial_which_the_host_would_stop_by_itself(
    scene: Scene,
) -> None:
    """The unpatched candidate's smoke crawls (8 tokens/s): Ctrl-C arrives while it runs. The unit carried its
    RuntimeMaxSec= (the host's own cleanup when this machine vanishes); the interrupted command removes it."""
    _serve_nextn(scene)
    before = _production(scene)
    argv = [sys.executable, "-m", "specops", "trial", scene.host.name, "--build", str(UNPATCHED), "--profile",
            "ddtree", "--gpus", "1", "--port", TRIAL_PORT, "--force", "--duration", "15m"]  # fmt: skip
    process = subprocess.Popen(argv, cwd=scene.folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ))  # fmt: skip
    assert process.stderr is not None
    seen = []
    while line := process.stderr.readline():
        seen.append(line)
        if "running the profile's smoke" in line:
            break
    units = scene.host.exec(["systemctl", "list-units", "--plain", "--no-legend", "specops-trial-*"]).stdout.decode()
    unit = units.split()[0] if units.strip() else ""
    limit = scene.host.exec(["systemctl", "show", unit, "-p", "RuntimeMaxUSec", "--value"]).stdout.decode().strip()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=180)
    assert unit.startswith("specops-trial-") and limit == "15min", "".join(seen)
    assert process.returncode == 130, "".join(seen) + out + err
    assert "error: interrupted" in err
    assert _production(scene) == before
    _nothing_left(scene)
