"""What a journal signature is, and what one occurrence of it (a Match) says.

Why separate: the tables of known lines (env, runtime, spec, benign) and the scanner both need these
types, and the tables must not import the scanner.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

# Severity: what the line means for the process. "benign" lines look alarming but are not a failure.
Kind = Literal["fatal", "error", "warning", "benign", "progress", "ready"]
PROBLEM_KINDS = ("fatal", "error", "warning")

TORCHCODEC_ID = "torchcodec-ffmpeg"
TORCHCODEC_ABI_ID = "torchcodec-abi"


@dataclass(frozen=True)
class Signature:
    """One known kind of log line.

    kind: the severity (`fatal` ends a readiness wait at once). family: the failure kind operators think in
    (torchcodec, abi, driver, cuda-libs, gpu-oom, rank-killed, nccl, port, speculative, warmup, jit, model-files,
    import, benign). fatal_if_final: an error that is fatal when the log shows the process never went on to serve
    (an import failure stops start-up; the streaming readiness wait learns that from the process exit instead).
    weight: among causes of equal severity the heavier one explains better (a generic import error weighs 0).
    spec_frames_only: the pattern is generic (a tensor shape mismatch) and names the draft only when the traceback
    runs through speculative-decoding code.
    """

    id: str
    kind: Kind
    pattern: re.Pattern[str]
    cause: str
    hint: str
    phase: str = ""
    family: str = ""
    fatal_if_final: bool = False
    weight: int = 1
    spec_frames_only: bool = False

    @property
    def fatal(self) -> bool:
        return self.kind == "fatal"


@dataclass
class Match:
    """A signature found in the journal: which line (0-based, counted across everything fed), the text, details.

    For torchcodec the scanner keeps adding to `details` while the same traceback goes on (the majors tried,
    the missing libraries), so the match read after the last line carries the whole story. `repeats` holds the
    line numbers where the same cause showed again (another TP rank, another retry): explained once.
    details["ignored"] == "yes": SGLang logged it as `Ignore import error` and went on; details["during"] ==
    "request": it failed one request (`Error in request:`) and the server kept serving. Neither is fatal.
    """

    line_no: int
    line: str
    signature: Signature
    details: dict[str, str] = field(default_factory=dict)
    repeats: list[int] = field(default_factory=list)

    @property
    def fatal(self) -> bool:
        return self.signature.fatal and not self.survived

    @property
    def survived(self) -> bool:
        """The process went on after this line: SGLang ignored the import, or only one request failed."""
        return self.details.get("ignored") == "yes" or self.details.get("during") == "request"

    @property
    def summary(self) -> str:
        """One line for people: the cause, with the specifics of this occurrence."""
        if self.signature.id == TORCHCODEC_ID:
            from specops.engine.signatures.torchcodec import torchcodec_summary

            return torchcodec_summary(self.details)
        hidden = ("ignored", "during")
        specifics = ", ".join(f"{key} {value}" for key, value in self.details.items() if key not in hidden)
        text = f"{self.signature.cause} ({specifics})" if specifics else self.signature.cause
        return text + survival_note(self.details)

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.signature.id,
            "kind": self.signature.kind,
            "family": self.signature.family,
            "fatal": self.fatal,
            "line_no": self.line_no,
            "line": self.line,
            "summary": self.summary,
            "hint": self.signature.hint,
            "details": dict(self.details),
            "repeats": list(self.repeats),
        }


def survived_severity(details: dict[str, str]) -> Kind:
    """The severity of a fatal line the process survived: a request that failed while the server kept serving is
    an error (a user got a 500; the next request of that kind fails too), an import SGLang ignored a warning."""
    return "error" if details.get("during") == "request" else "warning"


def survival_note(details: dict[str, str]) -> str:
    """Why a normally fatal line did not stop the server."""
    if details.get("during") == "request":
        return " [during a request: that request failed, the server kept serving]"
    if details.get("ignored") == "yes":
        return " [SGLang ignored it and went on]"
    return ""


def sig(
    sig_id: str,
    kind: Kind,
    pattern: str,
    cause: str,
    hint: str = "",
    *,
    family: str,
    phase: str = "",
    fatal_if_final: bool = False,
    weight: int = 1,
    spec_frames_only: bool = False,
) -> Signature:
    """A Signature from a regular expression (searched anywhere in the message: a line may carry any prefix)."""
    return Signature(
        sig_id, kind, re.compile(pattern), cause, hint, phase, family, fatal_if_final, weight, spec_frames_only
    )
