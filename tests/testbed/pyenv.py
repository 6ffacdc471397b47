"""The test hosts' Python environment: a real venv with torch (CPU) and torchcodec, built once and cached.

Why: doctor and deploy tests must meet the real failure modes of an SGLang host (torchcodec that cannot
load its FFmpeg core, a torchcodec built for another torch ABI, a CUDA-tagged torch). Those only show with
the real wheels, and installing them takes about a minute, so the venv is built once per set of pins and
reused by every run and every test host. The hosts' overlay root has the outer `/` as its lower layer, so
they see the cached venv at the same path; drift helpers (drift.py) change it inside one host only.

Layout under the cache dir (`$SPECOPS_TESTBED_CACHE`, default /var/cache/specops-testbed):

    .lock                       flock: one builder at a time across pytest processes
    env-<key>/venv/             the venv (key = hash of pins + base interpreter)
    env-<key>/torchcodec-0.10.0/ the unpacked 0.10.0 wheel (torchcodec/ + its dist-info) for ABI drift
    env-<key>/BUILD.json        pins, build seconds, size
    .build-<key>-<pid>/         a build in progress; renamed to env-<key> only when complete

CLI: `python -m tests.testbed.pyenv ensure` builds if needed and prints the venv python path.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

DEFAULT_CACHE = Path("/var/cache/specops-testbed")
# torch MUST stay pinned: the CPU wheel lies on local disk; an unpinned torch pulls a multi-GB CUDA build.
REQUIREMENTS: tuple[str, ...] = ("torch==2.13.0", "torchcodec==0.13.0", "numpy==2.2.6")
# Built for torch 2.10's unstable C++ ABI: on torch 2.13 its core fails with an undefined c10 symbol.
TORCHCODEC_ABI_DRIFT = "torchcodec==0.10.0"
PIP_TIMEOUT_S = 1800
PR_SET_PDEATHSIG = 1  # linux/prctl.h

Log = Callable[[str], None]


class VenvBuildError(RuntimeError):
    """The host venv could not be built; the message says which step failed and its output tail."""


def cache_dir() -> Path:
    """The cache root; env `SPECOPS_TESTBED_CACHE` overrides it (it must be visible inside the test hosts)."""
    return Path(os.environ.get("SPECOPS_TESTBED_CACHE") or DEFAULT_CACHE)


def base_python() -> str:
    """The interpreter the venv is created from: the real one behind the running (dev) venv.

    `SPECOPS_TESTBED_PYTHON` overrides it. It must be a CPython 3.11 (the torch wheel is cp311) on the
    root filesystem, because the venv symlinks to it and the test hosts must resolve that link.
    """
    return os.environ.get("SPECOPS_TESTBED_PYTHON") or str(getattr(sys, "_base_executable", sys.executable))


def requirements_key(python: str | None = None) -> str:
    """A short hash of everything that decides the venv's content, so a changed pin builds a new one."""
    material = "\n".join([*REQUIREMENTS, TORCHCODEC_ABI_DRIFT, python or base_python(), "layout=1"])
    return hashlib.sha256(material.encode()).hexdigest()[:12]


def env_dir(key: str | None = None) -> Path:
    """The finished cache entry for this set of pins (may not exist yet)."""
    return cache_dir() / f"env-{key or requirements_key()}"


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def site_packages(venv: Path) -> Path:
    """The venv's site-packages (lib/python3.X/site-packages), found rather than guessed."""
    found = sorted((venv / "lib").glob("python3*/site-packages"))
    if not found:
        raise FileNotFoundError(f"no site-packages under {venv}/lib")
    return found[0]


def torchcodec_010_dir(venv: Path) -> Path:
    """The unpacked torchcodec 0.10.0 wheel that was cached beside `venv` at build time."""
    return venv.parent / "torchcodec-0.10.0"


def is_complete(entry: Path) -> bool:
    return (entry / "BUILD.json").is_file() and venv_python(entry / "venv").exists()


def ensure_host_venv(log: Log | None = None) -> Path:
    """Return the cached venv path, building it first if this set of pins has none yet.

    Safe to call from several processes: the build runs under an exclusive flock, and a finished entry
    appears only through one rename, so a reader never sees half a venv.
    """
    say = log or (lambda _msg: None)
    entry = env_dir()
    if is_complete(entry):
        return entry / "venv"
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    with _exclusive_lock(root / ".lock", say):
        if not is_complete(entry):
            _remove_stale_builds(root, entry)
            _build(entry, say)
    return entry / "venv"


@contextlib.contextmanager
def _exclusive_lock(path: Path, say: Log) -> Iterator[None]:
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another process building the host venv ({path})")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _remove_stale_builds(root: Path, entry: Path) -> None:
    """Clear what an interrupted build left (we hold the lock, so nobody else is building)."""
    for stale in root.glob(".build-*"):
        if not stale.name.startswith(".build-sglang-"):  # realsglang.py's builds have their own lock
            shutil.rmtree(stale, ignore_errors=True)
    if entry.exists():  # an entry without BUILD.json was not made by us; never trust it
        shutil.rmtree(entry)


def _build(entry: Path, say: Log) -> None:
    started = time.monotonic()
    work = entry.parent / f".build-{entry.name.removeprefix('env-')}-{os.getpid()}"
    work.mkdir()
    try:
        python = base_python()
        say(f"building host venv from {python}: {' '.join(REQUIREMENTS)}")
        _run([python, "-m", "venv", str(work / "venv")], "create venv")
        pip = [str(venv_python(work / "venv")), "-m", "pip", "--disable-pip-version-check", "--no-input"]
        _run([*pip, "install", *REQUIREMENTS], "pip install")
        _run(
            [*pip, "download", "--no-deps", "-d", str(work / "download"), TORCHCODEC_ABI_DRIFT],
            "pip download torchcodec 0.10.0",
        )
        _unpack_single_wheel(work / "download", work / "torchcodec-0.10.0")
        _relocate_scripts(work / "venv", work, entry)
        seconds, size = round(time.monotonic() - started, 1), _tree_bytes(work)
        record = {
            "requirements": list(REQUIREMENTS),
            "abi_drift": TORCHCODEC_ABI_DRIFT,
            "python": python,
            "build_seconds": seconds,
            "venv_bytes": size,
        }
        (work / "BUILD.json").write_text(json.dumps(record, indent=2) + "\n")
        os.rename(work, entry)
        say(f"host venv ready in {seconds} s, {size / 2**20:.0f} MiB: {entry}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _die_with_parent() -> None:
    """Runs in the child: if the builder is killed, pip must not go on writing into the build dir."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _run(argv: list[str], step: str) -> None:
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False, preexec_fn=_die_with_parent
    )
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise VenvBuildError(f"host venv: {step} failed (exit {proc.returncode}): {argv}\n{tail}")


def _unpack_single_wheel(download: Path, target: Path) -> None:
    wheels = sorted(download.glob("*.whl"))
    if len(wheels) != 1:
        raise VenvBuildError(f"host venv: expected one wheel in {download}, found {wheels}")
    with zipfile.ZipFile(wheels[0]) as archive:
        archive.extractall(target)
    shutil.rmtree(download)


def _relocate_scripts(venv: Path, built_at: Path, final: Path) -> None:
    """Rewrite the build path in bin/ (shebangs, activate scripts) to the path the venv will live at.

    Only bin/ holds absolute paths: .pyc files get their co_filename fixed up by the import system.
    """
    old, new = str(built_at).encode(), str(final).encode()
    for script in (venv / "bin").iterdir():
        if script.is_symlink() or not script.is_file():
            continue
        data = script.read_bytes()
        if old in data and b"\0" not in data[:1024]:
            script.write_bytes(data.replace(old, new))


def _tree_bytes(path: Path) -> int:
    return sum(f.lstat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def build_record(venv: Path) -> dict[str, object]:
    """What BUILD.json says about the venv (pins, build time, size)."""
    data: dict[str, object] = json.loads((venv.parent / "BUILD.json").read_text())
    return data


def prune(log: Log | None = None) -> list[Path]:
    """Remove cache entries of other pin sets (each is ~1 GB) and leftovers of interrupted builds.

    Not done automatically: another checkout with other pins may still be using its entry.
    """
    say = log or (lambda _msg: None)
    root, keep = cache_dir(), env_dir()
    if not root.is_dir():
        return []
    removed: list[Path] = []
    with _exclusive_lock(root / ".lock", say):
        for stale in [*root.glob(".build-*"), *root.glob("env-*")]:
            # realsglang.py owns its entries (and its own lock)
            if stale != keep and not stale.name.startswith((".build-sglang-", "env-sglang-")):
                shutil.rmtree(stale, ignore_errors=True)
                removed.append(stale)
    return removed


def main(argv: list[str] | None = None) -> int:
    """`ensure` builds if needed and prints the venv python; `info` prints BUILD.json; `path` the venv;
    `prune` removes entries of other pin sets."""
    args = sys.argv[1:] if argv is None else argv
    command = args[0] if args else "ensure"

    def to_stderr(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if command == "ensure":
        try:
            venv = ensure_host_venv(log=to_stderr)
        except VenvBuildError as exc:
            print(exc, file=sys.stderr)
            return 1
        print(venv_python(venv))
        return 0
    if command in ("path", "info"):
        entry = env_dir()
        if not is_complete(entry):
            print(f"not built: {entry} (run: python -m tests.testbed.pyenv ensure)", file=sys.stderr)
            return 1
        print(entry / "venv" if command == "path" else json.dumps(build_record(entry / "venv"), indent=2))
        return 0
    if command == "prune":
        for removed in prune(log=to_stderr):
            print(f"removed {removed}")
        return 0
    print("usage: python -m tests.testbed.pyenv [ensure|path|info|prune]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
