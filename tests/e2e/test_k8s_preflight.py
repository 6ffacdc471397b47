"""The Kubernetes preflight init container, run for real on a test host that stands in for the pod.

`specops render --target k8s --output DIR` writes the objects; the preflight ConfigMap's files are laid out
where the pod mounts them (/specops/preflight), and the init container's exact command runs on a host whose
`python3` is the engine's interpreter (the hosts' venv: real torch and torchcodec, the test build of sglang
in its site-packages, as in an engine image). A good host passes (exit 0); with the FFmpeg libraries gone,
the same probe the doctor uses makes it exit non-zero naming torchcodec, so a pod would stop in Init:Error.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.testbed import drift
from tests.testbed.engine import DDTREE_PATCH, copy_build
from tests.testbed.pyenv import site_packages
from tests.testbed.staging import MODELS_DIR, install_models, inventory_toml, push_folder
from tests.testbed.testhost import TestHost
from tests.unit.clirun import run_cli

pytestmark = pytest.mark.e2e

TERMINATION_LOG = "/tmp/termination-log"


def _render(capsys: pytest.CaptureFixture[str], testhost: TestHost, host_venv: Path, tmp_path: Path) -> Path:
    k8s = textwrap.dedent(
        f"""
        [hosts.{testhost.name}.k8s]
        image = "registry.example/sglang:test"
        models = {{ host_path = "{MODELS_DIR}" }}
        models_mount = "{MODELS_DIR}"
        """
    )
    config = tmp_path / "specops.toml"
    config.write_text(inventory_toml(testhost, host_venv / "bin" / "python") + k8s)
    out = tmp_path / "manifests"
    result = run_cli(capsys, "--config", str(config), "render", testhost.name, "--target", "k8s", "-o", str(out))
    assert result.code == 0, result.err
    return out


def _objects(folder: Path) -> dict[str, dict[str, Any]]:
    return {path.name.split("-", 2)[1]: json.loads(path.read_text()) for path in sorted(folder.iterdir())}


def _pod_like_host(testhost: TestHost, host_venv: Path, tmp_path: Path, objects: dict[str, dict[str, Any]]) -> None:
    """The engine image's sglang in the interpreter's site-packages; the ConfigMap's files at the mount path."""
    install_models(testhost, tmp_path)
    push_folder(testhost, copy_build(tmp_path / "build", [DDTREE_PATCH]), str(site_packages(host_venv)))
    pod = objects["deployment"]["spec"]["template"]["spec"]
    [mount] = [m for m in pod["initContainers"][0]["volumeMounts"] if m["name"] == "preflight"]
    for name, text in objects["configmap"]["data"].items():
        testhost.write_file(f"{mount['mountPath']}/{name}", text.encode())


def _run_init_container(testhost: TestHost, host_venv: Path, command: list[str]) -> tuple[int, str]:
    """The init container's command as the kubelet runs it: `python3` is found on PATH, the image's."""
    path = f"PATH={host_venv}/bin:/usr/local/bin:/usr/bin:/bin"
    done = testhost.exec(["env", path, f"SPECOPS_TERMINATION_LOG={TERMINATION_LOG}", *command], check=False,
                         timeout=300)  # fmt: skip
    return done.returncode, (done.stdout + done.stderr).decode("utf-8", "replace")


def test_the_init_container_passes_on_a_good_host_and_stops_naming_torchcodec_without_ffmpeg(
    testhost: TestHost, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = _objects(_render(capsys, testhost, host_venv, tmp_path))
    _pod_like_host(testhost, host_venv, tmp_path, objects)
    command = objects["deployment"]["spec"]["template"]["spec"]["initContainers"][0]["command"]
    assert command[0] == "python3"

    code, said = _run_init_container(testhost, host_venv, command)
    assert code == 0, said
    assert "preflight passed" in said

    assert drift.remove_ffmpeg_libs(testhost)
    code, said = _run_init_container(testhost, host_venv, command)
    assert code == 1, said
    message = testhost.read_file(TERMINATION_LOG).decode()
    assert message.startswith("torchcodec.ffmpeg: torchcodec ")
    assert "libavutil.so." in message and "\nfix: apt-get install ffmpeg" in message
