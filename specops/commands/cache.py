"""Pure builders for the persistent compile caches: the folder key, the unit's variables, the host commands.

Why: Triton, TorchInductor, DeepGEMM and FlashInfer compile kernels on an engine's first start (a cold
FlashInfer JIT costs minutes, a cold DeepGEMM warm-up far more) and keep them under the home folder by
default. Pointed at `<base_dir>/shared/cache/<key>`, outside every release, each release and rollback after
the first starts warm. The key names what makes a compiled kernel reusable: torch, CUDA and the GPU arch.

The unit names a stable path, `<base_dir>/<service>/cache`, a symlink the deploy points at the keyed folder
once it has probed the host: the unit stays what `specops render` prints (no host facts in it), and a host
whose torch or GPUs change gets a fresh folder without a unit change.
"""

from __future__ import annotations

import re

from specops.commands.planned import SLOTS, HostCommand, run
from specops.config.inventory import HostSpec

CACHE_ROLE = "cache"  # the compile cache's part of the deploy's unit step
KEY_PLACEHOLDER = SLOTS["key"].mark  # the key in a plan: known once the preflight has probed the host
_UNSAFE = re.compile(r"[^A-Za-z0-9._]+")
# variable -> subfolder of the cache (None: the cache folder itself), as the SGLang versions in use read them:
# SGLANG_CACHE_DIR (0.5.2x: DeepGEMM, its own JIT, CuTe AOT under it), SGLANG_DG_CACHE_DIR (older SGLang) and
# DG_JIT_CACHE_DIR (DeepGEMM itself), FLASHINFER_WORKSPACE_BASE (FlashInfer appends .cache/flashinfer),
# CUDA_CACHE_PATH (the driver's PTX JIT cache).
CACHE_VARIABLES: dict[str, str | None] = {
    "SGLANG_CACHE_DIR": "sglang",
    "SGLANG_DG_CACHE_DIR": "deep_gemm",
    "DG_JIT_CACHE_DIR": "deep_gemm",
    "TRITON_CACHE_DIR": "triton",
    "TORCHINDUCTOR_CACHE_DIR": "inductor",
    "FLASHINFER_WORKSPACE_BASE": None,
    "CUDA_CACHE_PATH": "nv",
}


# prepare_argvs's steps: $1 the shared cache folder, $2 the service's folder, $3 the keyed folder, $4 the link,
# $5 the engine's user (none: root keeps it)
PREPARE_SCRIPT = """set -e
mkdir -p -m 0755 "$1" "$2"
mkdir -p -m 0700 "$3"
[ -z "${5:-}" ] || chown "$5:$5" "$3"
chmod 0700 "$3"
ln -sfn "$3" "$4.new"
mv -Tf "$4.new" "$4"
"""


def _word(text: str | None, unknown: str) -> str:
    """A safe path word: letters, digits, '.', '_' (anything else becomes '_'), never empty, '.' or '..'."""
    cleaned = _UNSAFE.sub("_", text or "").strip("._")[:40]
    return cleaned or unknown


def cache_key(torch: str | None, cuda: str | None, archs: list[str]) -> str:
    """'torch2.13.0_cu130-cuda13.0-sm90' from torch's version, its CUDA and the GPUs' compute capabilities."""
    arch = "_".join(sorted({"sm" + cap.replace(".", "") for cap in archs if cap})) or "nogpu"
    return f"torch{_word(torch, 'unknown')}-cuda{_word(cuda, 'none')}-{_word(arch, 'nogpu')}"


def cache_link(spec: HostSpec) -> str:
    """The stable path the unit names; a symlink to the keyed folder."""
    return f"{spec.service_dir}/cache"


def shared_cache_dir(spec: HostSpec, key: str) -> str:
    return f"{spec.base_dir}/shared/cache/{key}"


def cache_environment(spec: HostSpec) -> dict[str, str]:
    """The unit's cache variables, all under the stable link."""
    link = cache_link(spec)
    return {name: f"{link}/{sub}" if sub else link for name, sub in CACHE_VARIABLES.items()}


def prepare_argvs(spec: HostSpec, key: str) -> list[list[str]]:
    """Create the keyed folder (0700, the engine user's when run_as is set) and point the link at it atomically
    (a new link renamed over the old one: an engine never sees the link missing). One command, so one round
    trip: it stops at the first step that fails, with that step's exit status."""
    folder, link = shared_cache_dir(spec, key), cache_link(spec)
    owner = [spec.run_as] if spec.run_as else []
    return [["sh", "-c", PREPARE_SCRIPT, "specops-cache", f"{spec.base_dir}/shared/cache", spec.service_dir, folder,
             link, *owner]]  # fmt: skip


def prepare_commands(spec: HostSpec, key: str) -> list[HostCommand]:
    """`prepare_argvs` as the deploy's commands: its plan shows them with KEY_PLACEHOLDER (the key comes from
    the preflight's facts), and ops/cache.py `prepare` runs them with the key."""
    note = "the compile cache, keyed by the preflight's facts"
    return [run(argv, note=note, role=CACHE_ROLE) for argv in prepare_argvs(spec, key)]


def size_argv(spec: HostSpec) -> list[str]:
    """`du` of the folder the link points at, in bytes (-D: follow the link given on the command line)."""
    return ["du", "-sbD", cache_link(spec)]
