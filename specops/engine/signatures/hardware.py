"""Signatures of the GPU and its driver failing under the engine, and of the engine's own kernels faulting.

Why apart: the first question after a crash is "the host or the build?". A fabric manager that has not finished,
a user-space NVML newer than the loaded kernel module, uncorrectable ECC errors and a GPU that fell off the bus
are the host's (no release fixes them: reset, reboot or replace); an illegal memory access and the
application-class Xids (13, 31, 43) are the engine's (a kernel bug: the release, not the host). Texts are quoted
from public SGLang/vLLM/PyTorch issues (tests/unit/engine/data/journal_corpus/README.md).
"""

from __future__ import annotations

from specops.engine.signatures.model import Signature, sig

# Xids after which the GPU needs a reset or the host a reboot (NVIDIA's Xid catalogue: resolution RESET_GPU,
# RESTART_BM or hardware), as opposed to the application-class ones below.
_HOST_XIDS = r"48|61|62|63|64|74|79|92|94|95|119|120|121|123|136|140|143|144|145|149|150|154|155|156"
_ENGINE_XIDS = r"13|31|43"

HARDWARE_SIGNATURES: tuple[Signature, ...] = (
    sig(
        "cuda-fabric-not-ready",
        "fatal",
        r"(?:Error|error \()\s*802\)?\s*:? system not yet initialized|system not yet initialized"
        r"|CUDA_ERROR_SYSTEM_NOT_READY|cudaErrorSystemNotReady",
        "CUDA cannot start: error 802 'system not yet initialized' - on an NVSwitch host (HGX H100/H200/B200) the "
        "fabric manager has not finished (the host, not the build)",
        "on the host: `systemctl status nvidia-fabricmanager` (install the nvidia-fabricmanager package of exactly "
        "the driver's version, enable and start it); `nvidia-smi -q | grep -A2 Fabric` must show State Completed, "
        "Status Success; `specops doctor HOST`",
        family="gpu-host",
    ),
    sig(
        "nvml-driver-mismatch",
        "fatal",
        r"Failed to initialize NVML: Driver/library version mismatch|NVML/RM version mismatch",
        "the NVIDIA user-space libraries and the loaded kernel module differ (a driver upgrade without a reboot; "
        "the host, not the build)",
        "reboot the host (or unload and reload the nvidia modules), then hold the nvidia packages so unattended "
        "upgrades cannot do it again; `specops doctor HOST`",
        family="gpu-host",
    ),
    sig(
        "gpu-ecc-uncorrectable",
        "fatal",
        r"uncorrectable ECC error encountered|CUDA_ERROR_ECC_UNCORRECTABLE",
        "a GPU reported uncorrectable memory (ECC) errors (the host's hardware, not the build)",
        "drain the host and reset the GPU (`nvidia-smi -r -i N`) or reboot; if it comes back, the GPU needs "
        "replacing (`nvidia-smi -q -d ECC,ROW_REMAPPER`); `specops doctor HOST`",
        family="gpu-host",
    ),
    sig(
        "gpu-lost",
        "fatal",
        rf"NVRM: Xid \(PCI:(?P<bus_id>[\w:.]+)\): (?P<xid>{_HOST_XIDS})\b"
        rf"|caused by previous Xid (?P<previous_xid>{_HOST_XIDS})\b|fallen off the bus|GPU is lost",
        "the kernel driver logged a GPU fault that needs a reset or a reboot (an Xid of the hardware class, or the "
        "GPU fell off the bus; the host, not the build)",
        "drain the host, reset the GPU or reboot; if it recurs on the same bus id, hand the GPU to the hardware "
        "vendor (`journalctl -k | grep -i xid`; `specops doctor HOST`)",
        family="gpu-host",
    ),
    sig(
        "illegal-memory-access",
        "fatal",
        r"an illegal memory access was encountered|CUDA_ERROR_ILLEGAL_ADDRESS|cudaErrorIllegalAddress",
        "a GPU kernel of the engine read or wrote outside its memory (an engine bug, not the host)",
        "roll back to the previous release (`specops rollback HOST`) and report it with the build and the request "
        "mix; CUDA_LAUNCH_BLOCKING=1 in the host env names the kernel; other features (speculative decoding, "
        "HiCache, CUDA graphs) are the usual suspects",
        family="engine-bug",
    ),
    sig(
        "xid-engine",
        "error",
        rf"NVRM: Xid \(PCI:(?P<bus_id>[\w:.]+)\): (?P<xid>{_ENGINE_XIDS})\b",
        "the kernel driver logged an application-class Xid: a kernel of the engine faulted (an engine bug, not "
        "the host)",
        "read the engine's own error near this time; roll back the release if it repeats; no GPU reset is needed",
        family="engine-bug",
    ),
)
