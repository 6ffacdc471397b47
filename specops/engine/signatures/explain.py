"""Explain a whole journal after the fact: each recognised line with its signature, kind and fatality.

Why apart from the streaming scanner: reading a finished log we know what the process did next, so fatality can
follow it. An `ImportError` that SGLang did not catch stopped start-up (fatal) unless the server went on to
say it is ready; the readiness wait, reading live, learns the same from the process exit. `specops logs HOST
--json` prints `[e.to_json() for e in explain_lines(lines)]`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from specops.engine.signatures import JournalScanner
from specops.engine.signatures.model import PROBLEM_KINDS, TORCHCODEC_ID, Match, survived_severity

SEVERITY_ORDER = (*PROBLEM_KINDS, "benign")


@dataclass(frozen=True)
class Explained:
    """One explained journal line. kind: the family of cause (torchcodec, abi, nccl, benign, ...); severity: what
    the line means for the process (fatal/error/warning/benign); fatal: it stopped the engine."""

    line_no: int
    line: str
    signature_id: str
    kind: str
    severity: str
    fatal: bool
    summary: str
    hint: str
    repeats: tuple[int, ...] = ()
    weight: int = 1  # how well it explains, among lines of equal severity (Signature.weight)

    def to_json(self) -> dict[str, object]:
        return {
            "line_no": self.line_no,
            "line": self.line,
            "id": self.signature_id,
            "kind": self.kind,
            "severity": self.severity,
            "fatal": self.fatal,
            "summary": self.summary,
            "hint": self.hint,
            "repeats": list(self.repeats),
        }


def explain_lines(lines: Iterable[str]) -> list[Explained]:
    """Every fatal, error, warning and benign line of one whole log, in order, each cause once."""
    found = JournalScanner(include_benign=True).feed(lines)
    ready_at = [m.line_no for m in found if m.signature.kind == "ready"]
    explained = []
    for match in found:
        if match.signature.kind not in SEVERITY_ORDER:
            continue
        served_after = any(line_no > match.line_no for line_no in ready_at)
        explained.append(_explain(match, served_after))
    return explained


def _explain(match: Match, served_after: bool) -> Explained:
    signature = match.signature
    stopped = signature.fatal_if_final and not match.survived and not served_after
    return Explained(
        line_no=match.line_no,
        line=match.line,
        signature_id=signature.id,
        kind=signature.family,
        severity="fatal"
        if stopped
        else (survived_severity(match.details) if signature.fatal and not match.fatal else signature.kind),
        fatal=match.fatal or stopped,
        summary=match.summary,
        hint=signature.hint,
        repeats=tuple(match.repeats),
        weight=0 if signature.id == TORCHCODEC_ID else signature.weight,
    )


def primary(explained: Sequence[Explained]) -> Explained | None:
    """The line that best explains the log: the first fatal, else error, warning, benign; among equals the
    specific cause before a generic import error, and a torchcodec ABI line before the FFmpeg wrapper."""
    for severity in SEVERITY_ORDER:
        candidates = [e for e in explained if _effective(e) == severity]
        if candidates:
            return max(candidates, key=lambda e: e.weight)
    return None


def _effective(explained: Explained) -> str:
    return "fatal" if explained.fatal else explained.severity
