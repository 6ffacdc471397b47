"""Drift helpers break one real test host the way SGLang hosts break, and only that host.

Each test imports torch/torchcodec with the cached venv's python INSIDE a test host (real dlopen, real
FFmpeg libs, real overlay) and asserts the error text an operator would see.
"""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.testbed import drift, gpu, pyenv
from tests.testbed.drift import DriftHost
from tests.testbed.pyenv import site_packages, venv_python
from tests.testbed.testhost import TestHost

IMPORT_PROBE = (
    "import torch, torchcodec\n"
    "from torchcodec.decoders import VideoDecoder\n"
    "print(torch.__version__, torchcodec.__version__)\n"
)
IMPORT_TIMEOUT_S = 180  # a real torch import is ~5 s; 2 shared cores under a parallel suite are slower
ABI_SYMBOL = "_ZN3c1013MessageLoggerC1EPKciib"
HostFactory = Callable[[int], list[DriftHost]]


def import_in_host(host: DriftHost, venv: Path) -> subprocess.CompletedProcess[bytes]:
    return host.exec([str(venv_python(venv)), "-c", IMPORT_PROBE], check=False, timeout=IMPORT_TIMEOUT_S)


def import_outside(venv: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(venv_python(venv)), "-c", IMPORT_PROBE], capture_output=True, timeout=IMPORT_TIMEOUT_S, check=False
    )


def assignments(version_py: str) -> dict[str, object]:
    """Top-level `name = literal` / `name: T = literal` of a version.py, read without importing it."""
    found: dict[str, object] = {}
    for node in ast.parse(version_py).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.value:
            found[node.targets[0].id] = ast.literal_eval(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            found[node.target.id] = ast.literal_eval(node.value)
    return found


def torch_version_in(host: DriftHost, venv: Path) -> dict[str, object]:
    text = host.exec(["cat", str(site_packages(venv) / "torch" / "version.py")]).stdout.decode()
    return assignments(text)


def soname_in_ldconfig(host: DriftHost, soname: str) -> bool:
    listing = host.exec(["ldconfig", "-p"]).stdout.decode()
    return any(line.split()[0] == soname for line in listing.splitlines() if "=>" in line)


def test_rewrite_torch_version_keeps_the_other_lines() -> None:
    original = (
        "from typing import Optional\n__version__ = '2.13.0+cpu'\ndebug = False\n"
        "cuda: Optional[str] = None\ngit_version = 'abc'\nhip: Optional[str] = None\n"
    )
    rewritten = drift.rewrite_torch_version(original, "2.13.0+cu130", "13.0")
    assert assignments(rewritten) == {
        "__version__": "2.13.0+cu130",
        "debug": False,
        "cuda": "13.0",
        "git_version": "abc",
        "hip": None,
    }
    assert drift.rewrite_torch_version(rewritten, "2.13.0+cu130", "13.0") == rewritten


def test_changed_pin_gets_its_own_cache_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    before = pyenv.env_dir()
    monkeypatch.setattr(pyenv, "REQUIREMENTS", ("torch==2.13.0", "torchcodec==0.12.0"))
    assert pyenv.env_dir() != before


def test_half_built_cache_is_never_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What an interrupted build leaves (a .build-* dir, an entry without BUILD.json) is cleared first."""
    monkeypatch.setenv("SPECOPS_TESTBED_CACHE", str(tmp_path))
    leftover, half = tmp_path / ".build-x-1", pyenv.env_dir()
    (leftover / "venv").mkdir(parents=True)
    (half / "venv" / "bin").mkdir(parents=True)
    (half / "venv" / "bin" / "python").touch()
    builds: list[Path] = []

    def fake_build(entry: Path, say: pyenv.Log) -> None:
        assert not leftover.exists() and not entry.exists()
        (entry / "venv" / "bin").mkdir(parents=True)
        (entry / "venv" / "bin" / "python").touch()
        (entry / "BUILD.json").write_text("{}")
        builds.append(entry)

    monkeypatch.setattr(pyenv, "_build", fake_build)
    assert pyenv.ensure_host_venv() == half / "venv"
    assert pyenv.ensure_host_venv() == half / "venv"
    assert builds == [half]


@pytest.mark.e2e
def test_healthy_host_imports_torch_and_torchcodec(testhost: DriftHost, host_venv: Path) -> None:
    done = import_in_host(testhost, host_venv)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    torch_version, torchcodec_version = done.stdout.decode().split()
    assert torch_version == "2.13.0+cpu"
    assert torchcodec_version.startswith("0.13.0")
    assert torch_version_in(testhost, host_venv)["cuda"] is None


@pytest.mark.e2e
def test_removing_ffmpeg_breaks_torchcodec_on_that_host_only(testhost_factory: HostFactory, host_venv: Path) -> None:
    broken, healthy = testhost_factory(2)
    removed = drift.remove_ffmpeg_libs(broken)

    assert set(drift.CORE5_SONAMES) <= {Path(p).name for p in removed}
    assert any(Path(p).name.startswith("libavutil.so.57.") for p in removed)  # the real file, not just the link
    assert drift.remove_ffmpeg_libs(broken) == []
    assert not soname_in_ldconfig(broken, "libavutil.so.57")
    assert soname_in_ldconfig(healthy, "libavutil.so.57")

    failed = import_in_host(broken, host_venv)
    error = failed.stderr.decode()
    assert failed.returncode != 0
    assert "RuntimeError: Could not load libtorchcodec" in error
    assert "libtorchcodec_core5.so" in error
    assert "libavutil.so.57: cannot open shared object file" in error

    for other in (import_in_host(healthy, host_venv), import_outside(host_venv)):
        assert other.returncode == 0, other.stderr.decode()[-2000:]


@pytest.mark.e2e
def test_torchcodec_010_fails_with_the_abi_symbol(testhost: DriftHost, host_venv: Path) -> None:
    assert drift.install_torchcodec_010(testhost, host_venv) == "0.10.0"

    failed = import_in_host(testhost, host_venv)
    error = failed.stderr.decode()
    assert failed.returncode != 0
    assert f"libtorchcodec_core5.so: undefined symbol: {ABI_SYMBOL}" in error

    outer_version = (site_packages(host_venv) / "torchcodec" / "version.py").read_text()
    assert str(assignments(outer_version)["__version__"]).startswith("0.13.0")
    assert import_outside(host_venv).returncode == 0


@pytest.mark.e2e
def test_cuda_tag_and_nvidia_smi_change_only_that_host(testhost_factory: HostFactory, host_venv: Path) -> None:
    """The field's 'driver too old' setup: a cu130 torch on a 570 driver (max CUDA 12.8), on one host."""
    tagged, untouched = testhost_factory(2)
    drift.set_torch_cuda_tag(tagged, host_venv, version="2.13.0+cu130", cuda="13.0")
    assert drift.install_nvidia_smi(tagged, "h100x8-570") == "/usr/local/bin/nvidia-smi"

    tagged_fields = torch_version_in(tagged, host_venv)
    assert (tagged_fields["__version__"], tagged_fields["cuda"]) == ("2.13.0+cu130", "13.0")
    assert tagged_fields["git_version"] == torch_version_in(untouched, host_venv)["git_version"]
    assert torch_version_in(untouched, host_venv)["cuda"] is None
    outer = assignments((site_packages(host_venv) / "torch" / "version.py").read_text())
    assert (outer["__version__"], outer["cuda"]) == ("2.13.0+cpu", None)

    header = tagged.exec(["nvidia-smi"]).stdout.decode()
    assert "Driver Version: 570.124.06" in header and "CUDA Version: 12.8" in header
    drift.install_nvidia_smi(tagged, "h100x8-580")
    query = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
    assert tagged.exec(query).stdout.decode().split() == ["580.65.06"] * 8
    assert untouched.exec(["sh", "-c", "command -v nvidia-smi"], check=False).returncode != 0


@pytest.mark.e2e
def test_gpu_scenarios_bring_their_recordings_and_fabric_manager_unit(testhost: TestHost) -> None:
    """A scenario switch on a host changes what the real systemd says about the fabric manager and what
    nvidia-smi prints from the recordings (a field list of that driver, the mismatch text and exit 18)."""
    unit = ["systemctl", "is-active", gpu.FABRIC_MANAGER_UNIT]
    drift.install_nvidia_smi(testhost, "h200x8-590-nvswitch")
    assert testhost.exec(unit, check=False).stdout.decode() == "active\n"
    fabric = ["nvidia-smi", "--query-gpu=fabric.state,fabric.status", "--format=csv,noheader"]
    assert testhost.exec(fabric).stdout.decode() == "Completed, Success\n" * 8

    drift.install_nvidia_smi(testhost, "h200x8-fabric-in-progress")
    stopped = testhost.exec(unit, check=False)
    assert (stopped.returncode, stopped.stdout.decode()) == (3, "failed\n")
    assert testhost.exec(fabric).stdout.decode() == "In Progress, N/A\n" * 8

    drift.install_nvidia_smi(testhost, "h100x8-535-old-fields")
    old = testhost.exec(["nvidia-smi", "--query-gpu=remapped_rows.pending", "--format=csv"], check=False)
    assert (old.returncode, old.stdout.decode()) == (
        2,
        'Field "remapped_rows.pending" is not a valid field to query.\n\n',
    )

    drift.install_nvidia_smi(testhost, "nvml-mismatch")
    assert testhost.exec(unit, check=False).stdout.decode() == "inactive\n"  # no unit: a host without NVSwitch
    mismatch = testhost.exec(["nvidia-smi", "-L"], check=False)
    assert (mismatch.returncode, mismatch.stdout.decode()) == (18, gpu.recorded_body("nvml-mismatch.txt"))
