"""Small pure readers shared by the checks: version strings, sonames, which sglang build would run.

They live apart from the checks so every check reads a fact the same way (a driver "570.124.06", a torch
"2.13.0+cu130", a soname "libavutil.so.57") and the rules stay one line each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from specops.config.inventory import HostSpec
from specops.probe.facts import HostFacts, SpecInfoFacts

# FFmpeg major <-> the libavutil soname major that identifies it (libswresample is ambiguous)
FFMPEG_BY_LIBAVUTIL = {56: 4, 57: 5, 58: 6, 59: 7, 60: 8, 61: 9}
LIBAVUTIL_BY_FFMPEG = {ffmpeg: avutil for avutil, ffmpeg in FFMPEG_BY_LIBAVUTIL.items()}

# what `apt-get install ffmpeg` gives per distribution (PRETTY_NAME fragment -> label, FFmpeg major, version)
_DISTRO_FFMPEG = (
    ("Debian GNU/Linux 11", "Debian 11", 4, "4.3"),
    ("Debian GNU/Linux 12", "Debian 12", 5, "5.1"),
    ("Debian GNU/Linux 13", "Debian 13", 7, "7.1"),
    ("Ubuntu 20.04", "Ubuntu 20.04", 4, "4.2"),
    ("Ubuntu 22.04", "Ubuntu 22.04", 4, "4.4"),
    ("Ubuntu 24.04", "Ubuntu 24.04", 6, "6.1"),
)

# build labels the probe reports, most likely to run first (a deploy's candidate, the live release, the venv)
_RUN_ORDER = ("candidate", "current", "venv")


def numbers(text: str | None) -> tuple[int, ...]:
    """The leading dotted numbers of a version: '570.124.06' -> (570, 124, 6); '2.13.0+cpu' -> (2, 13, 0)."""
    if not text:
        return ()
    match = re.match(r"\s*v?n?(\d+(?:\.\d+)*)", text)
    if not match:
        return ()
    return tuple(int(part) for part in match.group(1).split("."))


def major_minor(text: str | None) -> tuple[int, int] | None:
    """'12.8' -> (12, 8); None when the text holds no version."""
    parts = numbers(text)
    if not parts:
        return None
    return parts[0], parts[1] if len(parts) > 1 else 0


def cuda_tag(cuda: tuple[int, int]) -> str:
    """(13, 0) -> 'cu130', the name of PyTorch's wheel index for that CUDA."""
    return f"cu{cuda[0]}{cuda[1]}"


def local_tag(version: str | None) -> str | None:
    """The wheel's local version label: '0.17.0+cu130' -> 'cu130'; '0.10.0' -> None."""
    if not version or "+" not in version:
        return None
    return version.split("+", 1)[1]


def tag_cuda_major(tag: str | None) -> int | None:
    """'cu130' -> 13, 'cu128' -> 12, 'cpu' or None -> None."""
    if not tag or not re.fullmatch(r"cu\d{3,}", tag):
        return None
    return int(tag[2:-1])


def soname_major(name: str) -> int | None:
    """The number after '.so.': 'libcudart.so.12' or '/usr/lib/libavutil.so.57.28.100' -> 12 / 57."""
    match = re.search(r"\.so\.(\d+)", name.rsplit("/", 1)[-1])
    return int(match.group(1)) if match else None


def host_ffmpeg(libs: dict[str, str]) -> tuple[int, str] | None:
    """The FFmpeg major the host's libraries provide, judged by libavutil.so.N: (5, 'libavutil.so.57')."""
    found = []
    for soname in libs:
        if soname.startswith("libavutil.so."):
            avutil = soname_major(soname)
            if avutil in FFMPEG_BY_LIBAVUTIL:
                found.append((FFMPEG_BY_LIBAVUTIL[avutil], soname))
    return max(found) if found else None


def distro_ffmpeg(os_release: str) -> tuple[str, int, str] | None:
    """('Debian 12', 5, '5.1') when the host's distribution is one whose apt FFmpeg we know."""
    for fragment, label, major, version in _DISTRO_FFMPEG:
        if fragment in os_release:
            return label, major, version
    return None


def would_run(facts: HostFacts) -> SpecInfoFacts | None:
    """The sglang build the service would run: a deploy's candidate, else the current release, else the venv's."""
    found = [build for build in facts.sglang if build.found]
    for label in _RUN_ORDER:
        for build in found:
            if build.label == label:
                return build
    others = [build for build in found if build.label != "previous"]
    return others[0] if others else None


def previous_build(facts: HostFacts) -> SpecInfoFacts | None:
    """The newest verified release before the current one, as the probe labelled it."""
    return next((build for build in facts.sglang if build.label == "previous" and build.found), None)


def describe_build(build: SpecInfoFacts) -> str:
    """'sglang 0.5.20 (current: /opt/specops/sglang/current)' for summaries."""
    return f"sglang {build.version or '(version unknown)'} ({build.label}: {build.root})"


def config_value(config: dict[str, object], key: str) -> object:
    """A config.json field at top level, under `dflash_config`, or under `text_config` (multimodal targets)."""
    if key in config:
        return config[key]
    for nested in ("dflash_config", "text_config"):
        table = config.get(nested)
        if isinstance(table, dict) and key in table:
            return table[key]
    return None


def by_value(members: dict[str, int | str]) -> list[str]:
    """Member names in value order, i.e. definition order for auto() enums (JSON may have sorted the keys)."""

    def key(name: str) -> tuple[int, int, str]:
        value = members[name]
        return (0, value, name) if isinstance(value, int) else (1, 0, name)

    return sorted(members, key=key)


def host_key(host: HostSpec | None, key: str) -> str:
    """The config key an operator edits: 'hosts.gpu-one.port' (or 'hosts.NAME.port' without an inventory)."""
    return f"hosts.{host.name if host else 'NAME'}.{key}"


def listing(items: Iterable[str], limit: int = 4) -> str:
    """'a, b, c' or 'a, b, c, d and 3 more': keeps summaries one line long."""
    items = list(items)
    shown = ", ".join(items[:limit])
    rest = len(items) - limit
    return f"{shown} and {rest} more" if rest > 0 else shown


def gib(size: int) -> str:
    """Bytes as '12.3 GiB'."""
    return f"{size / 2**30:.1f} GiB"
