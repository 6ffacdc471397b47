"""run_as on a real test host: the doctor names a missing user with the useradd line; once it exists, a deploy
runs the engine as that user once it can reach its interpreter (its /proc status shows the uid and the device group), the gates pass, the
release files and the env file stay root's, and the engine cannot write to its own release; the doctor warns
when the engine's user owns the venv root runs."""

from __future__ import annotations

import json

import pytest

from tests.e2e.deployscene import Scene

pytestmark = pytest.mark.e2e

SERVICE_DIR = "/opt/specops/sglang"


@pytest.fixture
def scene(scene: Scene) -> Scene:
    """The shared scene, with the engine run as `sglang` and a GPU device node only the video group opens."""
    made = scene
    config = made.folder / "specops.toml"
    config.write_text(config.read_text() + 'run_as = "sglang"\nrun_as_groups = ["video"]\n')
    # a GPU device node as a hardened driver leaves it: root:video 0660 (NVreg_DeviceFileGID/Mode)
    made.host.exec(["mknod", "-m", "0660", "/dev/nvidia0", "c", "195", "0"])
    made.host.exec(["chgrp", "video", "/dev/nvidia0"])
    return made


def _sh(scene: Scene, script: str) -> str:
    return scene.host.exec(["sh", "-c", script]).stdout.decode().strip()


def _service_user_check(scene: Scene, check_id: str = "service.user") -> dict[str, object]:
    result = scene.cli("doctor", scene.host.name, "--only", check_id, "--json")
    document = json.loads(result.out)
    host = document["hosts"][scene.host.name] if "hosts" in document else document
    checks = {check["id"]: check for check in host["checks"]}
    return checks[check_id]


def test_the_engine_runs_as_the_service_user_and_passes_the_gates(scene: Scene) -> None:
    missing = _service_user_check(scene)
    assert missing["status"] == "fail"
    assert "useradd --system --user-group" in str(missing["hint"])

    _sh(scene, "useradd --system --user-group --no-create-home --shell /usr/sbin/nologin sglang")
    closed = _service_user_check(scene)  # the test venv's python links into /root (0700)
    assert closed["status"] == "fail" and "/root: uid 0, group root, mode 0700" in str(closed["summary"])
    assert str(closed["hint"]).startswith("`chmod o+x /root` on the host")
    _sh(scene, "chmod o+x /root")
    assert _service_user_check(scene)["status"] == "pass"

    result, host = scene.deploy()
    assert result.code == 0, result.out + result.err
    assert host["outcome"] == "deployed" and host["gates"]["passed"] is True

    uid, video = _sh(scene, "id -u sglang"), _sh(scene, "getent group video | cut -d: -f3")
    pid = _sh(scene, "systemctl show -p MainPID --value sglang")
    status = dict(line.split(":", 1) for line in _sh(scene, f"cat /proc/{pid}/status").splitlines() if ":" in line)
    assert status["Uid"].split() == [uid] * 4
    assert video in status["Groups"].split()
    assert _sh(scene, f"ps -o user= -p {pid}") == "sglang"

    owners = _sh(
        scene,
        f"stat -c '%U:%G %a' {SERVICE_DIR}/env {SERVICE_DIR}/current/ {SERVICE_DIR}/current/sglang/launch_server.py",
    )
    assert owners.splitlines() == ["root:root 600", "root:root 755", "root:root 644"]
    cache = _sh(scene, "stat -c '%U:%G %a' \"$(readlink /opt/specops/sglang/cache)\"")
    assert cache == "sglang:sglang 700"  # the engine's own: it compiled into it
    assert "compile cache cold: compiling 4 kernels" in scene.journal()
    refused = scene.host.exec(
        ["runuser", "-u", "sglang", "--", "touch", f"{SERVICE_DIR}/current/sglang/x.py"], check=False
    )
    assert refused.returncode != 0


def test_the_doctor_warns_once_the_engines_user_owns_the_venv(scene: Scene) -> None:
    """What root runs must stay root's: a site-packages chowned to sglang (its own pip install) is named."""
    _sh(scene, "useradd --system --user-group --no-create-home --shell /usr/sbin/nologin sglang")
    assert _service_user_check(scene, "root.owned")["status"] == "pass"
    _sh(scene, f"chown sglang {scene.venv}/lib/python3*/site-packages")
    warned = _service_user_check(scene, "root.owned")
    assert warned["status"] == "warn" and "= the engine's user" in str(warned["summary"]), warned
    assert str(warned["hint"]).startswith(f"`chown -R root:root {scene.venv} && chmod -R go-w {scene.venv}`")
