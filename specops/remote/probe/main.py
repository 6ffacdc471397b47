"""The probe's entry point: `main(request)` gathers every section and prints ONE JSON document.

Why so defensive: the operator parses stdout as JSON, so nothing else may reach stdout (stray prints go
to stderr while sections run) and no exception may escape (each section records its own error).
`--deep` (request["deep"]) is a separate round trip that really imports torch and torchcodec, each in a
subprocess with a timeout, and reports what they printed.

Request (built by specops/probe/run.py:build_request): python, base_dir, service, unit, listen, ports [int],
cuda_home, models {role: abs path}, disk_paths [path], sglang_roots {label: folder holding `sglang/`},
proc_driver_version_path, run_as, run_as_groups, deep (bool), deep_timeout_s.
Answer: {probe_version, seconds, errors {section: why}, python, system, env, torch, dists, torchcodec,
native_ext, ffmpeg, cuda_userspace, nvidia, kernel_log, releases, sglang, models, ports, disks, limits, unit,
service_user, root_paths};
commands appear raw as {found, rc, out, err, timed_out}. --deep answers
{probe_version, seconds, errors, torch, torchcodec}, each a command whose stdout has a `SPECOPS_DEEP {json}` line.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from specops.remote.probe.account import gather_service_user
from specops.remote.probe.common import PROBE_VERSION, guarded, package_dir, run_command, site_packages
from specops.remote.probe.dists import gather_dists
from specops.remote.probe.gpu import gather_nvidia
from specops.remote.probe.hoststate import (
    gather_disks,
    gather_env,
    gather_limits,
    gather_models,
    gather_ports,
    gather_python,
    gather_system,
    gather_unit,
)
from specops.remote.probe.kernel import gather_kernel_log
from specops.remote.probe.libs import (
    gather_cuda_userspace,
    gather_ffmpeg,
    gather_native_ext,
    gather_torch,
    gather_torchcodec,
)
from specops.remote.probe.rootpaths import gather_root_paths
from specops.remote.probe.sglang import gather_releases, gather_sglang
from specops.remote.probe.sitepath import enable_site_packages, python_argv

DEEP_TIMEOUT_S = 120.0
NATIVE_EXTENSIONS = ["sgl_kernel", "flashinfer"]
DEEP_TORCH = r"""
import json, warnings
warnings.simplefilter("always")
import torch
out = {"version": torch.__version__, "cuda": torch.version.cuda}
try:
    out["cuda_available"] = bool(torch.cuda.is_available())
    torch.cuda.init()
except Exception as exc:
    out["cuda_error"] = "%s: %s" % (type(exc).__name__, exc)
print("SPECOPS_DEEP " + json.dumps(out), flush=True)
"""
DEEP_TORCHCODEC = r"""
import json, re
import torch
import torchcodec
from torchcodec.decoders import VideoDecoder
out = {"version": getattr(torchcodec, "__version__", None), "ffmpeg_major": None}
with open("/proc/self/maps") as maps:
    for line in maps:
        found = re.search(r"libtorchcodec_core(\d+)\.so", line)
        if found:
            out["ffmpeg_major"] = int(found.group(1))
print("SPECOPS_DEEP " + json.dumps(out), flush=True)
"""


def in_background(result: dict[str, Any], section: str, gather: Callable[[], Any]) -> threading.Thread:
    """Run a section that mostly waits on subprocesses (nvidia-smi, imports) while the others read files."""
    thread = threading.Thread(target=guarded, args=(result, section, gather), daemon=True)
    thread.start()
    return thread


def gather_all(request: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {"probe_version": PROBE_VERSION, "errors": {}}
    nvidia = in_background(result, "nvidia", lambda: gather_nvidia(request))
    kernel_log = in_background(result, "kernel_log", gather_kernel_log)  # journalctl -k: GPU faults of this boot
    ffmpeg = in_background(result, "ffmpeg", gather_ffmpeg)  # may run `ffmpeg -version` (0.1-0.3 s) or ldconfig
    # The builds' parsers run in subprocesses (an import of sglang each: seconds where it pulls in torch), so
    # they start as soon as the releases are known and run while this thread reads everything else.
    guarded(result, "releases", lambda: gather_releases(request))
    venv_package = package_dir("sglang")
    venv_root = os.path.dirname(venv_package) if venv_package else None
    releases = result.get("releases") or {}
    sglang = in_background(result, "sglang", lambda: gather_sglang(request, releases, venv_root))
    # The other sections that wait on a subprocess (systemctl, nvcc) run beside this thread's file reads too;
    # each writes only its own key, and the answer is printed with sorted keys, so the order cannot show.
    waiting = [
        in_background(result, "system", gather_system),
        in_background(result, "unit", lambda: gather_unit(request)),
        in_background(
            result, "cuda_userspace", lambda: gather_cuda_userspace(request.get("cuda_home"), site_packages())
        ),
    ]
    guarded(result, "python", gather_python)
    guarded(result, "env", gather_env)
    guarded(result, "torch", gather_torch)
    guarded(result, "dists", gather_dists)
    guarded(result, "torchcodec", gather_torchcodec)
    guarded(result, "native_ext", lambda: gather_native_ext(NATIVE_EXTENSIONS))
    guarded(result, "models", lambda: gather_models(request))
    guarded(result, "ports", lambda: gather_ports(request))
    guarded(result, "disks", lambda: gather_disks(request))
    guarded(result, "limits", gather_limits)
    guarded(result, "service_user", lambda: gather_service_user(request))
    guarded(result, "root_paths", lambda: gather_root_paths(request))
    for thread in [nvidia, kernel_log, ffmpeg, sglang, *waiting]:
        thread.join()
    return result


def deep_import(snippet: str, timeout: float) -> dict[str, Any]:
    """Run one import snippet in a fresh interpreter; its output and how long it took."""
    started = time.time()
    done = run_command(python_argv(snippet), timeout)
    done["seconds"] = round(time.time() - started, 3)
    return done


def gather_deep(request: dict[str, Any]) -> dict[str, Any]:
    """Both imports at once (separate processes, so one crash cannot hide the other's error)."""
    timeout = float(request.get("deep_timeout_s") or DEEP_TIMEOUT_S)
    result: dict[str, Any] = {"probe_version": PROBE_VERSION, "errors": {}}
    codec = in_background(result, "torchcodec", lambda: deep_import(DEEP_TORCHCODEC, timeout))
    guarded(result, "torch", lambda: deep_import(DEEP_TORCH, timeout))
    codec.join()
    return result


def main(request: dict[str, Any]) -> None:
    """Gather (facts, or deep when request["deep"]) and print exactly one JSON document on stdout."""
    started = time.time()
    enable_site_packages()  # the probe runs as root with -S: the venv's packages, none of its .pth code
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # anything a section prints must not corrupt the JSON
    try:
        result = gather_deep(request) if request.get("deep") else gather_all(request)
    except BaseException as exc:  # the operator must always get a JSON document
        result = {"probe_version": PROBE_VERSION, "errors": {"probe": f"{type(exc).__name__}: {exc}"}}
    finally:
        sys.stdout = real_stdout
    result["seconds"] = round(time.time() - started, 3)
    real_stdout.write(json.dumps(result, default=str, sort_keys=True) + "\n")
    real_stdout.flush()
