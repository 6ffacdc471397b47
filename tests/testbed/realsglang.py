"""Real upstream SGLang in the test bed: the newest release's wheel, importable on a CPU machine, cached.

Why: the stand-in engine only knows the flags we taught it. To prove a rendered unit really starts, the
doctor and the stand-in engine run SGLang's OWN parser (`ServerArgs.add_cli_args(parser)`), so the test
bed needs a real release whose `sglang.srt.server_args` and `sglang.srt.speculative.spec_info` import
without a GPU. The wheel goes in with `--no-deps` (its pins would pull a CUDA torch and ~10 GB of
kernels); only what those two modules import is added, each pinned.

Layout under the cache dir (the same root as pyenv.py's, visible inside the test hosts):

    env-sglang-<key>/build/          the unpacked wheel (sglang/ + sglang-<v>.dist-info): copy it into a
                                     release as the candidate build, or put it first on sys.path
    env-sglang-<key>/parser-build/   the same release trimmed to the files importing server_args and
                                     spec_info (and running the parser) loads: ~1.6 MB instead of
                                     ~130 MB, small enough to push to a test host as a deploy candidate
    env-sglang-<key>/parser-table.json  the real parser's option table (see PARSER_TABLE)
    env-sglang-<key>/site/           `pip --target`: transformers (the release's pin, with its deps) and
                                     the import-time dependencies of server_args/spec_info (--no-deps)
    env-sglang-<key>/stubs/          import-only stand-ins for packages whose PyPI wheels are CUDA-only
                                     (see STUBS: torchvision for older releases; none for the pinned one)
    env-sglang-<key>/venv/           a venv whose `specops-real-sglang.pth` puts site/, stubs/ and the
                                     torch CPU venv (pyenv.py) on sys.path: the "host's Python" of a test
                                     host whose build is real SGLang. The venv itself has no sglang.
    env-sglang-<key>/BUILD.json      pins, build seconds, size

Torch is never installed here: it comes from pyenv.py's venv (torch 2.13 CPU), and every pip call runs
with a constraint file pinning torch and numpy to that venv's versions, so pip cannot pull a CUDA torch.
CLI: `python -m tests.testbed.realsglang ensure` builds if needed and prints the venv python path.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.testbed import pyenv

SGLANG = "sglang==0.5.23"  # the newest release on the registry when pinned; bump to follow upstream
SGLANG_VERSION = SGLANG.split("==")[1]
TRANSFORMERS = "transformers==5.19.0"  # what that release pins
# What `sglang.srt.server_args` + `sglang.srt.speculative.spec_info` import (found by importing them),
# installed --no-deps. triton is real: its wheel imports on a CPU machine, an import stub does not work.
IMPORT_DEPS: tuple[str, ...] = (
    "orjson==3.13.0",
    "psutil==7.2.2",
    "pybase64==1.5.1",
    "requests==2.34.2",
    "urllib3==2.8.0",
    "certifi==2026.10.19.post1",
    "charset-normalizer==3.4.4",
    "triton==3.9.0",
    "pillow==13.0.0",
    "starlette==1.10.0",
    "msgspec==0.23.0",
    "pyzmq==27.3.0",
    "ipython==9.18.1",
    "traitlets==5.16.1",
    "aiohttp==3.14.5",
    "multidict==7.2.1",
    "attrs==26.1.0",
    "yarl==1.25.1",
    "propcache==0.5.4",
    "aiohappyeyeballs==2.7.1",
    "aiosignal==1.4.0",
    "frozenlist==1.8.0",
)
CONSTRAINTS = ("torch==2.13.0", "numpy==2.2.6")  # = pyenv.REQUIREMENTS' torch and numpy
# Import-only stand-ins for packages whose PyPI wheels are CUDA builds that do not load beside a CPU torch.
# Older releases (0.5.9 ... 0.5.1x) import torchvision at module level and need
#   "torchvision": '__version__ = "0.0.0+specops.stub"\n'
# here. 0.5.23's parser does not import it, and a stub must then be ABSENT: transformers treats an
# importable torchvision as usable and its processor imports (torchvision.io) break the validation.
STUBS: dict[str, str] = {}
PTH_NAME = "specops-real-sglang.pth"
# the real parser's option table (flags, their choices, flags without a value, the enum's members), dumped at
# build time: the stand-in engine checks every argv against it at start-up without paying a real import
PARSER_TABLE = "parser-table.json"


def requirements_key() -> str:
    """Hash of every pin, the stubs and the torch venv this one layers on (its path is in the .pth)."""
    material = "\n".join(
        [SGLANG, TRANSFORMERS, *IMPORT_DEPS, *CONSTRAINTS, json.dumps(STUBS), pyenv.requirements_key(), "layout=3"]
    )
    return hashlib.sha256(material.encode()).hexdigest()[:12]


def env_dir() -> Path:
    return pyenv.cache_dir() / f"env-sglang-{requirements_key()}"


# run by the built venv's python: import and exercise the parser, print every file it loaded from the build
TRACE = r"""
import argparse, json, sys
sys.path.insert(0, sys.argv[1])
from sglang.srt import server_args
from sglang.srt.speculative import spec_info
import sglang.version
parser = argparse.ArgumentParser()
server_args.ServerArgs.add_cli_args(parser)
parser.parse_args(["--model-path", "/m", "--speculative-algorithm", "NEXTN"])
spec_info.SpeculativeAlgorithm.from_string("NEXTN")
files = sorted({m.__file__ for m in list(sys.modules.values()) if (getattr(m, "__file__", None) or "").startswith(sys.argv[1])})
table = {"version": sglang.version.__version__, "algorithms": sorted(spec_info.SpeculativeAlgorithm.__members__)}
table["flags"] = {o: a.choices and sorted(map(str, a.choices)) for a in parser._actions for o in a.option_strings}
table["store_true"] = sorted(o for a in parser._actions if a.nargs == 0 for o in a.option_strings)
print(json.dumps({"files": files, "table": table}))
"""


def parser_build_dir(entry: Path | None = None) -> Path:
    """The release trimmed to what importing and running the parser loads (a small deploy candidate)."""
    return (entry or env_dir()) / "parser-build"


def build_dir(entry: Path | None = None) -> Path:
    """The folder holding the real `sglang` package (and its dist-info): a build to deploy or to import."""
    return (entry or env_dir()) / "build"


def venv_python() -> Path:
    return pyenv.venv_python(env_dir() / "venv")


def is_complete(entry: Path) -> bool:
    return (entry / "BUILD.json").is_file() and (build_dir(entry) / "sglang" / "__init__.py").is_file()


def ensure_real_sglang(log: pyenv.Log | None = None) -> Path:
    """The cache entry (see the module docstring), built first if these pins have none; flock + rename."""
    say = log or (lambda _msg: None)
    torch_venv = pyenv.ensure_host_venv(log=say)
    entry = env_dir()
    if is_complete(entry):
        return entry
    root = pyenv.cache_dir()
    with pyenv._exclusive_lock(root / ".lock-sglang", say):
        if not is_complete(entry):
            for stale in root.glob(".build-sglang-*"):
                shutil.rmtree(stale, ignore_errors=True)
            if entry.exists():
                shutil.rmtree(entry)
            _build(entry, torch_venv, say)
    return entry


def _build(entry: Path, torch_venv: Path, say: pyenv.Log) -> None:
    started = time.monotonic()
    work = entry.parent / f".build-sglang-{requirements_key()}-{os.getpid()}"
    work.mkdir()
    try:
        say(f"building real SGLang ({SGLANG}, {TRANSFORMERS}) on {torch_venv}")
        (work / "constraints.txt").write_text("\n".join(CONSTRAINTS) + "\n")
        pip = [str(pyenv.venv_python(torch_venv)), "-m", "pip", "--disable-pip-version-check", "--no-input"]
        pyenv._run([*pip, "download", "--no-deps", "-d", str(work / "download"), SGLANG], f"pip download {SGLANG}")
        pyenv._unpack_single_wheel(work / "download", work / "build")
        target = [*pip, "install", "-q", "--target", str(work / "site"), "-c", str(work / "constraints.txt")]
        pyenv._run([*target, TRANSFORMERS], f"pip install {TRANSFORMERS}")
        pyenv._run([*target, "--no-deps", *IMPORT_DEPS], "pip install the import-time dependencies")
        (work / "stubs").mkdir()
        for name, text in STUBS.items():
            (work / "stubs" / name).mkdir(parents=True)
            (work / "stubs" / name / "__init__.py").write_text(text)
        pyenv._run([pyenv.base_python(), "-m", "venv", "--without-pip", str(work / "venv")], "create venv")
        layers = [entry / "site", entry / "stubs", pyenv.site_packages(torch_venv)]
        (pyenv.site_packages(work / "venv") / PTH_NAME).write_text("".join(f"{p}\n" for p in layers))
        _trim(work, [str(work / "site"), str(work / "stubs"), str(pyenv.site_packages(torch_venv))])
        pyenv._relocate_scripts(work / "venv", work, entry)
        seconds, size = round(time.monotonic() - started, 1), pyenv._tree_bytes(work)
        record = {"sglang": SGLANG, "transformers": TRANSFORMERS, "import_deps": list(IMPORT_DEPS)}
        record |= {"stubs": sorted(STUBS), "torch_venv": str(torch_venv), "build_seconds": seconds, "bytes": size}
        (work / "BUILD.json").write_text(json.dumps(record, indent=2) + "\n")
        os.rename(work, entry)
        say(f"real SGLang ready in {seconds} s, {size / 2**20:.0f} MiB: {entry}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _trim(work: Path, path: list[str]) -> None:
    """Copy the files the parser loads (plus every package's version files and the dist-info) to parser-build/."""
    build = work / "build"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [str(pyenv.venv_python(work / "venv")), "-c", TRACE, str(build)],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise pyenv.VenvBuildError(f"real SGLang: tracing the parser's imports failed:\n{done.stderr[-3000:]}")
    traced = json.loads(done.stdout.strip().splitlines()[-1])
    (work / PARSER_TABLE).write_text(json.dumps(traced["table"], indent=1, sort_keys=True) + "\n")
    wanted = [Path(f) for f in traced["files"]]
    wanted += [build / "sglang" / name for name in ("version.py", "_version.py")]
    for source in wanted:
        if source.is_file():
            target = work / "parser-build" / source.relative_to(build)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for info in build.glob("sglang-*.dist-info"):
        shutil.copytree(info, work / "parser-build" / info.name)


def main(argv: list[str] | None = None) -> int:
    """`ensure` builds if needed and prints the venv python; `path` prints the entry (or fails if unbuilt);
    `prune` removes the entries of other pins."""
    args = sys.argv[1:] if argv is None else argv
    command = args[0] if args else "ensure"
    if command == "ensure":
        try:
            ensure_real_sglang(log=lambda msg: print(msg, file=sys.stderr, flush=True))
        except pyenv.VenvBuildError as exc:
            print(exc, file=sys.stderr)
            return 1
        print(venv_python())
        return 0
    if command == "path":
        if not is_complete(env_dir()):
            print(f"not built: {env_dir()} (run: python -m tests.testbed.realsglang ensure)", file=sys.stderr)
            return 1
        print(env_dir())
        return 0
    if command == "prune":  # entries of other pins (~1.4 GB each); not automatic: another checkout may use one
        with pyenv._exclusive_lock(pyenv.cache_dir() / ".lock-sglang", lambda _msg: None):
            for stale in [*pyenv.cache_dir().glob(".build-sglang-*"), *pyenv.cache_dir().glob("env-sglang-*")]:
                if stale != env_dir():
                    shutil.rmtree(stale, ignore_errors=True)
                    print(f"removed {stale}")
        return 0
    print("usage: python -m tests.testbed.realsglang [ensure|path|prune]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
