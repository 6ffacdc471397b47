"""The probe against the test hosts' real venv (torch 2.13 CPU + torchcodec 0.13), run on this machine.

Why: the torchcodec verdicts (which FFmpeg core resolves, which torch symbols are missing) must be right on
real wheels, and `--deep` must agree with them; no test host is needed for the healthy case. The venv is built
by CI (.ci/run) or `python -m tests.testbed.pyenv ensure`: without it these tests skip (and fail under CI=true).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from specops.host.local import LocalHost
from specops.probe.run import probe, probe_deep
from tests.testbed.pyenv import venv_python
from tests.unit.probe.conftest import host_spec


def test_static_probe_sees_torch_and_core5_resolving(host_venv_built: Path, ffmpeg: str) -> None:
    """FFmpeg 5 (its libraries, its program) is what makes core5 resolve and the CLI version agree."""
    facts = probe(LocalHost(), host_spec(str(venv_python(host_venv_built))))
    assert facts.torch.found and facts.torch.version == "2.13.0+cpu" and facts.torch.cuda is None
    assert facts.torch.has_libc10_cuda is False
    codec = facts.torchcodec
    assert codec.found and codec.version == "0.13.0+cpu"
    core5 = codec.libs["libtorchcodec_core5.so"]
    assert core5.missing_libs == [] and core5.missing_torch_symbols == [] and core5.error is None
    assert "libavutil.so.57" in core5.needed
    assert codec.libs["libtorchcodec_core8.so"].missing_libs[0] == "libavutil.so.60"
    assert codec.libs["libtorchcodec_custom_ops5.so"].missing_libs == []  # its sibling core5 is loaded first
    assert facts.ffmpeg.libs["libavutil.so.57"].endswith("/libavutil.so.57")
    assert facts.ffmpeg.cli_version is not None and facts.ffmpeg.cli_version.startswith("5.")
    assert facts.native_ext["sgl_kernel"].found is False
    print(f"static probe with the host venv: {facts.probe_seconds:.2f}s")
    assert facts.probe_seconds < 2.0


@pytest.mark.testbed  # imports torch in the hosts' venv (~7 s): outside the fast suite; e2e covers it too
def test_deep_probe_agrees(host_venv_built: Path, ffmpeg: str) -> None:
    deep = probe_deep(LocalHost(), host_spec(str(venv_python(host_venv_built))))
    print(f"deep probe: {deep.seconds:.2f}s")
    assert deep.torch_ok and deep.torch_version == "2.13.0+cpu" and deep.torch_cuda is None
    assert deep.torch_cuda_available is False
    assert deep.torch_error == "AssertionError: Torch not compiled with CUDA enabled"
    assert deep.torchcodec_ok and deep.torchcodec_version == "0.13.0+cpu" and deep.torchcodec_error is None
    assert deep.torchcodec_ffmpeg_major == 5
