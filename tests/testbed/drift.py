"""Drift helpers: break ONE test host for real, the way SGLang hosts break in the field.

Why: doctor checks and deploy gates must be tested against real failures, not mocked probe output. Each
helper changes the host through its overlay root (a deletion becomes a whiteout, a rewrite lands in the
upper layer), so the outer machine, the shared cached venv and every other host stay healthy.

The host object is the test-host API: `exec(argv, input=None, check=True, timeout=60)` runs inside the
host's namespaces, `write_file(path, data, mode=0o644)` writes inside its root.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import Protocol

from tests.testbed import gpu
from tests.testbed.pyenv import site_packages, torchcodec_010_dir

# Every FFmpeg library family a torchcodec core links (all majors: core4..core9), plus libpostproc.
FFMPEG_LIB_RE = re.compile(
    r"^lib(avutil|avcodec|avformat|avdevice|avfilter|swscale|swresample|postproc)\.so(\.[0-9]+)*$"
)
# The sonames torchcodec's libtorchcodec_core5.so needs (FFmpeg 5, what Debian 12 ships).
CORE5_SONAMES = (
    "libavutil.so.57",
    "libavcodec.so.59",
    "libavformat.so.59",
    "libavdevice.so.59",
    "libavfilter.so.8",
    "libswscale.so.6",
    "libswresample.so.4",
)
NVIDIA_SMI_ON_PATH = "/usr/local/bin/nvidia-smi"
NVIDIA_SMI_DIR = "/usr/local/lib/specops-testbed/gpu"
INSTALLED_NVIDIA_SMI = f"{NVIDIA_SMI_DIR}/nvidia-smi"
# files and symlinks directly in a lib dir (the soname links AND the real files behind them)
FIND_LIBRARY_FILES = ["-maxdepth", "1", "(", "-type", "f", "-o", "-type", "l", ")", "-name", "lib*.so*", "-print"]


class DriftHost(Protocol):
    """The part of the test-host API the drift helpers use."""

    def exec(
        self, argv: list[str], input: bytes | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[bytes]: ...

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None: ...


def _out(host: DriftHost, argv: list[str]) -> str:
    return host.exec(argv).stdout.decode()


def ffmpeg_libs_in_host(host: DriftHost) -> list[str]:
    """Every FFmpeg library file or symlink in the dirs the host's linker knows (ld.so.cache + defaults)."""
    dirs = {"/usr/lib/x86_64-linux-gnu", "/usr/local/lib", "/usr/lib"}
    for line in _out(host, ["ldconfig", "-p"]).splitlines():
        if "=>" in line and FFMPEG_LIB_RE.match(line.split()[0]):
            dirs.add(str(Path(line.rsplit("=>", 1)[1].strip()).parent))
    # canonical dirs only: on merged-/usr Debian /lib is a link to usr/lib and would list every file twice
    resolved = host.exec(["readlink", "-e", *sorted(dirs)], check=False).stdout.decode().split()
    existing = sorted(set(resolved))
    listing = _out(host, ["find", *existing, *FIND_LIBRARY_FILES])
    return sorted({p for p in listing.splitlines() if FFMPEG_LIB_RE.match(Path(p).name)})


def remove_ffmpeg_libs(host: DriftHost) -> list[str]:
    """Delete every FFmpeg shared library (sonames and the real files behind them) from this host only.

    Why: the most common torchcodec failure in the field is "Could not load libtorchcodec" because the
    FFmpeg libs are missing. Files are removed through the overlay (whiteouts), then `ldconfig` rebuilds
    the host's cache so `ldconfig -p` agrees. Idempotent: a second call removes nothing and returns [].
    """
    removed = ffmpeg_libs_in_host(host)
    if removed:
        host.exec(["rm", "-f", "--", *removed])
    host.exec(["ldconfig"])
    return removed


def _host_site_packages(venv: Path) -> Path:
    # The venv sits on the lower layer, so the outer machine's path is the host's path.
    return site_packages(venv)


def install_torchcodec_010(host: DriftHost, venv: Path) -> str:
    """Make this host's venv carry torchcodec 0.10.0 instead of 0.13.0; return the installed version.

    Why: 0.10.0 was built against torch 2.10's unstable C++ ABI; on torch 2.13 loading its core fails with
    the real `undefined symbol: _ZN3c1013MessageLoggerC1EPKciib`, hidden among FFmpeg-looking errors.
    The unpacked wheel cached beside the venv replaces `torchcodec/` and its dist-info inside the host
    only (overlay upper layer). Idempotent.
    """
    site = _host_site_packages(venv)
    wheel = torchcodec_010_dir(venv)
    if not (wheel / "torchcodec").is_dir():
        raise FileNotFoundError(f"no cached torchcodec 0.10.0 wheel at {wheel} (rebuild the host venv)")
    script = (
        f"set -e; cd {shlex.quote(str(site))}; rm -rf torchcodec torchcodec-*.dist-info torchcodec.libs; "
        f"cp -a {shlex.quote(str(wheel))}/. ."
    )
    host.exec(["sh", "-c", script])
    version_file = _out(host, ["cat", str(site / "torchcodec" / "version.py")])
    match = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", version_file)
    return match.group(1) if match else "unknown"


def rewrite_torch_version(text: str, version: str, cuda: str | None) -> str:
    """Set `__version__` and `cuda` in the text of torch/version.py, keeping every other line."""
    cuda_literal = repr(cuda)
    text, n_version = re.subn(r"(?m)^__version__\s*=.*$", f"__version__ = {version!r}", text)
    text, n_cuda = re.subn(r"(?m)^cuda(\s*:[^=]*)?=.*$", lambda m: f"cuda{m.group(1) or ''}= {cuda_literal}", text)
    if n_version != 1 or n_cuda != 1:
        raise ValueError("torch/version.py has no single __version__/cuda line to rewrite")
    return text


def set_torch_cuda_tag(host: DriftHost, venv: Path, version: str = "2.13.0+cu130", cuda: str | None = "13.0") -> str:
    """Rewrite torch/version.py in this host's venv so torch claims a CUDA build; return the new text.

    Why: doctor reads torch's CUDA tag from version.py as text (never importing torch) to compare it with
    the driver; a real cu130 wheel is several GB and useless without a GPU, so only the tag is changed.
    Idempotent (the rewrite is a fixed point).
    """
    path = str(_host_site_packages(venv) / "torch" / "version.py")
    new_text = rewrite_torch_version(_out(host, ["cat", path]), version, cuda)
    host.write_file(path, new_text.encode(), 0o644)
    return new_text


def install_nvidia_smi(host: DriftHost, scenario: str) -> str:
    """Put the nvidia-smi TEST DOUBLE on this host's PATH, playing `scenario`; return its PATH entry.

    Why: no GPU is reachable here, but the doctor's driver checks read `nvidia-smi`; the double prints
    what a real driver of that scenario would. It is installed with its scenarios.json in
    /usr/local/lib/specops-testbed/gpu/ (it reads the data beside its real path) and linked from
    /usr/local/bin; the scenario name goes to the file the double reads. Re-running switches scenario.
    /proc/driver/nvidia/version cannot be faked (proc is not writable inside the host).
    """
    if scenario not in gpu.scenario_names():
        raise ValueError(f"unknown nvidia-smi scenario {scenario!r}; known: {gpu.scenario_names()}")
    host.write_file(INSTALLED_NVIDIA_SMI, gpu.NVIDIA_SMI.read_bytes(), 0o755)
    host.write_file(f"{NVIDIA_SMI_DIR}/scenarios.json", gpu.SCENARIOS_JSON.read_bytes(), 0o644)
    for recorded in sorted(gpu.RECORDED_DIR.iterdir()):
        host.write_file(f"{NVIDIA_SMI_DIR}/recorded/{recorded.name}", recorded.read_bytes(), 0o644)
    host.exec(["ln", "-sfn", INSTALLED_NVIDIA_SMI, NVIDIA_SMI_ON_PATH])
    play_nvidia_smi_scenario(host, scenario)
    return NVIDIA_SMI_ON_PATH


def play_nvidia_smi_scenario(host: DriftHost, scenario: str) -> None:
    """Switch the installed double to `scenario` the way a driver change looks on a real host.

    Why the touch: the probe keeps the driver's field list keyed by the nvidia-smi file's identity (path,
    inode, size, mtime) where /proc/driver/nvidia/version is missing, as on these hosts. A real driver
    change replaces nvidia-smi; a scenario switch only rewrites a file the double reads, so the double's
    mtime is renewed here, or the next probe would use the previous scenario's field list.
    """
    host.write_file(gpu.SCENARIO_FILE, f"{scenario}\n".encode(), 0o644)
    host.exec(["touch", INSTALLED_NVIDIA_SMI])
    install_fabric_manager(host, gpu.fabric_manager_state(scenario))


def install_fabric_manager(host: DriftHost, state: str) -> None:
    """A real systemd unit named like NVIDIA's fabric manager, `active` or `failed` as the scenario says;
    `absent` removes it (a host without NVSwitch has no such unit).

    Why a unit and not a systemctl double: the probe asks the host's real systemd, so the test sees exactly
    what `systemctl is-active nvidia-fabricmanager.service` answers on a GPU host in that state.
    """
    host.exec(["systemctl", "stop", gpu.FABRIC_MANAGER_UNIT], check=False)
    host.exec(["systemctl", "reset-failed", gpu.FABRIC_MANAGER_UNIT], check=False)
    path = f"/etc/systemd/system/{gpu.FABRIC_MANAGER_UNIT}"
    if state == "absent":
        host.exec(["rm", "-f", path])
        host.exec(["systemctl", "daemon-reload"])
        return
    host.write_file(path, gpu.fabric_manager_unit(state).encode(), 0o644)
    host.exec(["systemctl", "daemon-reload"])
    host.exec(["systemctl", "start", gpu.FABRIC_MANAGER_UNIT], check=False)
