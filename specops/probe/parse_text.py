"""Pure parsers of the raw texts the probe brings back: nvidia-smi, version files and banners, systemctl.

Why here and not on the host: these formats drift (driver branches, systemd versions, torch's generated
version.py), and a parser on the operator's side is pinned by unit tests on recorded outputs.
"""

from __future__ import annotations

import re
import shlex

from specops.probe.facts import GpuFacts, GpuProcess, UnitFacts

NOT_AVAILABLE = {
    "",
    "[n/a]",
    "n/a",
    "[not supported]",
    "not supported",
    "[unknown error]",
    "[insufficient permissions]",
}


def smi_value(text: str) -> str | None:
    """An nvidia-smi CSV cell, or None for `[N/A]`, `[Not Supported]` and friends."""
    value = text.strip()
    return None if value.lower() in NOT_AVAILABLE else value


def smi_int(text: str) -> int | None:
    value = smi_value(text)
    if value is None:
        return None
    match = re.match(r"^(\d+)", value)  # tolerate a unit left in (`81559 MiB`)
    return int(match.group(1)) if match else None


def parse_smi_header(text: str) -> tuple[str | None, str | None]:
    """(driver version, max CUDA version) from the banner of plain `nvidia-smi`."""
    driver = re.search(r"Driver Version:\s*([0-9][0-9.]*)", text)
    cuda = re.search(r"CUDA Version:\s*([0-9][0-9.]*)", text)
    return (driver.group(1) if driver else None, cuda.group(1) if cuda else None)


def _csv_rows(text: str, columns: int) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) > columns:  # a name with a comma: glue the surplus back into the second column
            extra = len(cells) - columns
            cells = [cells[0], ", ".join(cells[1 : 2 + extra]), *cells[2 + extra :]]
        if len(cells) == columns:
            rows.append(cells)
    return rows


def parse_gpu_query(text: str) -> list[GpuFacts]:
    """Rows of `--query-gpu=index,name,driver_version,compute_cap,memory.total,memory.used,uuid` (csv, no units)."""
    gpus = []
    for index, name, driver, cap, total, used, uuid in _csv_rows(text, 7):
        position = smi_int(index)
        if position is None:
            continue
        gpus.append(
            GpuFacts(
                index=position,
                name=name,
                driver_version=smi_value(driver) or "",
                compute_cap=smi_value(cap),
                memory_total_mib=smi_int(total),
                memory_used_mib=smi_int(used),
                uuid=smi_value(uuid),
            )
        )
    return gpus


def parse_apps_query(text: str) -> list[GpuProcess]:
    """Rows of `--query-compute-apps=pid,process_name,used_memory,gpu_uuid` (csv,noheader,nounits)."""
    processes = []
    for pid, name, used, uuid in _csv_rows(text, 4):
        number = smi_int(pid)
        if number is not None:
            processes.append(
                GpuProcess(pid=number, process_name=name, used_memory_mib=smi_int(used), gpu_uuid=smi_value(uuid))
            )
    return processes


def parse_proc_driver_version(text: str | None) -> str | None:
    """The first line of /proc/driver/nvidia/version (`NVRM version: NVIDIA UNIX x86_64 Kernel Module  570...`)."""
    if not text:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else None


def proc_driver_number(text: str | None) -> str | None:
    """The driver version inside the /proc line (`570.124.06`)."""
    match = re.search(r"Kernel Module\s+(?:for\s+\S+\s+)?([0-9]+\.[0-9.]+)", text or "")
    return match.group(1) if match else None


def parse_version_py(text: str | None) -> tuple[str | None, str | None]:
    """(`__version__`, `cuda`) from torch's generated version.py, read as text (cuda None for a CPU build)."""
    if not text:
        return None, None
    version = re.search(r"""(?m)^__version__\s*(?::[^=]*)?=\s*['"]([^'"]+)['"]""", text)
    cuda = re.search(r"""(?m)^cuda\s*(?::[^=]*)?=\s*(?:['"]([^'"]*)['"]|None)""", text)
    return (version.group(1) if version else None, cuda.group(1) if cuda and cuda.group(1) else None)


def parse_systemctl_version(text: str) -> tuple[int | None, str | None]:
    """(252, "systemd 252 (252.38-1~deb12u1)") from `systemctl --version`."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    match = re.match(r"^systemd\s+(\d+)", first)
    return (int(match.group(1)) if match else None, first or None)


def parse_os_release(text: str | None) -> str:
    """PRETTY_NAME from /etc/os-release."""
    match = re.search(r"""(?m)^PRETTY_NAME=(?:"([^"]*)"|'([^']*)'|(\S*))""", text or "")
    return next((group for group in match.groups() if group), "") if match else ""


def parse_ffmpeg_version(text: str) -> str | None:
    """`5.1.9-0+deb12u1` from `ffmpeg version 5.1.9-0+deb12u1 Copyright ...`."""
    match = re.search(r"ffmpeg version\s+(\S+)", text)
    return match.group(1) if match else None


def parse_nvcc_release(text: str) -> str | None:
    """`13.0` from `Cuda compilation tools, release 13.0, V13.0.88`."""
    match = re.search(r"release\s+([0-9]+\.[0-9]+)", text)
    return match.group(1) if match else None


def parse_unit_show(name: str, text: str) -> UnitFacts:
    """`systemctl show UNIT -p LoadState,ActiveState,SubState,Environment,NeedDaemonReload` output."""
    props: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props[key.strip()] = value.strip()
    environment: dict[str, str] = {}
    try:
        words = shlex.split(props.get("Environment", ""))
    except ValueError:
        words = props.get("Environment", "").split()
    for word in words:
        key, sep, value = word.partition("=")
        if sep:
            environment[key] = value
    return UnitFacts(
        name=name,
        exists=props.get("LoadState", "not-found") not in ("not-found", ""),
        active_state=props.get("ActiveState") or None,
        sub_state=props.get("SubState") or None,
        environment=environment,
        need_daemon_reload=props.get("NeedDaemonReload", "no") == "yes",
        n_restarts=int(props["NRestarts"]) if props.get("NRestarts", "").isdigit() else None,
        fragment_path=props.get("FragmentPath") or None,
    )


KEY_ERROR_PATTERNS = (
    r"The NVIDIA driver on your system is too old \(found version \d+\)",
    r"Found no NVIDIA driver on your system",
    r"Torch not compiled with CUDA enabled",
    r"undefined symbol: \S+",
    r"GLIBCXX_[0-9.]+' not found",
)
FFMPEG_SONAME = re.compile(r"lib(avutil|avcodec|avformat|avdevice|avfilter|swscale|swresample)\.so")


def key_error_line(text: str) -> str | None:
    """The line of an import failure that names the cause (torchcodec hides it among FFmpeg attempts)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for pattern in KEY_ERROR_PATTERNS:
        for line in lines:
            if re.search(pattern, line):
                return line
    cannot_open = [line for line in lines if "cannot open shared object file" in line]
    not_ffmpeg = [line for line in cannot_open if not FFMPEG_SONAME.search(line.split("cannot open")[0])]
    if not_ffmpeg or cannot_open:
        return (not_ffmpeg or cannot_open)[0]
    errors = [line for line in lines if re.match(r"^[A-Za-z_.]*(Error|Exception)\b", line)]
    return errors[-1] if errors else (lines[-1] if lines else None)
