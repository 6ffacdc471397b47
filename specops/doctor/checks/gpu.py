"""Checks of the GPU driver and the torch build: is there a driver, and is torch built for GPUs at all.

Both are read without importing torch (torch/version.py and nvidia-smi), so a broken host cannot crash the
doctor; `--deep` confirms them with a real import.
"""

from __future__ import annotations

from collections import Counter

from specops.doctor.checks._helpers import cuda_tag, host_key, major_minor, numbers
from specops.doctor.checks.gpu_nvml import NVML_SKIP
from specops.doctor.model import CheckContext, CheckResult, failed, passed, skipped, warned
from specops.doctor.registry import check
from specops.probe.facts import GpuFacts

DRIVER_HINT = (
    "install or repair the NVIDIA driver (branch ≥580 for cu13x torch, ≥525 for cu12x); "
    "`nvidia-smi` must list every GPU"
)
# PyTorch's published wheel indexes for CUDA builds, oldest first (download.pytorch.org/whl/<tag>)
TORCH_INDEXES = ((11, 8), (12, 1), (12, 4), (12, 6), (12, 8), (12, 9), (13, 0))


def torch_index_for(driver_cuda: tuple[int, int] | None) -> str:
    """The newest PyTorch index a driver can run: CUDA 12.8 -> '.../whl/cu128'; unknown -> a placeholder."""
    if driver_cuda is None:
        return "https://download.pytorch.org/whl/cuXYZ (XYZ = nvidia-smi's `CUDA Version`)"
    fitting = [cuda for cuda in TORCH_INDEXES if cuda <= driver_cuda]
    chosen = fitting[-1] if fitting else TORCH_INDEXES[0]
    return f"https://download.pytorch.org/whl/{cuda_tag(chosen)}"


def gpu_line(gpu: GpuFacts) -> str:
    """'GPU 0: NVIDIA H200, cc 9.0, 143771 MiB, driver 580.82.07' as evidence."""
    memory = f", {gpu.memory_total_mib} MiB" if gpu.memory_total_mib is not None else ""
    return f"GPU {gpu.index}: {gpu.name}, cc {gpu.compute_cap or '?'}{memory}, driver {gpu.driver_version}"


def gpu_models(gpus: list[GpuFacts]) -> str:
    """'8 × NVIDIA H100 80GB HBM3' (several models joined with ' + ')."""
    counts = Counter(gpu.name for gpu in gpus)
    return " + ".join(f"{count} × {name}" for name, count in counts.items())


@check("gpu.driver", "nvidia-smi runs, lists the GPUs, and all of them use the same driver")
def gpu_driver(ctx: CheckContext) -> CheckResult:
    nvidia = ctx.facts.nvidia
    if not ctx.gpu_host:
        return skipped("gpu.driver", "not a GPU host (--local on a machine without GPUs)")
    evidence = [f"/proc/driver/nvidia/version: {nvidia.proc_driver_version}"] if nvidia.proc_driver_version else []
    if not nvidia.smi_found:
        evidence.append(ctx.facts.errors.get("nvidia", "nvidia-smi: command not found"))
        return failed(
            "gpu.driver", "nvidia-smi not found on a GPU host: no NVIDIA driver installed", DRIVER_HINT, evidence
        )
    if nvidia.nvml_mismatch:
        return skipped("gpu.driver", NVML_SKIP)  # one FAIL for one cause: gpu.nvml names it and its fix
    if nvidia.smi_error and nvidia.health is not None and nvidia.health.lost:
        return skipped("gpu.driver", "nvidia-smi fails because a GPU is lost: see gpu.count")
    if nvidia.smi_error:
        first_line = nvidia.smi_error.strip().splitlines()[0] if nvidia.smi_error.strip() else "no output"
        return failed("gpu.driver", f"nvidia-smi failed: {first_line}", DRIVER_HINT, [*evidence, nvidia.smi_error])
    if not nvidia.gpus:
        return failed("gpu.driver", "nvidia-smi lists no GPUs", DRIVER_HINT, evidence)
    evidence += [gpu_line(gpu) for gpu in nvidia.gpus]
    drivers = sorted({gpu.driver_version for gpu in nvidia.gpus})
    if len(drivers) > 1:
        return warned(
            "gpu.driver",
            f"the GPUs report different driver versions: {', '.join(drivers)}",
            "install one driver for all GPUs and reboot; "
            "`nvidia-smi --query-gpu=index,driver_version --format=csv` shows each GPU's",
            evidence,
        )
    cuda = f" (CUDA {nvidia.cuda_version})" if nvidia.cuda_version else ""
    return passed("gpu.driver", f"driver {drivers[0]}{cuda}, {gpu_models(nvidia.gpus)}", evidence)


@check("torch.variant", "torch is installed and is a CUDA build on a GPU host")
def torch_variant(ctx: CheckContext) -> CheckResult:
    torch = ctx.facts.torch
    driver_cuda = major_minor(ctx.facts.nvidia.cuda_version)
    index = torch_index_for(driver_cuda)
    if not torch.found and ctx.host is None and not ctx.gpu_host:
        return skipped(
            "torch.variant",
            f"torch is not installed for {ctx.facts.python.executable} (no GPUs here: this machine serves nothing)",
        )
    if not torch.found:
        return failed(
            "torch.variant",
            f"torch is not installed for {ctx.facts.python.executable}",
            f"install torch into the venv of {host_key(ctx.host, 'python')}: pip install torch --index-url {index}",
            [f"sys.prefix = {ctx.facts.python.prefix}"],
        )
    release = ".".join(str(part) for part in numbers(torch.version)) or "X.Y.Z"
    evidence = [
        f"{torch.path or 'torch'}/version.py: __version__ = {torch.version!r}, cuda = {torch.cuda!r}",
        f"torch/lib/libc10_cuda.so: {'present' if torch.has_libc10_cuda else 'absent'}",
    ]
    if torch.cuda is None:
        if not ctx.gpu_host:
            return passed("torch.variant", f"torch {torch.version} (CPU build; fine without GPUs)", evidence)
        return failed(
            "torch.variant",
            f"torch {torch.version} is a CPU build on a GPU host",
            f"reinstall torch from the CUDA index matching the driver: "
            f"pip install --force-reinstall torch=={release} --index-url {index}",
            [*evidence, "a real import would say: AssertionError: Torch not compiled with CUDA enabled"],
        )
    if not torch.has_libc10_cuda:
        return warned(
            "torch.variant",
            f"torch {torch.version} says CUDA {torch.cuda} but torch/lib/libc10_cuda.so is missing",
            f"the install is damaged: pip install --force-reinstall torch=={release} --index-url {index}",
            evidence,
        )
    return passed("torch.variant", f"torch {torch.version} (CUDA {torch.cuda})", evidence)
