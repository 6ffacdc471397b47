"""The pod's preflight (specops/remote/preflight.py) gives the doctor's verdict on the same probe facts.

The preflight is stdlib-only (it runs in the engine image), so it cannot import the doctor's checks; these
tests hold each of its checks to the doctor's check of the same id, on the same raw probe document, so
that a pod stops in Init:Error exactly where `specops doctor` would say FAIL. Then the ConfigMap's files,
laid out as the pod mounts them, run with this machine's Python.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from specops.probe.parse import parse_host_facts
from specops.remote import preflight
from tests.unit.clirun import run_cli
from tests.unit.doctor.factory import context, run

GOLDEN = Path(__file__).parent / "golden"
SITE = "/opt/venv/lib/python3.11/site-packages/torchcodec"
SMI_BANNER = "| NVIDIA-SMI 570.86.15   Driver Version: 570.86.15   CUDA Version: {cuda}   |\n"


def _core(missing: list[str]) -> dict[str, Any]:
    return {"path": SITE, "needed": ["libavutil.so.57", *missing], "missing_libs": missing,
            "missing_torch_symbols": [], "error": None}  # fmt: skip


def _torch_version(cuda: str | None) -> str:
    return f"__version__ = '2.13.0'\ncuda: Optional[str] = {cuda!r}\n"


def _raw(codec_version: str = "0.13.0", core5_missing: list[str] | None = None, torch_cuda: str | None = None,
         smi_cuda: str | None = None, smi_rc: int = 0) -> dict[str, Any]:  # fmt: skip
    """A raw probe document (the shape remote/probe writes) with only the sections these checks read."""
    libs = {f"libtorchcodec_core{major}.so": _core([f"libavutil.so.{major + 52}"]) for major in (4, 6, 7)}
    libs["libtorchcodec_core5.so"] = _core(core5_missing or [])
    raw: dict[str, Any] = {
        "probe_version": 1,
        "errors": {},
        "torchcodec": {"found": True, "path": SITE, "version_text": f"__version__ = '{codec_version}'\n", "libs": libs},
        "torch": {
            "found": True,
            "path": "/opt/venv/torch",
            "version_text": f"__version__ = '2.13.0'\ncuda: Optional[str] = {torch_cuda!r}\n",
        },
        "ffmpeg": {"libs": {} if core5_missing else {"libavutil.so.57": "/usr/lib/libavutil.so.57"}},
    }
    if smi_cuda is not None:
        raw["nvidia"] = {"header": {"found": True, "rc": smi_rc, "out": SMI_BANNER.format(cuda=smi_cuda), "err": ""}}
    return raw


def _doctor(check_id: str, raw: dict[str, Any]) -> str:
    return run(check_id, context(facts=parse_host_facts(raw))).status


def _preflight(check_id: str, raw: dict[str, Any]) -> str:
    failed = {found[0] for found in preflight.verdict(raw)}
    return "fail" if check_id in failed else "not fail"


SCENES = [
    ("torchcodec.ffmpeg", _raw(), "pass"),
    ("torchcodec.ffmpeg", _raw(core5_missing=["libavutil.so.57"]), "fail"),
    ("torchcodec.ffmpeg", _raw(codec_version="0.16.0", core5_missing=["libavutil.so.57"]), "warn"),
    ("cuda.driver_vs_torch", _raw(torch_cuda="13.0", smi_cuda="12.8"), "fail"),
    ("cuda.driver_vs_torch", _raw(torch_cuda="12.8", smi_cuda="12.8"), "pass"),
    ("cuda.driver_vs_torch", _raw(torch_cuda="12.9", smi_cuda="12.8"), "warn"),
    ("gpu.driver", _raw(smi_cuda="12.8", smi_rc=9), "fail"),
]


@pytest.mark.parametrize(("check_id", "raw", "doctor_says"), SCENES)
def test_preflight_fails_exactly_where_the_doctor_fails(check_id: str, raw: dict[str, Any], doctor_says: str) -> None:
    assert _doctor(check_id, raw) == doctor_says
    assert _preflight(check_id, raw) == ("fail" if doctor_says == "fail" else "not fail")


def test_the_torchcodec_failure_names_torchcodec_the_missing_library_and_the_fix() -> None:
    [(_check_id, summary, fix)] = [f for f in preflight.verdict(_raw(core5_missing=["libavutil.so.57"]))
                                  if f[0] == "torchcodec.ffmpeg"]  # fmt: skip
    assert "torchcodec 0.13.0" in summary and "needs libavutil.so." in summary
    assert "apt-get install ffmpeg" in fix


def test_a_build_whose_parser_refuses_the_argv_fails_naming_the_flag() -> None:
    raw = {"sglang": [{"label": "venv", "found": True, "version": "0.5.18",
                       "server_args": {"unknown_flags": ["--speculative-ddtree-budget"], "errors": []}}]}  # fmt: skip
    [(check_id, summary, _fix)] = preflight.verdict(raw)
    assert check_id == "sglang.server_args" and "--speculative-ddtree-budget" in summary
    assert preflight.verdict({"sglang": []})[0][0] == "sglang.server_args"  # no sglang in the image


def _configmap(capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, str], list[str]]:
    result = run_cli(capsys, "--config", str(GOLDEN / "specops.toml"), "render", "gold", "-p", "ddtree",
                     "--target", "k8s", "--json")  # fmt: skip
    objects = json.loads(result.out)["objects"]
    configmap = next(obj for obj in objects if obj["kind"] == "ConfigMap")
    deployment = next(obj for obj in objects if obj["kind"] == "Deployment")
    [init] = deployment["spec"]["template"]["spec"]["initContainers"]
    return configmap["data"], init["command"]


def test_the_init_container_runs_the_configmaps_entry_and_fails_with_the_check_in_the_termination_log(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """This machine's Python has no sglang: the preflight must stop (exit 1) and say so where kubectl shows it."""
    data, command = _configmap(capsys)
    assert command == ["python3", "-I", "/specops/preflight/preflight.py"]
    assert json.loads(data["request.json"])["server_argv"][4:6] == ["--host", "0.0.0.0"]
    assert len(json.dumps(data).encode()) < 1024 * 1024 // 2  # a ConfigMap holds at most 1 MiB
    for name, text in data.items():
        (tmp_path / name).write_text(text)
    log = tmp_path / "termination-log"
    done = subprocess.run([sys.executable, "-I", str(tmp_path / "preflight.py")], capture_output=True, text=True,
                          env={"SPECOPS_TERMINATION_LOG": str(log), "PATH": "/usr/bin:/bin"}, timeout=300)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    message = log.read_text()
    assert message.startswith("sglang.server_args: no sglang in the image's Python")
    assert "\nfix: " in message
