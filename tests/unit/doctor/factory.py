"""Facts of a healthy DDTREE host, and small builders to break one thing at a time.

`healthy_facts(**changes)` is an H200 x2 host on driver 580.82.07 (CUDA 13.0) with torch 2.13.0+cu130,
torchcodec 0.13.0+cpu on Debian 12's FFmpeg 5, a patched DDTREE sglang build and a Qwen-3.5-27B-shaped
target with its 5-layer DFlash draft. The GPU facts come from the nvidia-smi test double's recorded
outputs (tests/testbed/gpu), parsed by the probe's own parsers, so they have real formats.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from specops.config.inventory import HostSpec
from specops.config.profile import Profile
from specops.doctor.model import CheckContext, CheckResult
from specops.doctor.registry import all_checks, run_checks
from specops.probe.facts import (
    CudaUserspaceFacts,
    DeviceNode,
    DiskFacts,
    FfmpegFacts,
    HostFacts,
    LimitsFacts,
    ModelFacts,
    NativeExtFacts,
    NativeLib,
    NvidiaFacts,
    PathChain,
    PortFacts,
    PythonFacts,
    RootPathsFacts,
    ServerArgsFacts,
    SpecInfoFacts,
    SystemFacts,
    TorchcodecFacts,
    TorchFacts,
    UnitFacts,
)
from specops.probe.facts_kernel import KernelLogFacts
from tests.unit.doctor.gpu_scenes import probe_nvidia

ROOT = Path(__file__).resolve().parents[3]
SMI = ROOT / "tests" / "testbed" / "gpu" / "nvidia-smi"
SITE = "/opt/venv/lib/python3.11/site-packages"
LIBDIR = "/usr/lib/x86_64-linux-gnu"
GIB = 2**30

# FFmpeg major -> the sonames its libtorchcodec_coreN needs
FFMPEG_SONAMES = {
    major: [
        f"libavutil.so.{u}",
        f"libavcodec.so.{c}",
        f"libavformat.so.{c}",
        f"libavdevice.so.{c}",
        f"libavfilter.so.{f}",
        f"libswscale.so.{s}",
        f"libswresample.so.{r}",
    ]
    for major, (u, c, f, s, r) in {
        4: (56, 58, 7, 5, 3),
        5: (57, 59, 8, 6, 4),
        6: (58, 60, 9, 7, 4),
        7: (59, 61, 10, 8, 5),
        8: (60, 62, 11, 9, 6),
        9: (61, 63, 12, 10, 7),
    }.items()
}

# the test engine's enum (tests/testbed/engine/build), DDTREE patched into is_dflash()
MEMBERS: dict[str, int | str] = {
    "DFLASH": 1,
    "DDTREE": 2,
    "EAGLE": 3,
    "EAGLE3": 4,
    "FROZEN_KV_MTP": 5,
    "STANDALONE": 6,
    "NGRAM": 7,
    "NONE": 8,
}


def replace(model: Any, **changes: Any) -> Any:
    """A copy of a frozen facts model with some fields changed."""
    return model.model_copy(update=changes)


@cache
def nvidia_from_scenario(scenario: str) -> NvidiaFacts:
    """NvidiaFacts of a scenario of the nvidia-smi test double (h100x8-570, ...), as the real probe and parser see
    them: the header, the queries, `-L`, the health query and a fabric manager that is active (without the
    /proc version line, which the older tests do not expect in gpu.driver's evidence)."""
    return probe_nvidia(scenario).model_copy(update={"proc_driver_version": None})


def ffmpeg_libs(major: int | None) -> dict[str, str]:
    """soname -> path of one FFmpeg major's shared libraries, as the probe reports them ({} = no FFmpeg)."""
    return {name: f"{LIBDIR}/{name}" for name in FFMPEG_SONAMES.get(major or 0, [])}


def torchcodec_facts(
    version: str = "0.13.0+cpu",
    host_libs: dict[str, str] | None = None,
    cores: tuple[int, ...] = (4, 5, 6, 7, 8),
    missing_symbols: tuple[str, ...] = (),
    extra_needed: tuple[str, ...] = (),
) -> TorchcodecFacts:
    """torchcodec with one libtorchcodec_coreN per FFmpeg major; a core misses the sonames the host lacks."""
    host_libs = ffmpeg_libs(5) if host_libs is None else host_libs
    libs = {}
    for name in ("libtorchcodec_image.so", "libtorchcodec_pybind_ops.so"):
        libs[name] = NativeLib(
            path=f"{SITE}/torchcodec/{name}",
            needed=["libc10.so", "libtorch.so", *extra_needed],
            missing_libs=[n for n in extra_needed if n not in host_libs],
        )
    for major in cores:
        needed = [*FFMPEG_SONAMES[major], "libc10.so", "libtorch.so"]
        libs[f"libtorchcodec_core{major}.so"] = NativeLib(
            path=f"{SITE}/torchcodec/libtorchcodec_core{major}.so",
            needed=needed,
            missing_libs=[name for name in FFMPEG_SONAMES[major] if name not in host_libs],
            missing_torch_symbols=list(missing_symbols),
        )
    return TorchcodecFacts(found=True, path=f"{SITE}/torchcodec", version=version, libs=libs)


def spec_info(
    label: str, members: Mapping[str, int | str] | None = None, patched: bool = True, **kw: Any
) -> SpecInfoFacts:
    members = dict(MEMBERS if members is None else members)
    is_dflash = {name: name == "DFLASH" or (patched and name == "DDTREE") for name in members}
    roots = {"current": "/opt/specops/sglang/current", "previous": "/opt/specops/sglang/releases/20250101-000000"}
    fields: dict[str, Any] = {
        "root": roots.get(label, f"{SITE}"),
        "label": label,
        "found": True,
        "version": "0.5.20.post1",
        "members": members,
        "is_dflash": is_dflash,
        "aliases": {"NEXTN": "EAGLE"},
        "server_args": ServerArgsFacts(method="parser", validation="passed"),
    }
    return SpecInfoFacts(**{**fields, **kw})


def model(role: str, config: dict[str, object], tensors: dict[str, list[int]], **kw: Any) -> ModelFacts:
    return ModelFacts(
        role=role, path=f"/models/{role}", exists=True, readable=True, config=config, tensors=tensors, **kw
    )


TARGET = model(
    "target",
    {"architectures": ["Qwen3_5ForCausalLM"], "hidden_size": 5120, "num_hidden_layers": 64},
    {"model.embed_tokens.weight": [248320, 5120]},
)
DRAFT = model(
    "draft",
    {
        "architectures": ["DFlashDraftModel"],
        "hidden_size": 5120,
        "num_hidden_layers": 5,
        "num_target_layers": 64,
        "target_layer_ids": [1, 16, 31, 46, 61],
        "block_size": 16,
    },
    {"fc.weight": [5120, 25600]},
)


def _healthy() -> HostFacts:
    return HostFacts(
        probe_version=1,
        probe_seconds=0.42,
        python=PythonFacts(
            executable="/opt/venv/bin/python", version="3.11.7", prefix="/opt/venv", site_packages=[SITE]
        ),
        system=SystemFacts(
            hostname="gpu-one",
            kernel="6.1.0-28-amd64",
            os_release="Debian GNU/Linux 12 (bookworm)",
            systemd_version=252,
            systemd_version_text="systemd 252 (252.38-1~deb12u1)",
            euid=0,
        ),
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "CUDA_HOME": "/usr/local/cuda"},
        torch=TorchFacts(found=True, path=f"{SITE}/torch", version="2.13.0+cu130", cuda="13.0", has_libc10_cuda=True),
        torchcodec=torchcodec_facts(),
        native_ext={
            "sgl_kernel": NativeExtFacts(
                found=True,
                version="0.3.21",
                libs={
                    "common_ops.abi3.so": NativeLib(path=f"{SITE}/sgl_kernel/common_ops.abi3.so", needed=["libc10.so"])
                },
            ),
            "flashinfer": NativeExtFacts(found=False),
        },
        nvidia=nvidia_from_scenario("h200x2-580"),
        ffmpeg=FfmpegFacts(cli_version="5.1.9-0+deb12u1", libs=ffmpeg_libs(5)),
        cuda_userspace=CudaUserspaceFacts(
            libs={
                "libcudart": [f"{SITE}/nvidia/cu13/lib/libcudart.so.13"],
                "libnvrtc": [f"{SITE}/nvidia/cu13/lib/libnvrtc.so.13"],
            },
            nvcc_version="13.0",
        ),
        sglang=[spec_info("current"), spec_info("previous")],
        models=[TARGET, DRAFT],
        ports=[PortFacts(port=30000, in_use=False)],
        disks=[
            DiskFacts(path="/opt/specops", checked="/opt/specops", free_bytes=400 * GIB, total_bytes=900 * GIB),
            DiskFacts(path="/models", checked="/models", free_bytes=1200 * GIB, total_bytes=3600 * GIB),
        ],
        limits=LimitsFacts(nofile_soft=1048576, nofile_hard=1048576, memlock_soft=-1, memlock_hard=-1),
        unit=UnitFacts(
            name="sglang.service",
            exists=True,
            active_state="inactive",
            sub_state="dead",
            environment={"CUDA_HOME": "/usr/local/cuda", "PATH": "/usr/local/cuda/bin:/usr/bin:/bin"},
        ),
        root_paths=root_paths(),
        kernel_log=KernelLogFacts(readable=True, user="root", euid=0),
    )


ROOT_PATHS = {"base_dir": "/opt/specops", "service_dir": "/opt/specops/sglang", "python": "/opt/venv/bin/python",
              "venv": "/opt/venv", "pyvenv.cfg": "/opt/venv/pyvenv.cfg", "site-packages": SITE}  # fmt: skip


def root_chain(path: str, owners: Mapping[str, tuple[int, int, int]] | None = None) -> PathChain:
    """`path` and each folder above it: root's, mode 0755, unless `owners` gives a path's (uid, gid, mode)."""
    parts = path.split("/")
    folders = ["/", *("/".join(parts[:depth]) for depth in range(2, len(parts) + 1))]
    nodes = [DeviceNode(path=f, uid=(o := (owners or {}).get(f, (0, 0, 0o755)))[0], gid=o[1], mode=o[2],
                        group="root" if o[1] == 0 else None, is_dir=f != path) for f in folders]  # fmt: skip
    return PathChain(path=path, target=path, exists=True, chain=nodes)


def root_paths(owners: Mapping[str, tuple[int, int, int]] | None = None) -> RootPathsFacts:
    """The healthy host's root_paths section: everything root's, but for `owners`."""
    return RootPathsFacts(paths={label: root_chain(path, owners) for label, path in ROOT_PATHS.items()})


def healthy_facts(**changes: Any) -> HostFacts:
    """The healthy host with top-level sections replaced (torch=..., ffmpeg=..., ...)."""
    base: HostFacts = _healthy()
    return base.model_copy(update=changes) if changes else base


def load_profile(name: str) -> Profile:
    """A built-in profile from profiles/<name>.toml."""
    raw = tomllib.loads((ROOT / "profiles" / f"{name}.toml").read_text(encoding="utf-8"))
    return Profile(name=name, **raw)


HOST = HostSpec(
    name="gpu-one",
    ssh="root@gpu-one",
    python="/opt/venv/bin/python",
    model_path="/models/target",
    draft_model_path="/models/draft",
    gpus="0,1",
    profile="ddtree",
)

_DEFAULT = object()


def context(
    facts: HostFacts | None = None,
    host: HostSpec | object | None = _DEFAULT,
    profile: Profile | object | None = _DEFAULT,
    gpu_host: bool = True,
) -> CheckContext:
    """A CheckContext for the healthy host, the `gpu-one` inventory entry and the ddtree profile by default."""
    return CheckContext(
        host=HOST if host is _DEFAULT else host,  # type: ignore[arg-type]
        facts=facts or healthy_facts(),
        profile=load_profile("ddtree") if profile is _DEFAULT else profile,  # type: ignore[arg-type]
        gpu_host=gpu_host,
    )


def run(check_id: str, ctx: CheckContext) -> CheckResult:
    """Run one registered check the way the doctor does (a crash becomes ERROR)."""
    spec = next(spec for spec in all_checks() if spec.id == check_id)
    return run_checks(ctx, [spec])[0]
