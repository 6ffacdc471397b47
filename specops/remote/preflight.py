"""The preflight of a Kubernetes pod: the doctor's probe, run by the engine image's own Python, then a verdict.

Why in the pod: the image and the node are only known there. The init container runs this file (stdlib only,
Python 3.8+) from the preflight ConfigMap beside `probe.py` (the doctor's probe bundle, the same text the
doctor sends over SSH) and `request.json` (the request the doctor would send for this host and profile).
The probe's facts are judged by the checks that decide whether the engine can start at all; the first
failing one's id and fix go to the termination message (`kubectl describe pod`) and the exit status is 1, so
the pod stops in Init:Error instead of crash-looping through a 10-minute model load. Each check mirrors the
doctor's check of the same id (tests/unit/test_preflight.py holds them to the same verdicts).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
TERMINATION_LOG = "/dev/termination-log"
PROBE_TIMEOUT_S = 600
LIBAVUTIL_BY_FFMPEG = {4: 56, 5: 57, 6: 58, 7: 59, 8: 60}
LAZY_CORE_SINCE = (0, 16)  # from torchcodec 0.16 `import torchcodec` survives a missing FFmpeg (the doctor warns)
FFMPEG_FIX = (
    "apt-get install ffmpeg (Debian 12 -> FFmpeg 5.1, Ubuntu 22.04 -> 4.4) or conda install ffmpeg in the image. "
    "The libs (libavutil.so.N) are what count, not the `ffmpeg` CLI."
)


def numbers(text: str | None) -> list[int]:
    """The leading numeric parts of a version: '2.13.0+cu130' -> [2, 13, 0]."""
    found = re.match(r"\s*(\d+(?:\.\d+)*)", text or "")
    return [int(part) for part in found.group(1).split(".")] if found else []


def run_probe(request: dict[str, Any], python: str | None = None) -> dict[str, Any]:
    """The doctor's probe, as the doctor runs it (`python -I -S -`, the script on stdin); its JSON facts."""
    with open(os.path.join(HERE, "probe.py"), encoding="utf-8") as handle:
        source = handle.read()
    script = source + "\n\nmain(json.loads(" + json.dumps(json.dumps(request, sort_keys=True)) + "))\n"
    done = subprocess.run(
        [python or sys.executable, "-I", "-S", "-"],
        input=script.encode(),
        stdout=subprocess.PIPE,
        timeout=PROBE_TIMEOUT_S,
        check=False,
    )
    facts: dict[str, Any] = json.loads(done.stdout.decode("utf-8", "replace"))
    return facts


def check_torchcodec_ffmpeg(facts: dict[str, Any]) -> tuple[str, str] | None:
    """torchcodec.ffmpeg: a libtorchcodec_coreN whose FFmpeg libraries are present will load."""
    codec = facts.get("torchcodec") or {}
    if not codec.get("found"):
        return None
    cores = {}
    for name, lib in (codec.get("libs") or {}).items():
        match = re.fullmatch(r"libtorchcodec_core(\d+)\.so", name)
        if match:
            cores[int(match.group(1))] = lib
    loads = [m for m, lib in cores.items() if not (lib.get("missing_libs") or lib.get("missing_torch_symbols"))
             and lib.get("error") is None]  # fmt: skip
    if not cores or loads:
        return None
    found = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", codec.get("version_text") or "")
    version = found.group(1) if found else "?"
    if numbers(version)[:2] >= list(LAZY_CORE_SINCE):
        return None
    major = max(cores)
    needs = [n for n in cores[major].get("missing_libs") or [] if n.startswith(("libav", "libsw"))]
    needs = needs or [f"libavutil.so.{LIBAVUTIL_BY_FFMPEG.get(major, '?')}"]
    summary = f"torchcodec {version}: no libtorchcodec_coreN loads: core {major} needs {', '.join(needs)}"
    return summary, FFMPEG_FIX


def check_driver_vs_torch(facts: dict[str, Any]) -> tuple[str, str] | None:
    """cuda.driver_vs_torch: the driver's CUDA (nvidia-smi's header) is at least torch's CUDA major."""
    cuda_line = re.search(r"(?m)^cuda[^=\n]*=\s*['\"]([^'\"]+)", (facts.get("torch") or {}).get("version_text") or "")
    torch_cuda = numbers(cuda_line.group(1) if cuda_line else None)[:2]
    header = (facts.get("nvidia") or {}).get("header") or {}
    match = re.search(r"CUDA Version:\s*(\d+)\.(\d+)", header.get("out") or "")
    if len(torch_cuda) < 2 or not match:
        return None
    driver = [int(match.group(1)), int(match.group(2))]
    if driver[0] >= torch_cuda[0]:
        return None
    tag, shown = f"cu{torch_cuda[0]}{torch_cuda[1]}", f"{driver[0]}.{driver[1]}"
    return (
        f"the node's driver supports CUDA {shown} but torch in the image is {tag}",
        f"Driver supports CUDA {shown} but torch is {tag}: schedule the pod on nodes with a newer driver, or use "
        f"an image whose torch is built for CUDA {driver[0]}",
    )


def check_gpu_driver(facts: dict[str, Any]) -> tuple[str, str] | None:
    """gpu.driver: nvidia-smi, present in the pod, talks to the driver and lists the GPUs."""
    header = (facts.get("nvidia") or {}).get("header") or {}
    if not header.get("found") or header.get("rc") == 0:
        return None
    said = (header.get("out") or header.get("err") or "").strip().splitlines()
    reason = said[0] if said else f"exit status {header.get('rc')}"
    return (
        f"nvidia-smi fails in the pod: {reason}",
        "the node's GPU or driver is faulty (NVML mismatch, a lost GPU): cordon the node and run "
        "`specops doctor` on it, or schedule the pod elsewhere",
    )


def check_server_args(facts: dict[str, Any]) -> tuple[str, str] | None:
    """sglang.server_args: the image's sglang, through its own parser, accepts the container's argv."""
    builds = [b for b in facts.get("sglang") or [] if b.get("label") == "venv"]
    if not builds or not builds[0].get("found"):
        return (
            f"no sglang in the image's Python ({(facts.get('python') or {}).get('executable') or 'python3'})",
            "use an image that has sglang installed for this interpreter (k8s.python)",
        )
    report = builds[0].get("server_args") or {}
    unknown = report.get("unknown_flags") or []
    errors = report.get("errors") or []
    if unknown or errors:
        what = f"flags unknown to it: {', '.join(unknown)}" if unknown else errors[0]
        return (
            f"the image's sglang {builds[0].get('version') or '?'} refuses the engine's argv: {what}",
            "use an image whose sglang has this profile's algorithm and flags, or choose a profile it can run",
        )
    return None


CHECKS: tuple[tuple[str, Callable[[dict[str, Any]], tuple[str, str] | None]], ...] = (
    ("gpu.driver", check_gpu_driver),
    ("cuda.driver_vs_torch", check_driver_vs_torch),
    ("torchcodec.ffmpeg", check_torchcodec_ffmpeg),
    ("sglang.server_args", check_server_args),
)


def verdict(facts: dict[str, Any]) -> list[tuple[str, str, str]]:
    """[(check id, summary, fix)] of every failing check, in CHECKS order."""
    found = []
    for check_id, check in CHECKS:
        failure = check(facts)
        if failure:
            found.append((check_id, failure[0], failure[1]))
    return found


def main() -> int:
    with open(os.path.join(HERE, "request.json"), encoding="utf-8") as handle:
        request = json.load(handle)
    request["python"] = sys.executable
    try:
        failures = verdict(run_probe(request))
    except Exception as exc:  # a probe that cannot run is itself the answer
        failures = [("preflight.probe", f"the probe did not run: {type(exc).__name__}: {exc}",
                     "check that the image's Python (k8s.python) runs and that the ConfigMap is mounted")]  # fmt: skip
    for check_id, summary, fix in failures:
        print(f"[x] {check_id}: {summary}\n    fix: {fix}", flush=True)
    if not failures:
        print(f"preflight passed: {', '.join(check_id for check_id, _ in CHECKS)}", flush=True)
        return 0
    check_id, summary, fix = failures[0]
    message = f"{check_id}: {summary}\nfix: {fix}\n"
    try:
        with open(os.environ.get("SPECOPS_TERMINATION_LOG") or TERMINATION_LOG, "w", encoding="utf-8") as log:
            log.write(message[:4000])
    except OSError:
        pass  # outside a pod: stdout says it
    return 1


if __name__ == "__main__":
    sys.exit(main())
