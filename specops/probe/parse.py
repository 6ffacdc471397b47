"""Pure parsers: the probe's raw JSON -> HostFacts, and the --deep output -> DeepFacts.

Why pure: checks and tests run on recorded probe outputs; nothing here touches a host. A section the probe
could not observe keeps its default and its reason stays in `errors`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from specops.probe.facts import (
    CudaUserspaceFacts,
    DeepFacts,
    DiskFacts,
    DistFacts,
    FfmpegFacts,
    HostFacts,
    LimitsFacts,
    ModelFacts,
    NativeExtFacts,
    NativeLib,
    NvidiaFacts,
    PortFacts,
    PythonFacts,
    ReleaseFacts,
    RootPathsFacts,
    ServiceUserFacts,
    SpecInfoFacts,
    SystemFacts,
    TorchcodecFacts,
    TorchFacts,
    UnitFacts,
)
from specops.probe.facts_kernel import parse_kernel_log_facts
from specops.probe.parse_gpu import is_nvml_mismatch, nvml_library_version, parse_health
from specops.probe.parse_text import (
    KEY_ERROR_PATTERNS,
    key_error_line,
    parse_apps_query,
    parse_ffmpeg_version,
    parse_gpu_query,
    parse_nvcc_release,
    parse_os_release,
    parse_proc_driver_version,
    parse_smi_header,
    parse_systemctl_version,
    parse_unit_show,
    parse_version_py,
    proc_driver_number,
)

Raw = dict[str, Any]
DEEP_MARKER = "SPECOPS_DEEP "


def _section(raw: Raw, name: str) -> Any:
    value = raw.get(name)
    return value if value is not None else {}


def _out(command: Raw | None) -> str:
    return str((command or {}).get("out") or "")


def parse_python(data: Raw) -> PythonFacts:
    if not data:
        return PythonFacts(executable="", version="0.0.0", prefix="")
    return PythonFacts.model_validate(data)


def parse_system(data: Raw) -> SystemFacts:
    version, version_text = parse_systemctl_version(_out(data.get("systemctl_version")))
    return SystemFacts(
        hostname=data.get("hostname") or "",
        kernel=data.get("kernel") or "",
        glibc=data.get("glibc") or "",
        os_release=parse_os_release(data.get("os_release_text")),
        systemd_version=version if data.get("systemd_booted") else None,
        systemd_version_text=version_text if data.get("systemd_booted") else None,
        euid=data["euid"] if isinstance(data.get("euid"), int) else None,
    )


def parse_torch(data: Raw) -> TorchFacts:
    if not data.get("found"):
        return TorchFacts(found=False)
    version, cuda = parse_version_py(data.get("version_text"))
    return TorchFacts(
        found=True, path=data.get("path"), version=version, cuda=cuda, has_libc10_cuda=bool(data.get("has_libc10_cuda"))
    )


def _libs(data: Raw) -> dict[str, NativeLib]:
    return {name: NativeLib.model_validate(lib) for name, lib in (data.get("libs") or {}).items()}


def parse_torchcodec(data: Raw) -> TorchcodecFacts:
    if not data.get("found"):
        return TorchcodecFacts(found=False)
    version, _cuda = parse_version_py(data.get("version_text"))
    return TorchcodecFacts(found=True, path=data.get("path"), version=version, libs=_libs(data))


def parse_native_ext(data: Raw) -> dict[str, NativeExtFacts]:
    return {
        name: NativeExtFacts(found=bool(ext.get("found")), version=ext.get("version"), libs=_libs(ext))
        for name, ext in data.items()
    }


def parse_nvidia(data: Raw) -> NvidiaFacts:
    """NvidiaFacts from the raw texts: banner, the CSV queries, `-L` and /proc/driver/nvidia/version."""
    header = data.get("header") or {}
    proc_line = parse_proc_driver_version(data.get("proc_version"))
    if not header.get("found"):
        return NvidiaFacts(smi_found=False, driver_version=proc_driver_number(proc_line), proc_driver_version=proc_line)
    smi_error = None
    if header.get("rc") != 0:
        text = (header.get("out") or "") + (header.get("err") or "")
        smi_error = text.strip().splitlines()[0] if text.strip() else f"nvidia-smi exited {header.get('rc')}"
    driver, cuda = parse_smi_header(header.get("out") or "")
    gpu_query = data.get("query_gpu") or {}
    gpus = parse_gpu_query(_out(gpu_query)) if gpu_query.get("rc") == 0 else []
    apps_query = data.get("query_apps") or {}
    processes = parse_apps_query(_out(apps_query)) if apps_query.get("rc") == 0 else []
    if driver is None and gpus:
        driver = gpus[0].driver_version or None
    return NvidiaFacts(
        smi_found=True,
        smi_error=smi_error,
        smi_exit=header.get("rc") if smi_error else None,
        nvml_mismatch=is_nvml_mismatch(header),
        nvml_library_version=nvml_library_version(header),
        driver_version=driver or proc_driver_number(proc_line),
        cuda_version=cuda,
        gpus=gpus,
        processes=processes,
        proc_driver_version=proc_line,
        health=parse_health(data),
    )


def parse_ffmpeg(data: Raw) -> FfmpegFacts:
    return FfmpegFacts(
        cli_version=parse_ffmpeg_version(_out(data.get("cli"))),
        libs=dict(data.get("libs") or {}),
        conda_prefix=data.get("conda_prefix"),
    )


def parse_cuda_userspace(data: Raw) -> CudaUserspaceFacts:
    return CudaUserspaceFacts(
        libs=dict(data.get("libs") or {}), nvcc_version=parse_nvcc_release(_out(data.get("nvcc")))
    )


def parse_unit(data: Raw | None) -> UnitFacts | None:
    if not data:
        return None
    unit = parse_unit_show(str(data.get("name")), _out(data.get("show")))
    sha, head = data.get("fragment_sha256"), data.get("fragment_head")
    return unit.model_copy(update={"fragment_sha256": sha if isinstance(sha, str) else None,
                                   "fragment_head": head if isinstance(head, str) else None})  # fmt: skip


def parse_host_facts(raw: Raw) -> HostFacts:
    """The whole probe document -> HostFacts."""
    errors = {str(k): str(v) for k, v in (raw.get("errors") or {}).items()}
    system = _section(raw, "system")
    if system and not system.get("systemd_booted"):
        errors.setdefault("systemd", "not booted with systemd (/run/systemd/system is missing)")
    return HostFacts(
        probe_version=int(raw.get("probe_version") or 0),
        probe_seconds=float(raw.get("seconds") or 0.0),
        python=parse_python(_section(raw, "python")),
        system=parse_system(system),
        env=dict(_section(raw, "env")),
        torch=parse_torch(_section(raw, "torch")),
        dists=DistFacts.model_validate(_section(raw, "dists")),
        torchcodec=parse_torchcodec(_section(raw, "torchcodec")),
        native_ext=parse_native_ext(_section(raw, "native_ext")),
        nvidia=parse_nvidia(_section(raw, "nvidia")),
        ffmpeg=parse_ffmpeg(_section(raw, "ffmpeg")),
        cuda_userspace=parse_cuda_userspace(_section(raw, "cuda_userspace")),
        sglang=[SpecInfoFacts.model_validate(item) for item in raw.get("sglang") or []],
        models=[ModelFacts.model_validate(item) for item in raw.get("models") or []],
        ports=[PortFacts.model_validate(item) for item in raw.get("ports") or []],
        disks=[DiskFacts.model_validate(item) for item in raw.get("disks") or []],
        limits=LimitsFacts.model_validate(_section(raw, "limits")),
        unit=parse_unit(raw.get("unit")),
        releases=ReleaseFacts.model_validate(_section(raw, "releases")),
        service_user=ServiceUserFacts.model_validate(raw["service_user"]) if raw.get("service_user") else None,
        root_paths=RootPathsFacts.model_validate(raw["root_paths"]) if raw.get("root_paths") else None,
        kernel_log=parse_kernel_log_facts(raw.get("kernel_log"), _section(raw, "nvidia")),
        errors=errors,
    )


def _deep_payload(command: Raw) -> Raw | None:
    for line in _out(command).splitlines():
        if line.startswith(DEEP_MARKER) and command.get("rc") == 0:
            payload = json.loads(line[len(DEEP_MARKER) :])
            return payload if isinstance(payload, dict) else None
    return None


def _deep_error(command: Raw, payload: Raw | None) -> str | None:
    if command.get("timed_out"):
        return "import timed out: " + (str(command.get("err") or "").strip().splitlines() or [""])[-1]
    if payload is None:
        return key_error_line(str(command.get("err") or "") + "\n" + _out(command)) or f"exit {command.get('rc')}"
    return None


def _cuda_init_error(stderr: str, cuda_error: str | None) -> str | None:
    """Why CUDA did not come up although torch imported (a driver-too-old warning, a CPU build), else None."""
    if cuda_error or any(re.search(pattern, stderr) for pattern in KEY_ERROR_PATTERNS):
        return key_error_line(stderr + "\n" + (cuda_error or ""))
    return None


def parse_deep(raw: Raw) -> DeepFacts:
    """The --deep document -> DeepFacts (torch import, CUDA init, torchcodec import and its FFmpeg core)."""
    torch_cmd: Raw = raw.get("torch") or {}
    codec_cmd: Raw = raw.get("torchcodec") or {}
    torch = _deep_payload(torch_cmd) if torch_cmd else None
    codec = _deep_payload(codec_cmd) if codec_cmd else None
    torch_error = _deep_error(torch_cmd, torch) if torch_cmd else raw.get("errors", {}).get("torch")
    if torch is not None:
        torch_error = _cuda_init_error(str(torch_cmd.get("err") or ""), torch.get("cuda_error"))
    return DeepFacts(
        torch_ok=torch is not None if torch_cmd else None,
        torch_version=(torch or {}).get("version"),
        torch_cuda=(torch or {}).get("cuda"),
        torch_cuda_available=(torch or {}).get("cuda_available"),
        torch_error=torch_error,
        torchcodec_ok=codec is not None if codec_cmd else None,
        torchcodec_version=(codec or {}).get("version"),
        torchcodec_error=_deep_error(codec_cmd, codec) if codec_cmd else raw.get("errors", {}).get("torchcodec"),
        torchcodec_ffmpeg_major=(codec or {}).get("ffmpeg_major"),
        seconds=float(raw.get("seconds") or 0.0),
    )
