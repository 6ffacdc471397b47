"""Host state around the engine: interpreter, system, env, models on disk, the port, disks, limits, the unit.

Why: most failed deploys are not exotic: a model folder that is not there, a port someone else holds, a
full disk, a unit that needs daemon-reload. Each is cheap to observe here, in the same round trip.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
from typing import Any

from specops.remote.probe.common import first_found, read_text, run_command, site_packages

ENV_KEYS = ("LD_LIBRARY_PATH", "CUDA_HOME", "PATH", "CUDA_VISIBLE_DEVICES", "CONDA_PREFIX")
CONFIG_KEYS = (
    "architectures",
    "model_type",
    "num_hidden_layers",
    "hidden_size",
    "vocab_size",
    "max_position_embeddings",
)
DFLASH_KEYS = ("target_layer_ids", "block_size", "num_target_layers", "mask_token_id")
MAX_HEADER_BYTES = 100 * 1024 * 1024
TCP_LISTEN = "0A"
UNIT_PROPERTIES = "LoadState,ActiveState,SubState,Environment,NeedDaemonReload,FragmentPath,NRestarts"


def gather_python() -> dict[str, Any]:
    return {
        "executable": sys.executable,
        "version": sys.version.split()[0],  # what platform.python_version() says
        "prefix": sys.prefix,
        "site_packages": site_packages(),
    }


def glibc_version() -> str:
    """ "glibc 2.36", as `platform.libc_ver()` joined says it; "" where unknown (musl). The os module asks libc
    directly, so the probe needs neither platform nor socket (a few ms of every probe's start)."""
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        return ""


def gather_system() -> dict[str, Any]:
    booted = os.path.isdir("/run/systemd/system")
    return {
        "hostname": os.uname().nodename,
        "kernel": os.uname().release,
        "glibc": glibc_version(),
        "os_release_text": read_text("/etc/os-release", 20000) or read_text("/usr/lib/os-release", 20000),
        "systemd_booted": booted,
        "systemctl_version": run_command(["systemctl", "--version"]) if booted else None,
        "euid": os.geteuid(),  # 0 after a root login or through sudo (the doctor's ssh.privilege)
    }


def gather_env() -> dict[str, str]:
    return {key: os.environ[key] for key in ENV_KEYS if key in os.environ}


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _select_config(config: dict[str, Any]) -> dict[str, Any]:
    """The fields checks need; a multimodal target keeps its text model's numbers under text_config."""
    text = _mapping(config.get("text_config"))
    dflash = _mapping(config.get("dflash_config"))
    selected: dict[str, Any] = {}
    for key in CONFIG_KEYS:
        if key in config or key in text:
            selected[key] = config.get(key, text.get(key))
    for key in DFLASH_KEYS:
        if key in dflash or key in config:
            selected[key] = dflash.get(key, config.get(key))
    return selected


def _interesting(name: str, role: str) -> bool:
    if name == "fc.weight" or name.endswith(".fc.weight"):
        return True
    return role == "target" and (name.endswith("embed_tokens.weight") or name == "lm_head.weight")


def read_safetensors_header(path: str) -> dict[str, Any]:
    """The JSON header of a safetensors file (8-byte LE length, then JSON); tensor data is never read."""
    with open(path, "rb") as handle:
        raw = handle.read(8)
        if len(raw) != 8:
            raise ValueError(f"{path}: too short for a safetensors header")
        (length,) = struct.unpack("<Q", raw)
        if length > MAX_HEADER_BYTES:
            raise ValueError(f"{path}: header length {length} is implausible")
        header = json.loads(handle.read(length).decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header is not a JSON object")
    return header


def _tensor_shapes(folder: str, role: str) -> dict[str, list[int]]:
    single = os.path.join(folder, "model.safetensors")
    index_path = os.path.join(folder, "model.safetensors.index.json")
    files: list[str] = []
    if os.path.isfile(index_path):
        weight_map = json.loads(read_text(index_path) or "{}").get("weight_map", {})
        files = sorted({f for name, f in weight_map.items() if _interesting(name, role)})
    elif os.path.isfile(single):
        files = ["model.safetensors"]
    shapes: dict[str, list[int]] = {}
    for file_name in files:
        for name, entry in read_safetensors_header(os.path.join(folder, file_name)).items():
            if _interesting(name, role) and isinstance(entry, dict):
                shapes[name] = list(entry.get("shape", []))
    return shapes


def inspect_model(role: str, path: str) -> dict[str, Any]:
    facts: dict[str, Any] = {"role": role, "path": path, "exists": os.path.isdir(path), "readable": False}
    facts.update({"config": {}, "tensors": {}, "error": None})
    if not facts["exists"]:
        return facts
    config_path = os.path.join(path, "config.json")
    facts["readable"] = os.access(path, os.R_OK | os.X_OK) and os.access(config_path, os.R_OK)
    try:
        config = json.loads(read_text(config_path) or "null")
        facts["config"] = _select_config(config) if isinstance(config, dict) else {}
        facts["tensors"] = _tensor_shapes(path, role)
    except (OSError, ValueError) as exc:
        facts["error"] = f"{type(exc).__name__}: {exc}"
    return facts


def gather_models(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [inspect_model(role, path) for role, path in sorted((request.get("models") or {}).items()) if path]


def _listeners() -> dict[int, list[list[str]]]:
    """port -> [[address_hex, inode], ...] of LISTEN sockets in /proc/net/tcp and tcp6."""
    found: dict[int, list[list[str]]] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in (read_text(table, 50000000) or "").splitlines()[1:]:
            fields = line.split()
            if len(fields) > 9 and fields[3] == TCP_LISTEN:
                address, port_hex = fields[1].split(":")
                found.setdefault(int(port_hex, 16), []).append([address, fields[9]])
    return found


def _blocks(address_hex: str, listen: str) -> bool:
    """Does a listener on this address conflict with binding `listen` (wildcards and loopback always do)?"""
    if listen in ("0.0.0.0", "::") or set(address_hex) <= {"0"}:
        return True  # binding the wildcard conflicts with any listener; a wildcard listener with any bind
    if address_hex in ("0100007F", "00000000000000000000000001000000"):
        return True
    try:
        if len(address_hex) == 8:
            return ".".join(str(part) for part in struct.pack("<I", int(address_hex, 16))) == listen
    except (ValueError, OSError):
        return False
    return False


def _socket_holder(inode: str) -> str | None:
    """`pid N name` of the process holding socket inode (needs root for other users' processes)."""
    target = f"socket:[{inode}]"
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    name = (read_text(f"/proc/{pid}/comm", 200) or "?").strip()
                    return f"pid {pid} {name}"
        except OSError:
            continue
    return None


def gather_ports(request: dict[str, Any]) -> list[dict[str, Any]]:
    listeners = _listeners()
    listen = request.get("listen") or "127.0.0.1"
    facts = []
    for port in request.get("ports") or []:
        hits = [entry for entry in listeners.get(int(port), []) if _blocks(entry[0], listen)]
        holder = _socket_holder(hits[0][1]) if hits else None
        facts.append({"port": int(port), "in_use": bool(hits), "holder": holder})
    return facts


def gather_disks(request: dict[str, Any]) -> list[dict[str, Any]]:
    facts = []
    for path in request.get("disk_paths") or []:
        checked = path
        while not os.path.exists(checked) and checked not in ("/", ""):
            checked = os.path.dirname(checked)
        stat = os.statvfs(checked or "/")
        facts.append(
            {
                "path": path,
                "checked": checked or "/",
                "free_bytes": stat.f_bavail * stat.f_frsize,
                "total_bytes": stat.f_blocks * stat.f_frsize,
            }
        )
    return facts


def gather_limits() -> dict[str, Any]:
    import resource

    def value(limit: int) -> int:
        return -1 if limit == resource.RLIM_INFINITY else int(limit)

    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    memlock = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return {
        "nofile_soft": value(nofile[0]),
        "nofile_hard": value(nofile[1]),
        "memlock_soft": value(memlock[0]),
        "memlock_hard": value(memlock[1]),
    }


def gather_unit(request: dict[str, Any]) -> dict[str, Any] | None:
    unit = request.get("unit")
    if not unit or not os.path.isdir("/run/systemd/system"):
        return None
    show = first_found([["systemctl", "show", unit, "-p", UNIT_PROPERTIES]])
    text = show.get("out") or ""
    return {
        "name": unit,
        "show": show,
        "fragment_sha256": _fragment_sha256(text),
        "fragment_head": _fragment_head(text),
    }


def _fragment_path(show_text: str) -> str | None:
    """The unit file systemd loaded (FragmentPath in `systemctl show`), or None."""
    for line in show_text.splitlines():
        if line.startswith("FragmentPath=") and line[len("FragmentPath=") :].strip():
            return line[len("FragmentPath=") :].strip()
    return None


def _fragment_head(show_text: str) -> str | None:
    """The first line of the unit file systemd loaded: specops's own units start with its header."""
    path = _fragment_path(show_text)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.readline(200).rstrip("\n")
    except OSError:
        return None


def _fragment_sha256(show_text: str) -> str | None:
    """sha256 of the unit file systemd loaded (FragmentPath): the unit's hash in the environment fingerprint."""
    path = _fragment_path(show_text)
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None
    return None
