"""The guard's half of "blame before marks" (the client's rule is specops/deploy/blame.py): when the engine a
watch proves fails, is it the release or the host?

Part of the guard file (GUARD_MODULES in bundle.py): stdlib only, Python 3.8+, no op of its own. The host cannot
take an environment fingerprint (that is the client's probe), so it reads what the engine said: a journal line
of a known environment fault (torchcodec without its FFmpeg libraries, no or too old NVIDIA driver, a missing
CUDA library) since the watch began names the host. Then the guard marks nothing and does not roll back: the
release it would put back was verified on the environment as it was before the fault, not on this one, and
would restart into the same fault. The lines are a subset of the client's signatures (signatures/env.py,
signatures/torchcodec.py, the gpu-host ones of signatures/hardware.py); a unit test keeps the two in step.

A GPU that failed under the engine (fell off the bus, a GSP hang) is named only by the driver, in the kernel
journal: a reboot- or reset-class Xid there since the watch began names the host too (HOST_XIDS: the "host"
class of the client's catalogue, commands/data/xid.toml; the same test keeps them equal). The guard cannot tell
which GPUs the engine used, so any GPU's fault counts: it only keeps a release unmarked, never marks one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

ENVIRONMENT_LINES = (
    ("torchcodec cannot load FFmpeg", re.compile(
        r"Could not load libtorchcodec|Could not load this library: \S*libtorchcodec|libav\w+\.so\.\d+: cannot open")),
    ("no NVIDIA driver is loaded", re.compile(
        r"Found no NVIDIA driver on your system|lib(?:cuda|nvidia-ml)\.so\.1: cannot open shared object file")),
    ("the NVIDIA driver is too old", re.compile(r"The NVIDIA driver on your system is too old")),
    ("a GPU or its driver failed (the host's)", re.compile(
        r"system not yet initialized|Driver/library version mismatch|NVML/RM version mismatch"
        r"|uncorrectable ECC error encountered|fallen off the bus|GPU is lost")),
    ("a CUDA library is missing", re.compile(
        r"lib(?:cudart|nvrtc|cublas(?:Lt)?|cudnn\w*|cusparse\w*|cufft|curand|cusolver|nvJitLink|nccl)\.so(?:\.[\d.]+)?"
        r": cannot open shared object file")),
)  # fmt: skip


HOST_XIDS = frozenset((48, 61, 62, 64, 74, 79, 95, 109, 119, 120, 121, 136, 140, 143, *range(144, 151)))
_KERNEL_XID = re.compile(r"NVRM: Xid \((?:PCI:)?[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?\): (\d+)\b")
KERNEL_GREP = r"NVRM: (Xid|.*fallen off the bus)"


def kernel_fault_line(lines: Iterable[str]) -> str | None:
    """The first kernel line of a GPU fault that needs a reset or a reboot ("a GPU failed: <line>"), or None."""
    for line in lines:
        xid = _KERNEL_XID.search(line)
        if (xid and int(xid.group(1)) in HOST_XIDS) or "fallen off the bus" in line:
            return "a GPU failed (kernel journal): " + line.strip()
    return None


def host_fault_line(lines: Iterable[str]) -> str | None:
    """What the first line naming an environment fault says ("<meaning>: <line>"), or None."""
    for line in lines:
        for meaning, pattern in ENVIRONMENT_LINES:
            if pattern.search(line):
                return meaning + ": " + line.strip()
    return None


def host_fault_since(unit: str, since_epoch: float) -> str | None:
    """host_fault_line over the unit's journal since `since_epoch`; None when it says nothing known (or cannot
    be read: then the failure is the release's, as before); the unit's journal first, then the kernel's."""
    since = ["--since", "@" + str(int(since_epoch)), "--no-pager", "-q", "-o", "cat"]
    found = host_fault_line(_journal(["journalctl", "-u", unit, *since]))
    return found or kernel_fault_line(_journal(["journalctl", "-k", *since, "--grep", KERNEL_GREP]))


def _journal(argv: list[str]) -> list[str]:
    """journalctl's lines ([] when it cannot run: then nothing is known)."""
    import subprocess

    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return (done.stdout or b"").decode("utf-8", "replace").splitlines()
