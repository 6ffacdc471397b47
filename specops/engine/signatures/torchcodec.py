"""torchcodec's loading failure: one incident spread over ~100 lines, folded into one cause.

Why its own module: torchcodec tries a core library per FFmpeg major (8 down to 4) and prints a section for each,
so the useful facts (which majors it supports, which it tried, which libraries were missing, and whether one
section shows an `undefined symbol` instead, i.e. a torch ABI mismatch) are scattered over the whole traceback.
"""

from __future__ import annotations

import re

from specops.engine.signatures.model import TORCHCODEC_ABI_ID, TORCHCODEC_ID, sig

# FFmpeg major <-> libavutil soname major (libavutil identifies the major; libswresample does not)
FFMPEG_BY_LIBAVUTIL = {56: 4, 57: 5, 58: 6, 59: 7, 60: 8, 61: 9}

_TC_HINT = (
    "install FFmpeg libraries of a major this torchcodec supports on the host (Debian 12: `apt-get install ffmpeg` "
    "gives FFmpeg 5 = libavutil.so.57), then check with `specops doctor HOST --only torchcodec`"
)
TORCHCODEC = sig(
    TORCHCODEC_ID,
    "fatal",
    r"Could not load libtorchcodec|Could not load this library: \S*libtorchcodec|libav\w+\.so\.\d+: cannot open",
    "torchcodec cannot load FFmpeg",
    _TC_HINT,
    family="torchcodec",
)
TORCHCODEC_ABI = sig(
    TORCHCODEC_ABI_ID,
    "fatal",
    r"libtorchcodec_core(?P<core>\d+)\.so: undefined symbol: (?P<symbol>\S+)",
    "torchcodec was built for another torch (C++ ABI mismatch); the host's FFmpeg is fine",
    "install the torchcodec release made for this torch (torch 2.13: torchcodec 0.12-0.17), then "
    "`specops doctor HOST --only torchcodec`",
    family="abi",
)

INCIDENT_ENDED = "[end of libtorchcodec loading traceback]"
_TC_MAJOR = re.compile(r"FFmpeg version (\d+):|libtorchcodec_core(\d+)\.so")
_TC_MISSING = re.compile(r"(libav\w+\.so\.\d+|libsw\w+\.so\.\d+): cannot open shared object file")
_TC_SUPPORTED = re.compile(r"\bversions ((?:\d+, )+(?:and )?\d+)")  # "We support\n versions 4, 5, 6, 7, and 8"


def extend_incident(details: dict[str, str], line: str) -> None:
    """Collect the FFmpeg majors torchcodec supports and tried, and the libraries it could not find."""
    supported = _TC_SUPPORTED.search(line)
    if supported:
        details["supported"] = ", ".join(re.findall(r"\d+", supported.group(1)))
    for groups in _TC_MAJOR.findall(line):
        append_detail(details, "tried", next(value for value in groups if value))
    for soname in _TC_MISSING.findall(line):
        append_detail(details, "missing", soname)


def append_detail(details: dict[str, str], key: str, value: str) -> None:
    items = [item for item in details.get(key, "").split(", ") if item]
    if value not in items:
        items.append(value)
    details[key] = ", ".join(items)


def torchcodec_summary(details: dict[str, str]) -> str:
    """Name the FFmpeg majors torchcodec would load (the host's libs must be one of them) and what is missing."""
    if "abi_core" in details:
        return (
            f"torchcodec found FFmpeg {details['abi_core']} but its core does not fit this torch "
            f"(undefined symbol {details.get('symbol', '?')}): a torchcodec/torch ABI mismatch, not an FFmpeg problem"
        )
    majors = details.get("supported") or details.get("tried") or "4-8"
    wanted = " or ".join(majors.rsplit(", ", 1))
    avutils = [f"libavutil.so.{a}" for a, m in FFMPEG_BY_LIBAVUTIL.items() if str(m) in majors.split(", ")]
    text = f"torchcodec cannot load FFmpeg: it needs FFmpeg {wanted} libraries"
    if avutils:
        text += f" ({avutils[0]}-{avutils[-1].rsplit('.', 1)[-1]})" if len(avutils) > 1 else f" ({avutils[0]})"
    missing = details.get("missing")
    text += f"; none loads on this host (not found: {missing})" if missing else "; none loads on this host"
    if details.get("ignored") == "yes":
        text += " [SGLang ignored it: text serving works, audio/video requests will fail]"
    if details.get("during") == "request":
        text += " [during a request: that request failed (500), the server kept serving]"
    return text
