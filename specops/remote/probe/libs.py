"""Native-library facts: where sonames resolve, which torch symbols a library needs that torch lacks.

Why: torchcodec's "Could not load libtorchcodec" hides two different causes (FFmpeg libs missing, or a
torch ABI mismatch) behind one message; both are visible in the files. Resolution follows the loader's
order (RPATH, LD_LIBRARY_PATH, RUNPATH, ld.so.cache, default dirs) plus the places torch itself puts on the
table once imported (torch/lib, `<pkg>.libs`, sys.prefix/lib).
"""

from __future__ import annotations

import glob
import os
import re
import sys
import threading
from typing import Any

from specops.remote.probe.common import first_found, package_dir, package_version, read_text
from specops.remote.probe.elf import ElfError, read_elf
from specops.remote.probe.elfhash import defined_in_library

TORCH_SYMBOL_RE = re.compile(r"^(?:_Z(?:T[VIS])?N?K?(?:3c10|2at|5torch)|aoti_torch_|torch_)")
MULTIARCH = os.uname().machine + "-linux-gnu"  # x86_64-linux-gnu, aarch64-linux-gnu (GH200 hosts)
DEFAULT_LIB_DIRS = ["/lib/" + MULTIARCH, "/usr/lib/" + MULTIARCH, "/lib64", "/usr/lib64", "/lib", "/usr/lib"]
LDCONFIG_ABI = {"x86_64": "x86-64", "aarch64": "AArch64"}  # the `(libc6,x86-64)` tag of `ldconfig -p` lines
FFMPEG_SONAME_RE = re.compile(r"^lib(avutil|avcodec|avformat|avdevice|avfilter|swscale|swresample)\.so\.\d+$")
FFMPEG_BANNER = b"%s version "  # fftools: av_log(..., "%s version " FFMPEG_VERSION, program_name)
CUDA_LIB_FAMILIES = ("libcudart", "libnvrtc", "libnppicc", "libcublas")
MAX_EXT_LIBS = 40
_CACHE: dict[str, Any] = {}
_LDCONFIG_LOCK = threading.Lock()


def ldconfig_cache() -> dict[str, str]:
    """soname -> path from `ldconfig -p` (first entry of this machine's ABI wins, like the loader); cached.

    Locked: the ffmpeg section runs in a background thread while torchcodec's libraries are resolved, and
    `ldconfig -p` should run once, not once per thread.
    """
    with _LDCONFIG_LOCK:
        return _ldconfig_cache_unlocked()


def _ldconfig_cache_unlocked() -> dict[str, str]:
    if "ldconfig" not in _CACHE:
        listing = first_found([["ldconfig", "-p"], ["/sbin/ldconfig", "-p"], ["/usr/sbin/ldconfig", "-p"]])
        entries: dict[str, str] = {}
        for line in listing["out"].splitlines():
            match = re.match(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)", line)
            abi = LDCONFIG_ABI.get(os.uname().machine, "")
            if match and abi in match.group(2) and match.group(1) not in entries:
                entries[match.group(1)] = match.group(3)
        _CACHE["ldconfig"] = entries
    result: dict[str, str] = _CACHE["ldconfig"]
    return result


def ld_library_path() -> list[str]:
    return [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]


def torch_lib_dir() -> str | None:
    """torch/lib of this interpreter; cached: resolve_soname asks for every DT_NEEDED of every library."""
    if "torch_lib_dir" not in _CACHE:
        torch = package_dir("torch")
        _CACHE["torch_lib_dir"] = os.path.join(torch, "lib") if torch else None
    folder: str | None = _CACHE["torch_lib_dir"]
    return folder


def resolve_soname(soname: str, lib_path: str, elf: dict[str, Any]) -> str | None:
    """The file the loader (with torch already imported) would use for soname, or None."""
    origin = os.path.dirname(os.path.abspath(lib_path))
    expand = [p.replace("$ORIGIN", origin).replace("${ORIGIN}", origin) for p in elf["rpath"] + elf["runpath"]]
    package = os.path.dirname(lib_path)
    # torch/lib and sibling libraries are already loaded (by soname) when torchcodec/sgl_kernel load theirs
    extra = [p for p in (torch_lib_dir(), package, package + ".libs", os.path.join(sys.prefix, "lib")) if p]
    for folder in (expand if not elf["runpath"] else []) + ld_library_path() + expand:
        if os.path.exists(os.path.join(folder, soname)):
            return os.path.join(folder, soname)
    cached = ldconfig_cache().get(soname)
    if cached:
        return cached
    for folder in DEFAULT_LIB_DIRS + extra:
        if os.path.exists(os.path.join(folder, soname)):
            return os.path.join(folder, soname)
    return None


def torch_libraries() -> list[str]:
    """torch's own libraries that define its symbols (libtorch*.so and libc10*.so in torch/lib)."""
    folder = torch_lib_dir()
    if not folder:
        return []
    return sorted(glob.glob(os.path.join(folder, "libtorch*.so")) + glob.glob(folder + "/libc10*.so"))


def torch_defines(names: list[str]) -> set[str]:
    """Which of names torch's libraries export: each name is looked up in their hash tables once (cached).

    Why not read all exports: libtorch_cpu.so has ~10^5 of them (0.3-0.5 s in pure Python on a host), while
    torchcodec or sgl_kernel need a few hundred; elfhash.py finds each with one hash-chain walk.
    """
    known: dict[str, bool] = _CACHE.setdefault("torch_symbols", {})
    pending = {name for name in names if name not in known}
    for path in torch_libraries():
        if not pending:
            break
        try:
            found = defined_in_library(path, pending)
        except ElfError:
            continue
        known.update(dict.fromkeys(found, True))
        pending -= found
    known.update(dict.fromkeys(pending, False))
    return {name for name in names if known[name]}


def analyze_library(path: str) -> dict[str, Any]:
    """NativeLib-shaped facts: needed, missing_libs, missing_torch_symbols, error."""
    info: dict[str, Any] = {"path": path, "needed": [], "missing_libs": [], "missing_torch_symbols": [], "error": None}
    try:
        elf = read_elf(path)
    except ElfError as exc:
        info["error"] = str(exc)
        return info
    info["needed"] = elf["needed"]
    info["missing_libs"] = [name for name in elf["needed"] if resolve_soname(name, path, elf) is None]
    wanted = sorted({name for name in elf["undefined"] if TORCH_SYMBOL_RE.match(name)})
    if wanted and torch_lib_dir():
        exports = torch_defines(wanted)
        info["missing_torch_symbols"] = [name for name in wanted if name not in exports]
    return info


def gather_torch() -> dict[str, Any]:
    folder = package_dir("torch")
    if folder is None:
        return {"found": False}
    return {
        "found": True,
        "path": folder,
        "version_text": read_text(os.path.join(folder, "version.py"), 20000),
        "has_libc10_cuda": os.path.exists(os.path.join(folder, "lib", "libc10_cuda.so")),
    }


def gather_torchcodec() -> dict[str, Any]:
    folder = package_dir("torchcodec")
    if folder is None:
        return {"found": False}
    libs = sorted(glob.glob(os.path.join(folder, "libtorchcodec*.so")))
    return {
        "found": True,
        "path": folder,
        "version_text": read_text(os.path.join(folder, "version.py"), 20000),
        "libs": {os.path.basename(p): analyze_library(p) for p in libs},
    }


def gather_native_ext(names: list[str]) -> dict[str, Any]:
    """sgl_kernel / flashinfer: version and every .so in the package (absent packages: found False)."""
    facts: dict[str, Any] = {}
    for name in names:
        folder = package_dir(name)
        if folder is None:
            facts[name] = {"found": False}
            continue
        paths: list[str] = []
        for root, _dirs, files in os.walk(folder):
            paths.extend(os.path.join(root, f) for f in files if f.endswith(".so") or ".so." in f)
        libs = {os.path.relpath(p, folder): analyze_library(p) for p in sorted(paths)[:MAX_EXT_LIBS]}
        facts[name] = {"found": True, "path": folder, "version": package_version(folder), "libs": libs}
    return facts


def _scan_dirs(folders: list[str], pattern: Any) -> dict[str, str]:
    found: dict[str, str] = {}
    for folder in folders:
        try:
            entries = sorted(os.listdir(folder))
        except OSError:
            continue
        for entry in entries:
            if pattern.match(entry) and entry not in found:
                found[entry] = os.path.join(folder, entry)
    return found


def gather_ffmpeg() -> dict[str, Any]:
    """The ffmpeg CLI's version and the FFmpeg sonames the loader reaches (LD_LIBRARY_PATH first, then the
    cache)."""
    cli = ffmpeg_cli()
    conda = os.environ.get("CONDA_PREFIX")
    libs = _scan_dirs(ld_library_path(), FFMPEG_SONAME_RE)
    for soname, path in sorted(ldconfig_cache().items()):
        if FFMPEG_SONAME_RE.match(soname):
            libs.setdefault(soname, path)
    if conda:
        for soname, path in _scan_dirs([os.path.join(conda, "lib")], FFMPEG_SONAME_RE).items():
            libs.setdefault(soname, path)
    return {"cli": cli, "libs": libs, "conda_prefix": conda}


def ffmpeg_cli() -> dict[str, Any]:
    """What the first line of `ffmpeg -version` says, read from the program file when it carries it.

    Why not run it: `ffmpeg -version` loads a hundred-odd shared libraries before it prints a line, 0.1-0.3 s
    on the probe's critical path and that much of the host's CPU on every doctor. Every ffmpeg build carries
    its banner as one string, `%s version <FFMPEG_VERSION>` (the program name goes into %s), so the file
    says the same without starting it. A file without that string (a wrapper script) is run as before.
    The version is the CLI's even when its libraries are missing, which is what ffmpeg.consistency compares.
    """
    path = program_on_path("ffmpeg")
    version = banner_version(path) if path else None
    if path and version:
        return {"found": True, "rc": 0, "out": "ffmpeg version " + version, "err": "", "timed_out": False,
                "path": path, "read_from_file": True}  # fmt: skip
    cli = first_found([["ffmpeg", "-version"]])
    cli["out"] = "\n".join(cli["out"].splitlines()[:1])  # the version line; the build configuration is noise
    cli["path"] = path
    return cli


def program_on_path(name: str) -> str | None:
    """The file `execvp` would run for `name`: the first executable regular file along $PATH."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def banner_version(path: str) -> str | None:
    """FFMPEG_VERSION from the `%s version <FFMPEG_VERSION>` banner string in an ffmpeg program file."""
    import mmap

    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as image:
            start = image.find(FFMPEG_BANNER)
            if start < 0:
                return None
            tail = image[start + len(FFMPEG_BANNER) : start + len(FFMPEG_BANNER) + 200]
    except (OSError, ValueError):  # unreadable, or empty (mmap refuses a zero-length file)
        return None
    found = re.match(rb"[\x21-\x7e]+", tail)
    return found.group(0).decode("ascii") if found else None


def gather_cuda_userspace(cuda_home: str | None, sites: list[str]) -> dict[str, Any]:
    """libcudart/libnvrtc/libnppicc/libcublas files reachable, and `nvcc --version`."""
    pattern = re.compile(r"^({})\.so\.\d+$".format("|".join(CUDA_LIB_FAMILIES)))
    folders = [*ld_library_path(), os.path.join(cuda_home, "lib64")] if cuda_home else ld_library_path()
    for site in sites:
        folders += sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib")))
    libs: dict[str, list[str]] = {}
    candidates = list(_scan_dirs(folders, pattern).values())
    candidates += [p for name, p in sorted(ldconfig_cache().items()) if pattern.match(name)]
    for path in candidates:
        family = os.path.basename(path).split(".so")[0]
        if path not in libs.setdefault(family, []):
            libs[family].append(path)
    nvcc_argvs = [["nvcc", "--version"]] + (
        [[os.path.join(cuda_home, "bin", "nvcc"), "--version"]] if cuda_home else []
    )
    return {"libs": libs, "nvcc": first_found(nvcc_argvs)}
