"""The compile cache outlives releases: the first deploy's engine compiles into
<base_dir>/shared/cache/<torch>-<cuda>-<arch>, the second deploy's engine (another release) finds it warm;
the deploy prints the downtime the last start took, and `status` reports the cache's size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene, make_scene
from tests.testbed.engine import RENUMBER_PATCH
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e

KEY = "torch2.13.0_cu130-cuda13.0-sm90"  # the venv's torch tag and the nvidia-smi double's H100s
CACHE = f"/opt/specops/shared/cache/{KEY}"


@pytest.fixture
def scene(
    testhost: TestHost, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Scene:  # fmt: skip
    return make_scene(testhost, host_venv, tmp_path, capsys, monkeypatch)


def _engine_lines(scene: Scene, marker: str) -> list[str]:
    return [line for line in scene.journal().splitlines() if marker in line]


def test_the_second_deploy_starts_warm_from_the_cache_the_first_filled(scene: Scene) -> None:
    first, outcome = scene.deploy()
    assert first.code == 0, first.out + first.err
    cold = _engine_lines(scene, "compile cache")
    assert len(cold) == 1 and cold[0].endswith(
        "compile cache cold: compiling 4 kernels into /opt/specops/sglang/cache/triton"
    )
    assert scene.host.exec(["readlink", "/opt/specops/sglang/cache"]).stdout.decode().strip() == CACHE
    manifest = json.loads(scene.host.read_file(f"/opt/specops/sglang/releases/{outcome['release']}/manifest.json"))
    assert manifest["compile_cache"] == KEY and manifest["startup_s"] > 0

    build = ["--build", str(UNPATCHED), "--patch", str(PATCH), "--patch", str(RENUMBER_PATCH)]
    second = scene.cli("deploy", scene.host.name, *build)
    assert second.code == 0, second.out + second.err
    started_s = manifest["gates"]["readiness"]["seconds"]  # what the last start's readiness gate measured
    assert (
        f"expected downtime ~{started_s:.0f} s (the last start, of {outcome['release']}, took {started_s:.1f} s)"
        in (second.err)
    )
    lines = _engine_lines(scene, "compile cache")
    assert len(lines) == 2 and "compile cache warm: 4 kernels loaded from /opt/specops/sglang/cache/triton" in lines[1]

    status = scene.cli("status", scene.host.name, "--json")
    cache = json.loads(status.out)["compile_cache"]
    assert cache["path"] == CACHE and cache["bytes"] >= 4 * 4096
    assert f"compile cache: {cache['bytes'] / 1024:.1f} KiB in {CACHE}" in scene.cli("status", scene.host.name).out
