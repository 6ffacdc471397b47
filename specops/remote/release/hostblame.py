"""The guard's half of "blame before marks" (the client's rule is specops/deploy/blame.py): when the engine a
watch proves fails, is it the release or the host?

Part of the guard file (GUARD_MODULES in bundle.py): stdlib only, Python 3.8+, no op of its own. The host cannot
take an environment fingerprint (that is the client's probe), so it reads what the engine said: a journal line
of a known environment fault (torchcodec without its FFmpeg libraries, no or too old NVIDIA driver, a missing
CUDA library) since the watch began names the host. Then the guard marks nothing and does not roll back: the
release it would put back was verified on the environment as it was before the fault, not on this one, and
would restart into the same fault. The lines are a subset of the client's signatures (signatures/env.py,
signatures/torchcodec.py); a unit test keeps the two in step.
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
    ("a CUDA library is missing", re.compile(
        r"lib(?:cudart|nvrtc|cublas(?:Lt)?|cudnn\w*|cusparse\w*|cufft|curand|cusolver|nvJitLink|nccl)\.so(?:\.[\d.]+)?"
        r": cannot open shared object file")),
)  # fmt: skip


def host_fault_line(lines: Iterable[str]) -> str | None:
    """What the first line naming an environment fault says ("<meaning>: <line>"), or None."""
    for line in lines:
        for meaning, pattern in ENVIRONMENT_LINES:
            if pattern.search(line):
                return meaning + ": " + line.strip()
    return None


def host_fault_since(unit: str, since_epoch: float) -> str | None:
    """host_fault_line over the unit's journal since `since_epoch`; None when it says nothing known (or cannot
    be read: then the failure is the release's, as before)."""
    import subprocess

    argv = ["journalctl", "-u", unit, "--since", "@" + str(int(since_epoch)), "--no-pager", "-q", "-o", "cat"]
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return host_fault_line((done.stdout or b"").decode("utf-8", "replace").splitlines())
