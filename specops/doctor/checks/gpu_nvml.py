"""`gpu.nvml`: can nvidia-smi talk to the driver at all, and the gate every GPU health check passes first.

A driver package upgraded without a reboot leaves the new user-space NVML next to the old kernel module:
every nvidia-smi call then exits 18 ("Failed to initialize NVML: Driver/library version mismatch") and CUDA
fails the same way. That is one cause with one fix, so it gets one FAIL here; the checks that read
nvidia-smi SKIP and point at it instead of failing a second time.
"""

from __future__ import annotations

from specops.doctor.model import CheckContext, CheckResult, failed, passed, skipped
from specops.doctor.registry import check
from specops.probe.facts import GpuHealth, NvidiaHealth
from specops.probe.parse_text import proc_driver_number

NVML_SKIP = "nvidia-smi cannot talk to the driver: see gpu.nvml"
NVML_HINT = (
    "the driver was upgraded without a reboot: reboot (or stop every process using /dev/nvidia*, then "
    "`rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia` and run `nvidia-smi`), then hold the driver packages "
    "so it does not happen again: `apt-mark hold` the nvidia packages (Debian/Ubuntu) or "
    "`dnf versionlock add` them (RHEL), or exclude them from unattended-upgrades"
)


def smi_unusable(ctx: CheckContext) -> str | None:
    """Why a check that reads nvidia-smi cannot run here (a SKIP summary), or None."""
    nvidia = ctx.facts.nvidia
    if not ctx.gpu_host:
        return "not a GPU host (--local on a machine without GPUs)"
    if not nvidia.smi_found:
        return "nvidia-smi not found (see gpu.driver)"
    if nvidia.nvml_mismatch:
        return NVML_SKIP
    return None


def health_or_skip(ctx: CheckContext, check_id: str, *fields: str, rows: bool = True) -> NvidiaHealth | CheckResult:
    """The health facts when nvidia-smi answered and the driver knows every field; else the SKIP to return.

    A field the driver does not list is never a FAIL: older drivers lack some (gpu_recovery_action is R570+)."""
    reason = smi_unusable(ctx)
    if reason:
        return skipped(check_id, reason)
    health = ctx.facts.nvidia.health
    if health is None:
        return skipped(check_id, "the probe read no GPU health (an older specops on the host side?)")
    if ctx.facts.nvidia.smi_error and not health.gpus and not health.lost:
        return skipped(check_id, "nvidia-smi failed (see gpu.driver)")
    missing = health.lacks(*fields)
    if missing:
        driver = ctx.facts.nvidia.driver_version or "of unknown version"
        return skipped(check_id, f"driver {driver} does not report {', '.join(missing)}")
    if rows and health.error and not health.gpus:
        return skipped(check_id, f"nvidia-smi's health query failed: {health.error}")
    return health


def gpu_indices(gpus: list[GpuHealth]) -> str:
    """'0,3' for a summary ('?' for a GPU whose index read ERR!)."""
    return ",".join("?" if gpu.index is None else str(gpu.index) for gpu in gpus)


@check("gpu.nvml", "nvidia-smi can talk to the driver (no NVML/kernel module version mismatch)")
def gpu_nvml(ctx: CheckContext) -> CheckResult:
    nvidia = ctx.facts.nvidia
    if not ctx.gpu_host:
        return skipped("gpu.nvml", "not a GPU host (--local on a machine without GPUs)")
    if not nvidia.smi_found:
        return skipped("gpu.nvml", "nvidia-smi not found (see gpu.driver)")
    kernel = proc_driver_number(nvidia.proc_driver_version)
    answered = nvidia.health is not None and bool(nvidia.health.gpus)  # NVML answered for some GPUs (one is lost)
    if not nvidia.nvml_mismatch and nvidia.smi_error and not answered:
        return skipped("gpu.nvml", "nvidia-smi failed, but not with a version mismatch (see gpu.driver)")
    if not nvidia.nvml_mismatch:
        shown = nvidia.driver_version or kernel
        return passed("gpu.nvml", f"nvidia-smi talks to the driver{f' ({shown})' if shown else ''}")
    exit_code = f" (exit {nvidia.smi_exit})" if nvidia.smi_exit is not None else ""
    evidence = [f"nvidia-smi{exit_code}: {nvidia.smi_error or 'Driver/library version mismatch'}"]
    evidence.append(f"kernel module (/proc/driver/nvidia/version): {kernel or nvidia.proc_driver_version or 'unknown'}")
    if nvidia.nvml_library_version:
        evidence.append(f"NVML library (user space): {nvidia.nvml_library_version}")
    versions = (
        f": kernel module {kernel}, library {nvidia.nvml_library_version}"
        if kernel and nvidia.nvml_library_version
        else ""
    )
    return failed(
        "gpu.nvml", f"NVML driver/library version mismatch{versions}: nvidia-smi and CUDA cannot use the GPUs",
        NVML_HINT, evidence,
    )  # fmt: skip
