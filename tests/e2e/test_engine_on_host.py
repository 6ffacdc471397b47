"""The test engine as the real thing runs: a specops-rendered unit under systemd on a test host.

Shows the failures the product exists for: a healthy host serves the patched DDTREE build with accepted drafts;
the unpatched build produces `!!!!!!!!`; with FFmpeg's libraries removed the unit crashes at start and
the journal holds torchcodec's real error, while `systemctl is-active` may still look fine in between.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.testbed.drift import remove_ffmpeg_libs
from tests.testbed.engine import BUILD_PYTHON, DDTREE_PATCH, copy_build
from tests.testbed.engine.local import http_get, http_post_json
from tests.testbed.staging import install_build, install_models, install_unit, inventory_toml, resolve_target
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e


def _start_engine(host: TestHost, venv: Path, tmp_path: Path, build: Path) -> str:
    install_models(host, tmp_path)
    install_build(host, build, "r1")
    target = resolve_target(tmp_path, inventory_toml(host, venv / "bin" / "python"), host.name)
    unit = install_unit(host, target)
    host.exec(["systemctl", "start", unit])
    return unit


def _wait_ready(host: TestHost, deadline_s: float = 90) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        status, _ = http_get(f"http://{host.ip}:30000/health_generate", timeout=5)
        if status == 200:
            return
        time.sleep(0.5)
    journal = host.exec(["journalctl", "-u", "sglang", "--no-pager"], check=False).stdout.decode()
    raise AssertionError(f"engine not ready in {deadline_s} s; journal:\n{journal[-3000:]}")


def _generate(host: TestHost, max_new_tokens: int) -> dict[str, object]:
    payload = {
        "text": "Explain why the sky is blue.",
        "sampling_params": {"temperature": 0, "max_new_tokens": max_new_tokens, "ignore_eos": True},
    }
    return http_post_json(f"http://{host.ip}:30000/generate", payload, timeout=120)


def _journal(host: TestHost, unit: str) -> str:
    return host.exec(["journalctl", "-u", unit, "--no-pager", "-o", "cat"], check=False).stdout.decode()


def _show(host: TestHost, unit: str) -> dict[str, str]:
    out = host.exec(["systemctl", "show", unit, "-p", "ActiveState,SubState,NRestarts,ExecMainStatus"]).stdout
    return dict(line.split("=", 1) for line in out.decode().splitlines() if "=" in line)


def test_patched_ddtree_build_serves_real_text(testhost: TestHost, host_venv: Path, tmp_path: Path) -> None:
    build = copy_build(tmp_path / "patched", patches=[DDTREE_PATCH])
    unit = _start_engine(testhost, host_venv, tmp_path, build)
    _wait_ready(testhost)
    assert _show(testhost, unit)["ActiveState"] == "active"
    info = json.loads(http_get(f"http://{testhost.ip}:30000/get_server_info")[1])
    assert info["speculative_algorithm"] == "DDTREE"
    result = _generate(testhost, 64)
    meta = result["meta_info"]
    assert isinstance(meta, dict)
    assert meta["completion_tokens"] == 64
    assert meta["spec_accept_length"] > 1
    assert set(str(result["text"]).strip()) != {"!"}
    assert "The server is fired up and ready to roll!" in _journal(testhost, unit)


def test_unpatched_ddtree_build_yields_bangs(testhost: TestHost, host_venv: Path, tmp_path: Path) -> None:
    unit = _start_engine(testhost, host_venv, tmp_path, BUILD_PYTHON)
    _wait_ready(testhost)
    result = _generate(testhost, 8)
    assert result["text"] == "!!!!!!!!"
    meta = result["meta_info"]
    assert isinstance(meta, dict)
    assert meta["spec_accept_length"] == 1.0
    assert "DFLASH target_hidden feature dim mismatch" in _journal(testhost, unit)


def test_without_ffmpeg_the_unit_crashes_at_start_with_torchcodecs_error(
    testhost: TestHost, host_venv: Path, tmp_path: Path
) -> None:
    removed = remove_ffmpeg_libs(testhost)
    assert any(path.endswith("libavutil.so.57") for path in removed)
    unit = _start_engine(testhost, host_venv, tmp_path, BUILD_PYTHON)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "Could not load libtorchcodec" not in _journal(testhost, unit):
        time.sleep(0.5)
    journal = _journal(testhost, unit)
    assert "RuntimeError: Could not load libtorchcodec" in journal
    assert "Could not load this library" in journal
    assert "libtorchcodec_core5.so" in journal
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _show(testhost, unit)["ExecMainStatus"] == "0":
        time.sleep(0.5)
    assert _show(testhost, unit)["ExecMainStatus"] != "0"
    assert http_get(f"http://{testhost.ip}:30000/health")[0] == 0
