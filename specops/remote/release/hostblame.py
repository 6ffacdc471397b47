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
class of the client's catalogue, commands/data/xid.toml; the same test keeps them equal). The watch is given the
engine's GPUs (`hosts.NAME.gpus`, the unit's CUDA_VISIBLE_DEVICES), and then, as the client does after a failed
start (engine/gpu_fault.py), only a fault on one of those counts: another engine's GPU failing on the same host
says nothing about this release, and a watch that blamed the host for it would leave a failed release serving,
not rolled back. nvidia-smi's index/bus-id table names the GPU of a fault's bus id; a GPU the table no longer
lists (one that fell off the bus is gone from it), a line without a bus id, or no `gpus` setting: the fault
counts, as before. The bus ids, the nvidia-smi query and the reading of `gpus` are stdlib twins of the client's
(commands/kernel_log.py, engine/gpu_fault.py); a unit test keeps them in step on the recorded driver lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

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
_BUS_ID = re.compile(r"\b([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.\d)?\b")
KERNEL_GREP = r"NVRM: (Xid|.*fallen off the bus)"
BUS_TABLE_ARGV = ["nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"]


def bus_key(text: str) -> str | None:
    """The first PCI bus id in `text` as domain:bus:device in lower case ("0000:3b:00"), the client's form."""
    found = _BUS_ID.search(text)
    if found is None:
        return None
    domain, bus, device = (int(part, 16) for part in found.groups())
    return f"{domain:04x}:{bus:02x}:{device:02x}"


def kernel_fault_line(
    lines: Iterable[str], gpus: set[int] | None = None, bus_table: Callable[[], dict[str, int]] | None = None
) -> str | None:
    """The first kernel line of a GPU fault that needs a reset or a reboot ("a GPU failed: <line>"), or None.
    `gpus`: the engine's GPU indexes (None: any GPU's fault counts); `bus_table` gives nvidia-smi's bus id -> index,
    asked for once, and only when a fault line is found."""
    table: dict[str, int] | None = None
    for line in lines:
        xid = _KERNEL_XID.search(line)
        if not ((xid and int(xid.group(1)) in HOST_XIDS) or "fallen off the bus" in line):
            continue
        bus = bus_key(line[line.index("NVRM:") :] if "NVRM:" in line else line)
        if gpus is not None and bus is not None:
            table = table if table is not None else (bus_table() if bus_table is not None else {})
            index = table.get(bus)
            if index is not None and index not in gpus:
                continue  # another engine's GPU: says nothing about this release
        return "a GPU failed (kernel journal): " + line.strip()
    return None


def gpu_bus_table() -> dict[str, int]:
    """nvidia-smi's GPUs now, bus id -> index ({} when it cannot tell: then every fault counts)."""
    table: dict[str, int] = {}
    for line in _lines(BUS_TABLE_ARGV):
        cells = [cell.strip() for cell in line.split(",")]
        key = bus_key(cells[1]) if len(cells) >= 2 and cells[0].isdigit() else None
        if key is not None:
            table[key] = int(cells[0])
    return table


def engine_gpus(setting: str) -> set[int] | None:
    """The watch's `gpus` setting ("0,1", the unit's CUDA_VISIBLE_DEVICES) as indexes; None: every GPU."""
    indexes = {int(part) for part in setting.split(",") if part.strip().isdigit()}
    return indexes or None


def host_fault_line(lines: Iterable[str]) -> str | None:
    """What the first line naming an environment fault says ("<meaning>: <line>"), or None."""
    for line in lines:
        for meaning, pattern in ENVIRONMENT_LINES:
            if pattern.search(line):
                return meaning + ": " + line.strip()
    return None


def host_fault_since(unit: str, since_epoch: float, gpus: set[int] | None = None) -> str | None:
    """host_fault_line over the unit's journal since `since_epoch`; None when it says nothing known (or cannot
    be read: then the failure is the release's, as before); the unit's journal first, then the kernel's, where
    only a fault on one of `gpus` counts (None: any GPU's)."""
    since = ["--since", "@" + str(int(since_epoch)), "--no-pager", "-q", "-o", "cat"]
    found = host_fault_line(_lines(["journalctl", "-u", unit, *since]))
    kernel = _lines(["journalctl", "-k", *since, "--grep", KERNEL_GREP]) if found is None else []
    return found or kernel_fault_line(kernel, gpus, gpu_bus_table)


def _lines(argv: list[str]) -> list[str]:
    """The command's output lines, journalctl's or nvidia-smi's ([] when it cannot run: then nothing is known)."""
    import subprocess

    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return (done.stdout or b"").decode("utf-8", "replace").splitlines()
