"""Probe helpers: run a command without ever raising, read small files, guard sections, find packages.

Why: one failing observation (a hung nvidia-smi, an unreadable file) must never cost the others, and the
probe must print exactly one JSON document, so every command and section is wrapped here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Callable, Sequence
from typing import Any

PROBE_VERSION = 1
COMMAND_TIMEOUT_S = 10.0
OUTPUT_LIMIT = 200000  # chars kept of a command's stdout/stderr


def run_command(argv: list[str], timeout: float = COMMAND_TIMEOUT_S) -> dict[str, Any]:
    """Run argv; always return {found, rc, out, err, timed_out} (a missing program is found=False)."""
    result: dict[str, Any] = {"found": True, "rc": None, "out": "", "err": "", "timed_out": False}
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except FileNotFoundError:
        result["found"] = False
        return result
    except subprocess.TimeoutExpired as exc:
        result["timed_out"] = True
        result["err"] = decode_output(exc.stderr) + f"\ntimed out after {timeout:.0f} s"
        return result
    except OSError as exc:
        result["err"] = f"{type(exc).__name__}: {exc}"
        return result
    result["rc"] = done.returncode
    result["out"] = decode_output(done.stdout)
    result["err"] = decode_output(done.stderr)
    return result


def decode_output(data: bytes | None) -> str:
    if not data:
        return ""
    return data.decode("utf-8", "replace")[-OUTPUT_LIMIT:]


def first_found(candidates: list[list[str]], timeout: float = COMMAND_TIMEOUT_S) -> dict[str, Any]:
    """Run the first argv whose program exists (e.g. `ldconfig` may live only in /sbin)."""
    result: dict[str, Any] = {"found": False, "rc": None, "out": "", "err": "", "timed_out": False}
    for argv in candidates:
        result = run_command(argv, timeout)
        if result["found"]:
            return result
    return result


def guarded(result: dict[str, Any], section: str, gather: Callable[[], Any]) -> None:
    """Store gather() under result[section]; an exception only fills result["errors"][section]."""
    try:
        result[section] = gather()
    except Exception as exc:  # a probe section must never abort the probe
        result["errors"][section] = f"{type(exc).__name__}: {exc}"


def read_text(path: str, limit: int = 1000000) -> str | None:
    """A small text file's content, or None when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def site_packages() -> list[str]:
    """The interpreter's site-packages folders, in sys.path order, without duplicates. sysconfig is asked with
    today's prefix: under `-S` the probe sets the venv's itself (sitepath.py), after sysconfig was imported."""
    found: list[str] = []
    paths = sysconfig.get_paths(vars={"base": sys.prefix, "platbase": sys.exec_prefix})
    for path in [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))] + [
        paths.get("purelib", ""),
        paths.get("platlib", ""),
    ]:
        if path and os.path.isdir(path) and path not in found:
            found.append(path)
    return found


def package_dir(name: str) -> str | None:
    """Where a top-level package lives, WITHOUT executing it (find_spec only locates it)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        return next(iter(spec.submodule_search_locations))
    for folder in site_packages():
        candidate = os.path.join(folder, name)
        if os.path.isfile(os.path.join(candidate, "__init__.py")):
            return candidate
    return None


def version_from_file(path: str) -> str | None:
    """`__version__ = "x"` read from a version.py/__init__.py as text (never imported)."""
    text = read_text(path, 200000)
    if text is None:
        return None
    # also `__version__ = version = '0.5.23'`, as setuptools-scm writes sglang/_version.py in released wheels
    match = re.search(r"""(?m)^__version__\s*(?::[^=]*)?=\s*(?:\w+\s*=\s*)?['"]([^'"]+)['"]""", text)
    return match.group(1) if match else None


def package_version(folder: str) -> str | None:
    """A package's version from version.py / _version.py / __init__.py, else its dist-info METADATA."""
    for name in ("version.py", "_version.py", "__init__.py"):
        found = version_from_file(os.path.join(folder, name))
        if found:
            return found
    parent, package = os.path.split(folder)
    try:
        entries = os.listdir(parent)
    except OSError:
        return None
    prefix = package.replace("-", "_").lower() + "-"
    for entry in sorted(entries):
        if entry.lower().startswith(prefix) and entry.endswith(".dist-info"):
            text = read_text(os.path.join(parent, entry, "METADATA"), 20000) or ""
            match = re.search(r"(?m)^Version:\s*(\S+)", text)
            if match:
                return match.group(1)
    return None


def map_in_threads(function: Callable[[Any], Any], items: Sequence[Any], workers: int) -> list[Any]:
    """`ThreadPoolExecutor.map` in order, without concurrent.futures: that import pulls in logging, ~10 ms of
    every probe's start. The first exception (in item order) is raised once every item is done."""
    results: list[Any] = [None] * len(items)
    errors: list[BaseException | None] = [None] * len(items)
    pending = iter(range(len(items)))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                index = next(pending, None)
            if index is None:
                return
            try:
                results[index] = function(items[index])
            except BaseException as exc:  # re-raised in the caller's thread, as pool.map does
                errors[index] = exc

    threads = [threading.Thread(target=work, daemon=True) for _ in range(max(1, min(workers, len(items))))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for error in errors:
        if error is not None:
            raise error
    return results
