"""Known SGLang journal signatures: what a log line means, why it happens and what to do about it.

Why: "the unit failed" is useless at 3 a.m.; "torchcodec found no FFmpeg 4-8 libraries on the host" is a fix.
The readiness wait feeds every new journal line through a `JournalScanner`: a FATAL signature ends the wait
at once (no point waiting 20 minutes for a process that is already dying), PROGRESS lines extend the deadline
(a 70B model loading shards is slow, not stuck), the READY line says the warmup passed, and ERROR / WARNING
lines are kept to name the cause if the process exits or the smoke gate fails later.

Pure: no I/O. The texts are the real ones (torch, torchcodec, the NVIDIA driver, SGLang); each one
is documented in docs/troubleshooting.md with its fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["fatal", "error", "warning", "progress", "ready"]

# FFmpeg major <-> libavutil soname major (libavutil identifies the major, libswresample does not)
FFMPEG_BY_LIBAVUTIL = {56: 4, 57: 5, 58: 6, 59: 7, 60: 8, 61: 9}
TORCHCODEC_ID = "torchcodec-ffmpeg"
TORCHCODEC_ABI_ID = "torchcodec-abi"


@dataclass(frozen=True)
class Signature:
    """One known kind of log line. `fatal` ends a readiness wait at once; `phase` names a progress step."""

    id: str
    kind: Kind
    pattern: re.Pattern[str]
    cause: str
    hint: str
    phase: str = ""

    @property
    def fatal(self) -> bool:
        return self.kind == "fatal"


@dataclass
class Match:
    """A signature found in the journal: which line (0-based, counted across everything fed), the text, details.

    For torchcodec the scanner keeps adding to `details` while the same traceback goes on (the majors tried,
    the missing libraries), so the match read after the last line carries the whole story.
    """

    line_no: int
    line: str
    signature: Signature
    details: dict[str, str] = field(default_factory=dict)

    @property
    def fatal(self) -> bool:
        return self.signature.fatal and self.details.get("ignored") != "yes"

    @property
    def summary(self) -> str:
        """One line for people: the cause, with the specifics of this occurrence."""
        if self.signature.id == TORCHCODEC_ID:
            return _torchcodec_summary(self.details)
        specifics = ", ".join(f"{key} {value}" for key, value in self.details.items() if key != "ignored")
        return f"{self.signature.cause} ({specifics})" if specifics else self.signature.cause

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.signature.id,
            "kind": self.signature.kind,
            "fatal": self.fatal,
            "line_no": self.line_no,
            "line": self.line,
            "summary": self.summary,
            "hint": self.signature.hint,
            "details": dict(self.details),
        }


def _sig(sig_id: str, kind: Kind, pattern: str, cause: str, hint: str = "", phase: str = "") -> Signature:
    return Signature(sig_id, kind, re.compile(pattern), cause, hint, phase)


_TC_HINT = (
    "install FFmpeg libraries of a major this torchcodec supports on the host (Debian 12: `apt-get install ffmpeg` "
    "gives FFmpeg 5 = libavutil.so.57), then check with `specops doctor HOST --only torchcodec`"
)
TORCHCODEC = _sig(
    TORCHCODEC_ID,
    "fatal",
    r"Could not load libtorchcodec|Could not load this library: \S*libtorchcodec|libav\w+\.so\.\d+: cannot open",
    "torchcodec cannot load FFmpeg",
    _TC_HINT,
)
TORCHCODEC_ABI = _sig(
    TORCHCODEC_ABI_ID,
    "fatal",
    r"libtorchcodec_core(?P<core>\d+)\.so: undefined symbol: (?P<symbol>\S+)",
    "torchcodec was built for another torch (C++ ABI mismatch); the host's FFmpeg is fine",
    "install the torchcodec release made for this torch (torch 2.13: torchcodec 0.12-0.17), then "
    "`specops doctor HOST --only torchcodec`",
)

# Start-up steps SGLang logs (id, pattern, phase): each one is progress that extends the readiness deadline.
_PROGRESS = (
    ("server-args", r"server_args=ServerArgs\(", "starting"),
    ("distributed", r"Init torch distributed", "starting"),
    ("load-begin", r"Load weight begin", "loading weights"),
    ("load-shards", r"Loading safetensors checkpoint shards:\s*(?P<percent>\d+)% Completed \| (?P<shards>\d+/\d+)",
     "loading weights"),
    ("load-end", r"Load weight end", "weights loaded"),
    ("kv-cache", r"KV Cache is allocated|Memory pool end", "allocating KV cache"),
    ("cuda-graph", r"Capture cuda graph|Capturing batches", "capturing CUDA graphs"),
    ("http-up", r"Uvicorn running on|Application startup complete", "warming up"),
    ("batch", r"(?:Prefill|Decode) batch", "warming up"),
)  # fmt: skip

SIGNATURES: tuple[Signature, ...] = (
    TORCHCODEC_ABI,
    _sig(
        "cuda-oom",
        "fatal",
        r"CUDA out of memory|OutOfMemoryError",
        "the GPU ran out of memory",
        "lower server.mem_fraction_static or context_length in the profile, or free the GPU "
        "(`nvidia-smi` shows other processes)",
    ),
    _sig(
        "driver-too-old",
        "fatal",
        r"The NVIDIA driver on your system is too old \(found version (?P<found_version>\d+)\)",
        "the NVIDIA driver is older than the CUDA this torch was built for",
        "upgrade the driver (CUDA 13 wheels need >= 580), or install torch/sglang built for the driver's CUDA; "
        "`specops doctor HOST --only cuda`",
    ),
    _sig(
        "no-driver",
        "fatal",
        r"Found no NVIDIA driver on your system",
        "no NVIDIA driver is loaded",
        "install the NVIDIA driver (and reboot), check `nvidia-smi`",
    ),
    _sig(
        "nccl",
        "fatal",
        r"NCCL error|nccl(?:Internal|System|UnhandledCuda|InvalidUsage|Remote)Error",
        "NCCL (multi-GPU communication) failed",
        "check the GPUs and topology (`nvidia-smi topo -m`), stale processes holding GPUs, and NCCL_* env; "
        "retry with NCCL_DEBUG=INFO in the host env",
    ),
    _sig(
        "address-in-use",
        "fatal",
        r"(?i)address already in use",
        "the engine's port is taken by another process",
        "stop whatever listens on the port (`ss -ltnp` on the host), or set another `port` for this host",
    ),
    _sig(
        "dflash-layers-capture",
        "fatal",
        r"does not implement set_dflash_layers_to_capture",
        "the target model class cannot capture the hidden layers a DFLASH/DDTREE draft needs",
        "use a target architecture this build supports for DFLASH/DDTREE, or a build that adds it",
    ),
    _sig(
        "warmup-failed",
        "fatal",
        r"Initialization failed\. warmup error",
        "the server started but its warmup request failed",
        "read the lines above it in `journalctl -u SERVICE`; often GPU memory, a kernel (FlashInfer JIT "
        "needs CUDA_HOME/nvcc) or the draft",
    ),
    _sig(
        "dflash-feature-mismatch",
        "error",
        r"DFLASH target_hidden feature dim mismatch",
        "the draft gets the wrong hidden-state width: this build does not treat the algorithm as DFLASH-family "
        "(an unpatched DDTREE build), so drafts are useless and output degenerates",
        "deploy the build with the DDTREE patch (is_dflash() must be true for DDTREE): "
        "`specops deploy HOST --profile ddtree --build ./sglang/python --patch ddtree.patch`",
    ),
    _sig(
        "import-error",
        "error",
        r"^(?:\w+\.)*(?P<error>ImportError|ModuleNotFoundError): (?P<message>.*)",
        "a Python module could not be imported",
        "install the missing package into the host's venv, or fix the build (`specops doctor HOST`)",
    ),
    _sig(
        "undefined-symbol",
        "error",
        r"(?P<library>[\w.+-]+\.so[\w.]*): undefined symbol: (?P<symbol>\S+)",
        "a native library was built against other versions of its dependencies (ABI mismatch)",
        "reinstall the package built for this torch/CUDA; `specops doctor HOST` names which",
    ),
    _sig(
        "ignored-import",
        "warning",
        r"Ignore import error when loading (?P<module>[\w.]+)",
        "SGLang skipped a multimodal processor that failed to import (text serving still works)",
        "harmless for text models; fix it if the host serves images, audio or video",
    ),
    _sig(
        "draft-layers-differ",
        "warning",
        r"DFLASH draft num_target_layers=\S+ differs",
        "the draft was trained on a target with another layer count",
        "check draft_model_path matches model_path",
    ),
    *(_sig(sig_id, "progress", pattern, phase, phase=phase) for sig_id, pattern, phase in _PROGRESS),
    _sig("ready", "ready", r"The server is fired up and ready to roll!", "warmup passed: the server is ready"),
)

_TC_ENDED = "[end of libtorchcodec loading traceback]"
_TC_MAJOR = re.compile(r"FFmpeg version (\d+):|libtorchcodec_core(\d+)\.so")
_TC_MISSING = re.compile(r"(libav\w+\.so\.\d+|libsw\w+\.so\.\d+): cannot open shared object file")
_TC_SUPPORTED = re.compile(r"\bversions ((?:\d+, )+(?:and )?\d+)")  # "We support\n versions 4, 5, 6, 7, and 8"
_IGNORED_IMPORT = re.compile(r"Ignore import error when loading")


class JournalScanner:
    """Reads journal lines in order (across several polls) and returns the signatures they show.

    Stateful because a torchcodec failure is ONE incident spread over ~100 lines: its header, then a
    traceback per FFmpeg major. All of it becomes one Match; an incident that began in an `Ignore import
    error` line is a warning (SGLang goes on), not fatal.
    """

    def __init__(self) -> None:
        self.lines_seen = 0
        self._incident: Match | None = None

    def feed(self, lines: Iterable[str]) -> list[Match]:
        found: list[Match] = []
        for line in lines:
            match = self._scan(self.lines_seen, line)
            self.lines_seen += 1
            if match is not None:
                found.append(match)
        return found

    def _scan(self, line_no: int, line: str) -> Match | None:
        abi = TORCHCODEC_ABI.pattern.search(line)
        if abi:
            return self._abi(line_no, line, abi)
        started = None
        if self._incident is None and TORCHCODEC.pattern.search(line):
            details = {"ignored": "yes"} if _IGNORED_IMPORT.search(line) else {}
            started = self._incident = Match(line_no, line, TORCHCODEC, details)
        if self._incident is not None:
            self._extend_incident(self._incident.details, line)
            if _TC_ENDED in line:
                self._incident = None
            if started is not None or TORCHCODEC.pattern.search(line):
                return started  # a line of the torchcodec story, reported once as the incident
        for signature in SIGNATURES:
            found = signature.pattern.search(line)
            if found:
                details = {key: value for key, value in found.groupdict().items() if value}
                return Match(line_no, line, signature, details)
        return None

    @staticmethod
    def _extend_incident(details: dict[str, str], line: str) -> None:
        """Collect the FFmpeg majors torchcodec supports and tried, and the libraries it could not find."""
        supported = _TC_SUPPORTED.search(line)
        if supported:
            details["supported"] = ", ".join(re.findall(r"\d+", supported.group(1)))
        for groups in _TC_MAJOR.findall(line):
            _append(details, "tried", next(value for value in groups if value))
        for soname in _TC_MISSING.findall(line):
            _append(details, "missing", soname)

    def _abi(self, line_no: int, line: str, found: re.Match[str]) -> Match:
        """An undefined symbol inside a torchcodec core: the FFmpeg libs loaded, torch's ABI did not match."""
        details = {"ffmpeg": found.group("core"), "symbol": found.group("symbol")}
        if self._incident is not None:
            self._incident.details.update({"abi_core": found.group("core"), "symbol": found.group("symbol")})
            if self._incident.details.get("ignored") == "yes":
                details["ignored"] = "yes"
        return Match(line_no, line, TORCHCODEC_ABI, details)


def match(lines: Iterable[str]) -> list[Match]:
    """Every signature in these lines, in order (a fresh scanner: the lines are one whole log)."""
    return JournalScanner().feed(lines)


def primary_cause(matches: Iterable[Match]) -> Match | None:
    """The match that best explains a failure: the first fatal one, else the first error, else a warning."""
    ranked = [
        m
        for m in matches
        if m.signature.kind in ("fatal", "error", "warning")
        and not (m.signature.id == TORCHCODEC_ID and "abi_core" in m.details)  # its torchcodec-abi match explains it
    ]
    for wanted in ("fatal", "error", "warning"):
        for candidate in ranked:
            if _effective_kind(candidate) == wanted:
                return candidate
    return None


def _effective_kind(found: Match) -> str:
    """A fatal signature that SGLang ignored (torchcodec in `Ignore import error`) counts as a warning."""
    return "warning" if found.signature.kind == "fatal" and not found.fatal else found.signature.kind


def _append(details: dict[str, str], key: str, value: str) -> None:
    items = [item for item in details.get(key, "").split(", ") if item]
    if value not in items:
        items.append(value)
    details[key] = ", ".join(items)


def _torchcodec_summary(details: dict[str, str]) -> str:
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
    return text
