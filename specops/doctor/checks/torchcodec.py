"""torchcodec checks: the right wheel variant, the torch ABI it links against, and which FFmpeg core loads.

torchcodec's own error buries the one relevant line among five `libavutil.so.N: cannot open` attempts
(one per FFmpeg major), so these checks read the ELF facts of each library and name only the attempt that
matters for this host.
"""

from __future__ import annotations

import re

from specops.doctor.checks._helpers import (
    LIBAVUTIL_BY_FFMPEG,
    distro_ffmpeg,
    host_ffmpeg,
    listing,
    local_tag,
    numbers,
    tag_cuda_major,
)
from specops.doctor.model import CheckContext, CheckResult, failed, passed, skipped, warned
from specops.doctor.registry import check
from specops.probe.facts import HostFacts, NativeLib, TorchcodecFacts

# torchcodec (major, minor) -> the one torch minor it was built for; 0.12+ uses the stable ABI (torch >= 2.11)
PINNED_TORCH = {
    (0, 1): (2, 5), (0, 2): (2, 6), (0, 3): (2, 7), (0, 4): (2, 7), (0, 5): (2, 7), (0, 6): (2, 8),
    (0, 7): (2, 8), (0, 8): (2, 9), (0, 9): (2, 9), (0, 10): (2, 10), (0, 11): (2, 11),
}  # fmt: skip
STABLE_ABI_SINCE = (0, 12)
STABLE_ABI_TORCH = (2, 11)
LAZY_CORE_SINCE = (0, 16)  # from 0.16 `import torchcodec` survives a missing FFmpeg; only decoding fails
_CUDA_NEEDED = re.compile(r"^(libcudart|libnvrtc)\.so\.(\d+)$")


def _cuda_major(codec: TorchcodecFacts) -> int | None:
    """The CUDA major of a torchcodec build: from its '+cu130' tag, else from what its libraries link."""
    from_tag = tag_cuda_major(local_tag(codec.version))
    if from_tag is not None:
        return from_tag
    for lib in codec.libs.values():
        for soname in lib.needed:
            match = _CUDA_NEEDED.match(soname)
            if match:
                return int(match.group(2))
    return None


def _wheel_index(facts: HostFacts) -> str:
    torch_major = numbers(facts.torch.cuda)
    tag = f"cu{torch_major[0]}{torch_major[1] if len(torch_major) > 1 else 0}" if torch_major else "cpu"
    return f"https://download.pytorch.org/whl/{tag}"


@check("torchcodec.variant", "torchcodec is a CPU build or the same CUDA major as torch")
def torchcodec_variant(ctx: CheckContext) -> CheckResult:
    codec, torch = ctx.facts.torchcodec, ctx.facts.torch
    if not codec.found:
        return skipped("torchcodec.variant", "torchcodec is not installed")
    codec_cuda = _cuda_major(codec)
    torch_cuda = numbers(torch.cuda)[:1]
    evidence = [
        f"torchcodec/version.py: __version__ = {codec.version!r}",
        f"torch {torch.version}, cuda = {torch.cuda!r}",
    ]
    missing = sorted({soname for lib in codec.libs.values() for soname in lib.missing_libs if "cuda" in soname
                      or _CUDA_NEEDED.match(soname)})  # fmt: skip
    if missing:
        evidence.append(f"unresolved CUDA libraries: {', '.join(missing)}")
    release = ".".join(str(part) for part in numbers(codec.version))
    hint = f"pip install --force-reinstall torchcodec=={release} --index-url {_wheel_index(ctx.facts)}"
    if codec_cuda is not None and not torch_cuda:
        if missing:
            evidence.append(f"`import torchcodec` fails: OSError: {missing[0]}: cannot open shared object file")
        return failed(
            "torchcodec.variant",
            f"torchcodec {codec.version} is a CUDA {codec_cuda} build but torch {torch.version} is a CPU build",
            hint,
            evidence,
        )
    if codec_cuda is not None and codec_cuda != torch_cuda[0]:
        return failed(
            "torchcodec.variant",
            f"torchcodec {codec.version} is a CUDA {codec_cuda} build but torch is CUDA {torch_cuda[0]}",
            hint,
            evidence,
        )
    kind = f"CUDA {codec_cuda} build" if codec_cuda is not None else "CPU build"
    return passed("torchcodec.variant", f"torchcodec {codec.version} ({kind}) fits torch {torch.version}", evidence)


def _table_note(codec_version: str | None, torch_version: str | None) -> tuple[str, bool]:
    """The compat-table line for this pair, and whether the table says they belong together."""
    codec = numbers(codec_version)[:2]
    torch = numbers(torch_version)[:2]
    if len(codec) < 2 or len(torch) < 2:
        return "compat table: versions unknown", True
    if codec >= STABLE_ABI_SINCE:
        ok = torch >= STABLE_ABI_TORCH
        return f"compat table: torchcodec {codec[0]}.{codec[1]} is ABI-stable and needs torch ≥2.11", ok
    pinned = PINNED_TORCH.get((codec[0], codec[1]))
    if pinned is None:
        return f"compat table: torchcodec {codec[0]}.{codec[1]} is not listed", False
    return (
        f"compat table: torchcodec {codec[0]}.{codec[1]} was built for torch {pinned[0]}.{pinned[1]}",
        pinned == torch,
    )


@check("torchcodec.abi", "torchcodec's libraries find every torch symbol they need")
def torchcodec_abi(ctx: CheckContext) -> CheckResult:
    codec, torch = ctx.facts.torchcodec, ctx.facts.torch
    if not codec.found:
        return skipped("torchcodec.abi", "torchcodec is not installed")
    note, table_ok = _table_note(codec.version, torch.version)
    missing = {name: lib.missing_torch_symbols for name, lib in sorted(codec.libs.items()) if lib.missing_torch_symbols}
    evidence = [f"{name}: undefined {listing(symbols, 3)}" for name, symbols in missing.items()]
    evidence += [f"{name}: unreadable ({lib.error})" for name, lib in sorted(codec.libs.items()) if lib.error]
    evidence.append(note if table_ok else f"{note}; this torch is {torch.version}")
    if missing:
        symbols = sorted({symbol for found in missing.values() for symbol in found})
        return failed(
            "torchcodec.abi",
            f"torchcodec {codec.version} does not match torch {torch.version}: undefined symbol {listing(symbols, 2)}",
            _abi_hint(codec.version, torch.version, _wheel_index(ctx.facts)),
            evidence,
        )
    return passed(
        "torchcodec.abi",
        f"{len(codec.libs)} torchcodec libraries find all torch symbols in torch {torch.version}",
        evidence,
    )


def _abi_hint(codec_version: str | None, torch_version: str | None, index: str) -> str:
    torch = numbers(torch_version)[:2]
    if torch and torch < STABLE_ABI_TORCH:
        match = next((codec for codec, pinned in sorted(PINNED_TORCH.items()) if pinned == torch), None)
        pick = f"torchcodec=={match[0]}.{match[1]}.*" if match else "the torchcodec the compat table lists"
        return f"torchcodec ≥0.12 needs torch ≥2.11: upgrade torch, or pip install '{pick}' for torch {torch_version}"
    codec = numbers(codec_version)[:2]
    built_for = PINNED_TORCH.get((codec[0], codec[1])) if len(codec) == 2 else None
    origin = f"was built for torch {built_for[0]}.{built_for[1]} " if built_for else ""
    return (
        f"torchcodec {codec_version} {origin}(≤0.11 is pinned to one torch minor); install torchcodec ≥0.12, "
        f"ABI-stable for torch ≥2.11: pip install 'torchcodec>=0.12' --index-url {index}"
    )


def _cores(codec: TorchcodecFacts) -> dict[int, NativeLib]:
    cores = {}
    for name, lib in codec.libs.items():
        match = re.fullmatch(r"libtorchcodec_core(\d+)\.so", name)
        if match:
            cores[int(match.group(1))] = lib
    return cores


def _loads(lib: NativeLib) -> bool:
    return not lib.missing_libs and not lib.missing_torch_symbols and lib.error is None


@check("torchcodec.ffmpeg", "a libtorchcodec_coreN matching the host's FFmpeg libraries will load")
def torchcodec_ffmpeg(ctx: CheckContext) -> CheckResult:
    codec = ctx.facts.torchcodec
    if not codec.found:
        return skipped("torchcodec.ffmpeg", "torchcodec is not installed")
    cores = _cores(codec)
    if not cores:
        return warned(
            "torchcodec.ffmpeg",
            f"torchcodec {codec.version} ships no libtorchcodec_coreN.so",
            "the install is incomplete: pip install --force-reinstall torchcodec",
            [f"torchcodec at {codec.path}"],
        )
    installed = host_ffmpeg(ctx.facts.ffmpeg.libs)
    evidence = [
        f"host FFmpeg: {installed[1]} → FFmpeg {installed[0]}" if installed else "host FFmpeg: no libavutil.so.N found",
        f"torchcodec {codec.version} ships cores for FFmpeg {', '.join(map(str, sorted(cores)))} (tried newest first)",
    ]
    loading = [major for major in sorted(cores, reverse=True) if _loads(cores[major])]
    if loading:
        major = loading[0]
        avutil = f"libavutil.so.{LIBAVUTIL_BY_FFMPEG[major]}" if major in LIBAVUTIL_BY_FFMPEG else "libavutil"
        return passed("torchcodec.ffmpeg", f"core {major} will load (FFmpeg {major}: {avutil})", evidence)
    summary, hint, attempt = _relevant_attempt(ctx.facts, cores, installed)
    evidence.append(attempt)
    if numbers(codec.version)[:2] >= LAZY_CORE_SINCE:
        return warned("torchcodec.ffmpeg", f"{summary} (import works; video/audio decoding fails)", hint, evidence)
    return failed("torchcodec.ffmpeg", summary, hint, evidence)


def _ffmpeg_hint(facts: HostFacts) -> str:
    distro = distro_ffmpeg(facts.system.os_release)
    which = f"{distro[0]} → FFmpeg {distro[2]}" if distro else "Debian 12 → FFmpeg 5.1, Ubuntu 22.04 → 4.4"
    return (
        f"apt-get install ffmpeg ({which}) or conda install ffmpeg. "
        "The libs (libavutil.so.N) are what count, not the `ffmpeg` CLI."
    )


def _relevant_attempt(
    facts: HostFacts, cores: dict[int, NativeLib], installed: tuple[int, str] | None
) -> tuple[str, str, str]:
    """(summary, hint, evidence) for the ONE load attempt that explains the failure on this host."""
    if installed is None:
        distro = distro_ffmpeg(facts.system.os_release)
        major = distro[1] if distro and distro[1] in cores else max(cores)
        needs = [name for name in cores[major].missing_libs if name.startswith(("libav", "libsw"))]
        needs = needs or [f"libavutil.so.{LIBAVUTIL_BY_FFMPEG.get(major, '?')}"]
        summary = f"no FFmpeg libraries found, so no torchcodec core loads: core {major} needs {listing(needs, 2)}"
        return summary, _ffmpeg_hint(facts), f"libtorchcodec_core{major}.so: cannot open {', '.join(needs)}"
    major, avutil = installed
    if major not in cores:
        shipped = f"{min(cores)}-{max(cores)}"
        return (
            f"FFmpeg {major} ({avutil}) is installed but torchcodec {facts.torchcodec.version} "
            f"supports FFmpeg {shipped}",
            f"install an FFmpeg major this torchcodec supports ({shipped}), or a torchcodec built for FFmpeg {major}",
            f"no libtorchcodec_core{major}.so in {facts.torchcodec.path}",
        )
    lib = cores[major]
    if lib.missing_torch_symbols:
        symbols = listing(lib.missing_torch_symbols, 1)
        return (
            f"core {major} (for FFmpeg {major}) fails: undefined symbol {symbols} (torch ABI, see torchcodec.abi)",
            "the FFmpeg libraries are fine; fix the torchcodec/torch pairing (see torchcodec.abi)",
            f"libtorchcodec_core{major}.so: undefined symbol: {symbols}",
        )
    missing = lib.missing_libs or [lib.error or "unknown error"]
    return (
        f"core {major} (for FFmpeg {major}) cannot load: {listing(missing, 2)} not found",
        _ffmpeg_hint(facts),
        f"libtorchcodec_core{major}.so: cannot open {', '.join(missing)}",
    )


@check("ffmpeg.consistency", "the ffmpeg CLI, the FFmpeg libraries and conda agree")
def ffmpeg_consistency(ctx: CheckContext) -> CheckResult:
    ffmpeg = ctx.facts.ffmpeg
    installed = host_ffmpeg(ffmpeg.libs)
    if ffmpeg.cli_version is None and installed is None:
        return skipped("ffmpeg.consistency", "no FFmpeg on this host (see torchcodec.ffmpeg)")
    cli = numbers(ffmpeg.cli_version)[:1]
    evidence = [f"ffmpeg CLI: {ffmpeg.cli_version or 'not found'}"]
    evidence += [f"{soname} → {path}" for soname, path in sorted(ffmpeg.libs.items()) if soname.startswith("libavutil")]
    problems, hints = [], []
    if installed and cli and cli[0] != installed[0]:
        problems.append(
            f"the ffmpeg CLI is FFmpeg {cli[0]} but the libraries are FFmpeg {installed[0]} ({installed[1]})"
        )
        hints.append("torchcodec uses the libraries, not the CLI: remove the stray ffmpeg or install its libs")
    if installed is None:
        problems.append(f"ffmpeg {ffmpeg.cli_version} is installed but no libavutil.so.N is reachable (static build?)")
        hints.append("torchcodec needs the shared libraries: apt-get install ffmpeg or conda install ffmpeg")
    conda = ffmpeg.conda_prefix or ctx.facts.env.get("CONDA_PREFIX")
    avutil_path = ffmpeg.libs.get(installed[1], "") if installed else ""
    if conda and avutil_path and not avutil_path.startswith(conda.rstrip("/") + "/"):
        problems.append(f"conda env {conda} is active but {installed[1] if installed else ''} comes from {avutil_path}")
        hints.append("`GLIBCXX_3.4.32' not found`: use conda's ffmpeg inside conda envs (conda install ffmpeg), "
                     "or put the system libstdc++ first")  # fmt: skip
    if problems:
        return warned("ffmpeg.consistency", problems[0], "; ".join(hints), evidence + problems[1:])
    assert installed is not None  # no libraries is a problem above
    if not cli:
        summary = f"FFmpeg {installed[0]} libraries ({installed[1]}); no CLI, torchcodec needs only the libs"
        return passed("ffmpeg.consistency", summary, evidence)
    return passed("ffmpeg.consistency", f"ffmpeg {ffmpeg.cli_version} and {installed[1]} agree", evidence)
