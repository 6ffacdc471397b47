"""Checks that the driver, the GPUs and the CUDA user-space libraries fit the CUDA torch was built for.

The rules are NVIDIA's compatibility rules: a torch cuXY loads when the driver's maximum
CUDA (nvidia-smi's `CUDA Version`) has the same or a higher major and the driver meets that family's floor;
forward compatibility (cuda-compat's libcuda) bridges a newer major only on data-center GPUs.
"""

from __future__ import annotations

import re

from specops.doctor.checks._helpers import cuda_tag, listing, major_minor, numbers, soname_major
from specops.doctor.checks.gpu import torch_index_for
from specops.doctor.model import CheckContext, CheckResult, failed, passed, skipped, warned
from specops.doctor.registry import check
from specops.probe.facts import GpuFacts

# the driver every build of a CUDA major family needs (minor-version compatibility floor)
FAMILY_FLOOR = {12: "525.60.13", 13: "580.65.06"}
# the first driver that reports a CUDA release as its maximum (CUDA toolkit release notes, Table 3)
RELEASE_DRIVER = {
    (12, 0): "525.60.13", (12, 1): "530.30.02", (12, 2): "535.54.03", (12, 3): "545.23.06",
    (12, 4): "550.54.14", (12, 5): "555.42.02", (12, 6): "560.28.03", (12, 8): "570.26",
    (12, 9): "575.51.03", (13, 0): "580.65.06", (13, 1): "590.44.01", (13, 2): "595.45.04",
}  # fmt: skip
# driver branch -> the maximum CUDA it supports, used only when nvidia-smi's header is not available
BRANCH_CUDA = {
    525: (12, 0), 530: (12, 1), 535: (12, 2), 545: (12, 3), 550: (12, 4), 555: (12, 5),
    560: (12, 6), 570: (12, 8), 575: (12, 9), 580: (13, 0), 590: (13, 1), 595: (13, 2),
}  # fmt: skip
# forward compatibility works on data-center GPUs only (else CUDA error 804)
_DATA_CENTER = re.compile(r"\b(Tesla|[ABHL]\d{1,3}[A-Z]?|GB\d{3}|GH\d{3}|T4|V100|P100|P40)\b")
# user-space libraries whose soname major is the CUDA major (libcufft/libcusparse follow their own numbering)
_CUDA_MAJOR_LIBS = ("libcudart", "libnvrtc", "libcublas", "libcublasLt", "libnpp")


def branch_cuda(driver: str) -> tuple[int, int] | None:
    """The maximum CUDA of a driver branch: '570.124.06' -> (12, 8)."""
    parts = numbers(driver)
    if not parts:
        return None
    known = [branch for branch in BRANCH_CUDA if branch <= parts[0]]
    return BRANCH_CUDA[max(known)] if known else None


def is_data_center(gpus: list[GpuFacts]) -> bool:
    return bool(gpus) and all(_DATA_CENTER.search(gpu.name) for gpu in gpus)


def compat_cuda(paths: list[str]) -> tuple[str, tuple[int, int]] | None:
    """The forward-compat libcuda on the search path and the CUDA it provides: ('.../libcuda.so.580.65.06', (13, 0))."""
    for path in paths:
        version = path.rsplit("libcuda.so.", 1)[-1] if "libcuda.so." in path else ""
        cuda = branch_cuda(version) if version.count(".") >= 1 else None
        toolkit = re.search(r"cuda-(\d+\.\d+)/compat", path)
        if cuda is None and toolkit:
            cuda = major_minor(toolkit.group(1))
        if cuda is not None:
            return path, cuda
    return None


def _too_old(driver: str, driver_cuda: tuple[int, int], torch_cuda: tuple[int, int]) -> bool:
    floor = FAMILY_FLOOR.get(torch_cuda[0])
    return driver_cuda[0] < torch_cuda[0] or (floor is not None and numbers(driver) < numbers(floor))


@check("cuda.driver_vs_torch", "the driver supports the CUDA torch was built for")
def driver_vs_torch(ctx: CheckContext) -> CheckResult:
    torch, nvidia = ctx.facts.torch, ctx.facts.nvidia
    torch_cuda = major_minor(torch.cuda) if torch.found else None
    if torch_cuda is None:
        return skipped("cuda.driver_vs_torch", "torch is not a CUDA build (see torch.variant)")
    driver = nvidia.driver_version or next((gpu.driver_version for gpu in nvidia.gpus), None)
    if not driver:
        return skipped("cuda.driver_vs_torch", "no NVIDIA driver found (see gpu.driver)")
    driver_cuda = major_minor(nvidia.cuda_version) or branch_cuda(driver)
    if driver_cuda is None:
        return skipped("cuda.driver_vs_torch", f"cannot tell which CUDA driver {driver} supports")
    tag, shown = cuda_tag(torch_cuda), f"{driver_cuda[0]}.{driver_cuda[1]}"
    evidence = [
        f"driver {driver}: supports CUDA up to {shown} (nvidia-smi header `CUDA Version`)",
        f"torch {torch.version}: built for CUDA {torch.cuda}",
    ]
    compat = compat_cuda(ctx.facts.cuda_userspace.compat_libcuda)
    if compat:
        evidence.append(f"forward-compat driver library on the search path: {compat[0]}")
    data_center = is_data_center(nvidia.gpus)
    if _too_old(driver, driver_cuda, torch_cuda):
        if compat and compat[1][0] >= torch_cuda[0]:
            return _through_forward_compat(compat[0], data_center, nvidia.gpus, tag, evidence)
        floor = FAMILY_FLOOR.get(torch_cuda[0], RELEASE_DRIVER.get(torch_cuda, "a newer driver"))
        found = driver_cuda[0] * 1000 + driver_cuda[1] * 10
        evidence.append(
            f"importing torch would fail: The NVIDIA driver on your system is too old (found version {found})"
        )
        return failed(
            "cuda.driver_vs_torch",
            f"driver {driver} supports CUDA {shown} but torch is {tag}",
            f"Driver supports CUDA {shown} but torch is {tag}: upgrade the driver to ≥{floor}, "
            f"or install torch from {torch_index_for(driver_cuda)}",
            evidence,
        )
    if compat and not data_center:
        return warned(
            "cuda.driver_vs_torch",
            f"a forward-compat libcuda is on the search path of a non-data-center GPU ({nvidia.gpus[0].name})",
            "cuda-compat only works on data-center GPUs (else CUDA error 804): remove it from LD_LIBRARY_PATH",
            evidence,
        )
    if torch_cuda[0] == driver_cuda[0] and torch_cuda[1] > driver_cuda[1]:
        needed = RELEASE_DRIVER.get(torch_cuda, "the driver for that release")
        return warned(
            "cuda.driver_vs_torch",
            f"driver {driver} supports CUDA {shown}; torch {tag} runs under minor-version compatibility",
            f"it runs, but PTX JIT of newer PTX is limited: upgrade the driver to ≥{needed}, "
            f"or install torch from {torch_index_for(driver_cuda)}",
            evidence,
        )
    return passed("cuda.driver_vs_torch", f"driver {driver} (CUDA {shown}) runs torch {tag}", evidence)


def _through_forward_compat(
    path: str, data_center: bool, gpus: list[GpuFacts], tag: str, evidence: list[str]
) -> CheckResult:
    """The driver alone is too old; cuda-compat's libcuda makes torch load only on data-center GPUs."""
    if data_center:
        return passed("cuda.driver_vs_torch", f"torch {tag} runs through forward compatibility ({path})", evidence)
    name = gpus[0].name if gpus else "this GPU"
    return failed(
        "cuda.driver_vs_torch",
        f"torch {tag} relies on forward compatibility, which {name} does not support (CUDA error 804)",
        "cuda-compat only works on data-center GPUs; remove it from LD_LIBRARY_PATH and upgrade the driver",
        [*evidence, "expect: cudaErrorCompatNotSupportedOnDevice (804)"],
    )


@check("gpu.arch_vs_cuda", "the GPUs' compute capability is supported by torch's CUDA")
def arch_vs_cuda(ctx: CheckContext) -> CheckResult:
    torch_cuda = major_minor(ctx.facts.torch.cuda) if ctx.facts.torch.found else None
    gpus = [gpu for gpu in ctx.facts.nvidia.gpus if gpu.compute_cap]
    if torch_cuda is None:
        return skipped("gpu.arch_vs_cuda", "torch is not a CUDA build (see torch.variant)")
    if not gpus:
        return skipped("gpu.arch_vs_cuda", "no GPU compute capability known (see gpu.driver)")
    evidence = [f"GPU {gpu.index}: {gpu.name}, compute capability {gpu.compute_cap}" for gpu in gpus]
    too_old = [gpu for gpu in gpus if torch_cuda[0] >= 13 and numbers(gpu.compute_cap) < (7, 5)]
    if too_old:
        gpu = too_old[0]
        return failed(
            "gpu.arch_vs_cuda",
            f"torch {cuda_tag(torch_cuda)} cannot run on GPU {gpu.index} {gpu.name} (compute capability "
            f"{gpu.compute_cap}): CUDA 13 dropped Maxwell, Pascal and Volta (< 7.5)",
            "use a cu12x torch build on this GPU: pip install --force-reinstall torch "
            "--index-url https://download.pytorch.org/whl/cu128",
            evidence,
        )
    caps = sorted({gpu.compute_cap or "" for gpu in gpus})
    return passed(
        "gpu.arch_vs_cuda", f"compute capability {', '.join(caps)} is supported by CUDA {torch_cuda[0]}", evidence
    )


@check("cuda.userspace_mix", "the CUDA libraries the loader can reach are torch's CUDA major")
def userspace_mix(ctx: CheckContext) -> CheckResult:
    torch_cuda = major_minor(ctx.facts.torch.cuda) if ctx.facts.torch.found else None
    if torch_cuda is None:
        return skipped("cuda.userspace_mix", "torch is not a CUDA build (see torch.variant)")
    userspace = ctx.facts.cuda_userspace
    evidence, foreign = [], []
    for lib, paths in sorted(userspace.libs.items()):
        if not lib.startswith(_CUDA_MAJOR_LIBS):
            continue
        for path in paths:
            major = soname_major(path)
            evidence.append(f"{path} (CUDA {major if major is not None else '?'})")
            if major is not None and major != torch_cuda[0]:
                foreign.append(path.rsplit("/", 1)[-1] + f" ({path.rsplit('/', 1)[0] or '/'})")
    nvcc = major_minor(userspace.nvcc_version)
    if nvcc is not None:
        note = "" if nvcc[0] == torch_cuda[0] else f" ≠ torch's CUDA {torch_cuda[0]}: matters only for JIT builds"
        evidence.append(f"info: nvcc {userspace.nvcc_version} (the toolkit, not the runtime torch uses){note}")
    if foreign:
        return warned(
            "cuda.userspace_mix",
            f"CUDA libraries of another major are reachable next to torch {cuda_tag(torch_cuda)}: "
            f"{listing(foreign, 3)}",
            f"remove the other CUDA's lib64 from LD_LIBRARY_PATH (or its ld.so.conf entry) so only CUDA "
            f"{torch_cuda[0]} libraries are found; a CUDA 12/13 NPP mix gave torchcodec wrong colours (#1446)",
            evidence,
        )
    return passed("cuda.userspace_mix", f"reachable CUDA libraries match torch's CUDA {torch_cuda[0]}", evidence)
