"""Typed facts about the NVIDIA GPUs of one host: what nvidia-smi lists, and what the GPUs and the driver say
about their health.

Built by specops/probe/parse.py and parse_gpu.py from the probe's raw nvidia-smi texts. In the health facts a
value of None means the GPU reported no value (`[N/A]`, `[Not Supported]`: ECC off, MIG on, a PCIe host has no
fabric); a field the driver does not know at all is absent from `NvidiaHealth.queried` instead, so a check can
tell "this GPU has no such thing" (a value) from "this driver cannot say" (SKIP).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Facts(BaseModel):
    """Strict (an unknown key is a bug) and frozen (checks only read them), like every facts model."""

    model_config = ConfigDict(extra="forbid", frozen=True)


CLOCK_PREFIXES = ("clocks_event_reasons.", "clocks_throttle_reasons.")  # the newer name first (R535+)


class GpuFacts(Facts):
    index: int
    name: str
    driver_version: str
    compute_cap: str | None = None  # "9.0"
    memory_total_mib: int | None = None
    memory_used_mib: int | None = None
    uuid: str | None = None


class GpuProcess(Facts):
    pid: int
    process_name: str
    used_memory_mib: int | None = None
    gpu_uuid: str | None = None


class GpuHealth(Facts):
    """One row of the health query (`--query-gpu=<the health fields this driver knows>`)."""

    index: int | None = None  # None when nvidia-smi printed ERR! for it
    bus_id: str = ""  # "00000000:18:00.0"
    remap_pending: bool | None = None  # remapped_rows.pending
    remap_failure: bool | None = None  # remapped_rows.failure
    ecc_volatile_uncorrected: int | None = None  # since the driver loaded
    ecc_aggregate_uncorrected: int | None = None  # lifetime
    recovery_action: str | None = None  # gpu_recovery_action: "None", "Reset", "Node Reboot", ...
    mig_current: str | None = None  # "Enabled" / "Disabled"
    compute_mode: str | None = None  # "Default", "Exclusive_Process", "Prohibited"
    persistence: str | None = None  # "Enabled" / "Disabled"
    fabric_state: str | None = None  # "Completed", "In Progress", "Not Started"; None: no NVSwitch fabric
    fabric_status: str | None = None  # "Success", ...
    clock_events: dict[str, bool] = {}  # reason ("hw_slowdown") -> active, from either naming
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    err_fields: list[str] = []  # fields nvidia-smi printed as ERR! (a GPU in trouble)

    @property
    def label(self) -> str:
        """'GPU 3 (00000000:5D:00.0)' for evidence and summaries."""
        index = "?" if self.index is None else str(self.index)
        return f"GPU {index} ({self.bus_id})" if self.bus_id else f"GPU {index}"


class LostGpu(Facts):
    """A GPU nvidia-smi could not open: 'Unable to determine the device handle for GPU <bus>: GPU is lost'."""

    bus_id: str
    reason: str


class NvidiaHealth(Facts):
    """The GPUs' and the driver's own account of their health, from one nvidia-smi round."""

    queried: list[str] = []  # the health fields the probe asked for (those this driver knows)
    gpus: list[GpuHealth] = []
    error: str | None = None  # the health query failed: its first line
    listed: int | None = None  # "GPU N:" lines of `nvidia-smi -L`
    lost: list[LostGpu] = []
    fabric_manager: str | None = None  # `systemctl is-active nvidia-fabricmanager`: active, inactive, failed, ...

    def lacks(self, *fields: str) -> list[str]:
        """The fields this driver could not be asked for; a clock reason counts under either of its names."""
        known = set(self.queried)
        missing = []
        for name in fields:
            names = (
                [prefix + name.split(".", 1)[1] for prefix in CLOCK_PREFIXES]
                if name.startswith(CLOCK_PREFIXES)
                else [name]
            )
            if not known.intersection(names):
                missing.append(name)
        return missing


class NvidiaFacts(Facts):
    smi_found: bool = False
    smi_error: str | None = None  # nvidia-smi ran but failed (text)
    smi_exit: int | None = None  # its exit code when it failed (18: NVML/driver version mismatch)
    nvml_mismatch: bool = False  # "Failed to initialize NVML: Driver/library version mismatch"
    nvml_library_version: str | None = None  # "NVML library version: 550.144" when nvidia-smi prints it
    driver_version: str | None = None  # from the header or the query
    cuda_version: str | None = None  # max CUDA the driver supports ("12.8"), from the header
    gpus: list[GpuFacts] = []
    processes: list[GpuProcess] = []
    proc_driver_version: str | None = None  # /proc/driver/nvidia/version first line
    health: NvidiaHealth | None = None  # None: the probe did not read GPU health (an older probe)
