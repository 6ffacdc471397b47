"""Deploying to a host without GPUs (a CPU staging box) on a real test host: the GPU checks are waived by name
(`waive` in specops.toml and `--skip-check`), every other check still stops a bad build, and `--force` says
which checks it overrode."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene, make_scene
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e

WAIVE = 'waive = [{ check = "gpu.driver", reason = "CPU staging box" }]\n'


@pytest.fixture
def cpu_scene(
    testhost: TestHost, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Scene:  # fmt: skip
    """The test host as it is made: no nvidia-smi, a CPU torch; its specops.toml waives gpu.driver."""
    scene = make_scene(testhost, host_venv, tmp_path, capsys, monkeypatch, gpus=False)
    config = scene.folder / "specops.toml"
    config.write_text(config.read_text() + WAIVE)
    return scene


def _current(scene: Scene) -> str:
    return scene.host.exec(["readlink", "/opt/specops/sglang/current"]).stdout.decode().strip().rsplit("/", 1)[-1]


def _variant(scene: Scene) -> Path:
    """The test build with one more file: a tree the host does not have yet, so the deploy runs in full."""
    build = scene.folder / "build-variant"
    shutil.copytree(UNPATCHED, build, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (build / "variant.txt").write_text("variant\n")
    return build


def test_a_cpu_host_waives_the_gpu_checks_an_unpatched_build_still_stops_and_force_names_what_it_overrode(
    cpu_scene: Scene,
) -> None:
    scene, name = cpu_scene, cpu_scene.host.name
    first, host = scene.deploy("--skip-check", "torch.variant")
    assert first.code == 0, first.out + first.err
    assert host["outcome"] == "deployed"
    assert [(c["id"], c["reason"]) for c in host["waived"]] == [("gpu.driver", "CPU staging box"),
                                                               ("torch.variant", "--skip-check")]  # fmt: skip
    assert _current(scene) == host["release"]

    stopped, refused = scene.deploy("--skip-check", "torch.variant", patched=False)
    assert stopped.code == 1, stopped.out + stopped.err
    assert refused["outcome"] == "preflight-failed"
    assert str(refused["cause"]).startswith("sglang.algorithm: DDTREE is registered but")
    assert "gpu.driver" not in str(refused["cause"]) and "torch.variant" not in str(refused["cause"])
    assert "preflight" in refused["phases"] and "gates" not in refused["phases"]
    assert refused["release"] == host["release"] == _current(scene)  # nothing switched

    forced = scene.cli("deploy", name, "--build", str(_variant(scene)), "--patch", str(PATCH), "--force")
    assert forced.code == 0, forced.out + forced.err
    assert f"{name}: waived gpu.driver: nvidia-smi not found on a GPU host" in forced.out
    assert f"{name}: --force overrode torch.variant: torch " in forced.out
    audit = json.loads(scene.cli("audit", name, "--json").out)
    last = (audit["entries"] if isinstance(audit, dict) else audit)[-1]
    assert last["forced"] is True and [c["id"] for c in last["overridden"]] == ["torch.variant"]
    assert [c["id"] for c in last["waived"]] == ["gpu.driver"]
