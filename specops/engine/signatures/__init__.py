"""Known SGLang journal signatures: what a log line means, why it happens and what to do about it.

Why: "the unit failed" is useless at 3 a.m.; "torchcodec found no FFmpeg 4-8 libraries on the host" is a fix.
The readiness wait feeds every new journal line through a `JournalScanner`: a FATAL signature ends the wait
at once (no point waiting 20 minutes for a process that is already dying), PROGRESS lines extend the deadline
(a 70B model loading shards is slow, not stuck), the READY line says the warmup passed, and ERROR / WARNING
lines are kept to name the cause if the process exits or the smoke gate fails later.

The tables live in this package, one module per family of causes (hardware, env, runtime, spec, benign,
torchcodec); the texts are the real ones, quoted in tests/unit/engine/data/journal_corpus/. Each one is
documented in docs/troubleshooting.md with its fix, and `python -m specops.engine.signatures.corpus` measures them
on that corpus. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from specops.engine.signatures.benign import BENIGN_SIGNATURES, IGNORED_IMPORT, STEP_SIGNATURES
from specops.engine.signatures.env import ENV_SIGNATURES
from specops.engine.signatures.hardware import HARDWARE_SIGNATURES
from specops.engine.signatures.lines import Line, LineReader
from specops.engine.signatures.model import (
    PROBLEM_KINDS,
    TORCHCODEC_ABI_ID,
    TORCHCODEC_ID,
    Kind,
    Match,
    Signature,
    survived_severity,
)
from specops.engine.signatures.runtime import RUNTIME_SIGNATURES
from specops.engine.signatures.spec import SPEC_SIGNATURES
from specops.engine.signatures.torchcodec import (
    FFMPEG_BY_LIBAVUTIL,
    INCIDENT_ENDED,
    TORCHCODEC,
    TORCHCODEC_ABI,
    extend_incident,
)

__all__ = [
    "FFMPEG_BY_LIBAVUTIL",
    "SIGNATURES",
    "TORCHCODEC",
    "TORCHCODEC_ABI",
    "TORCHCODEC_ABI_ID",
    "TORCHCODEC_ID",
    "JournalScanner",
    "Kind",
    "Match",
    "Signature",
    "match",
    "primary_cause",
]

# Order matters: the first signature that matches a line names it. Harmless lines first (a benign line is never
# read as a failure), the specific causes before the generic ones (an import error is the last resort).
SIGNATURES: tuple[Signature, ...] = (
    *BENIGN_SIGNATURES,
    TORCHCODEC_ABI,
    *HARDWARE_SIGNATURES,
    *ENV_SIGNATURES[:-1],
    *RUNTIME_SIGNATURES,
    *SPEC_SIGNATURES,
    ENV_SIGNATURES[-1],  # import-error
    IGNORED_IMPORT,
    *STEP_SIGNATURES,
)
_EXIT_CODE = re.compile(r"^\s*Exit code: (-?\d+)\s*$")  # SGLang's follow-up to "Rank N scheduler is dead"
_DIGITS = re.compile(r"\d+")


class JournalScanner:
    """Reads journal lines in order (across several polls) and returns the signatures they show.

    Stateful because a torchcodec failure is ONE incident spread over ~100 lines (its header, then a traceback per
    FFmpeg major), because a line's meaning depends on the lines before it (traceback source code, an `Error in
    request` or `Ignore import error` record), and because each TP rank logs the same cause: the first match is
    returned, the later ones only add their line numbers to its `repeats`. Benign lines are recognised (so they
    are never read as a failure) but returned only with include_benign=True.
    """

    def __init__(self, include_benign: bool = False) -> None:
        self.lines_seen = 0
        self.include_benign = include_benign
        self._reader = LineReader()
        self._incident: Match | None = None
        self._last: Match | None = None
        self._seen: dict[tuple[str, str], Match] = {}

    def feed(self, lines: Iterable[str]) -> list[Match]:
        found: list[Match] = []
        for line in lines:
            match = self._scan(self.lines_seen, line)
            self.lines_seen += 1
            if match is not None:
                found.append(match)
        return found

    def _scan(self, line_no: int, raw: str) -> Match | None:
        line = self._reader.read(raw)
        if line.code:
            return None
        match = self._torchcodec(line_no, raw, line) or self._first_signature(line_no, raw, line)
        if match is None:
            self._fold_exit_code(line.message)
            return None
        if match.signature.kind == "benign" and not self.include_benign:
            return None
        return self._once(match, line.message)

    def _first_signature(self, line_no: int, raw: str, line: Line) -> Match | None:
        for signature in SIGNATURES:
            if signature.spec_frames_only and not line.spec_frames:
                continue
            found = signature.pattern.search(line.message)
            if found:
                details = {key: value for key, value in found.groupdict().items() if value}
                return Match(line_no, raw, signature, _with_context(details, line.context))
        return None

    def _torchcodec(self, line_no: int, raw: str, line: Line) -> Match | None:
        """The torchcodec incident: one match for its whole traceback, details collected as it goes on."""
        abi = TORCHCODEC_ABI.pattern.search(line.message)
        if abi:
            return self._abi(line_no, raw, abi, line.context)
        started = None
        if self._incident is None and TORCHCODEC.pattern.search(line.message):
            started = self._incident = Match(line_no, raw, TORCHCODEC, _with_context({}, line.context))
        if self._incident is None:
            return None
        extend_incident(self._incident.details, line.message)
        if INCIDENT_ENDED in line.message:
            self._incident = None
        if started is not None or TORCHCODEC.pattern.search(line.message):
            return started or _ABSORBED  # a line of the torchcodec story, reported once as the incident
        return None

    def _abi(self, line_no: int, raw: str, found: re.Match[str], context: str) -> Match:
        """An undefined symbol inside a torchcodec core: the FFmpeg libs loaded, torch's ABI did not match."""
        details = _with_context({"ffmpeg": found.group("core"), "symbol": found.group("symbol")}, context)
        if self._incident is not None:
            self._incident.details.update({"abi_core": found.group("core"), "symbol": found.group("symbol")})
            for key in ("ignored", "during"):
                if key in self._incident.details:
                    details[key] = self._incident.details[key]
        return Match(line_no, raw, TORCHCODEC_ABI, details)

    def _once(self, match: Match, message: str) -> Match | None:
        """One cause is explained once: the same signature with the same message (digits aside) is a repeat."""
        if match is _ABSORBED:
            return None
        self._last = match
        if match.signature.kind not in (*PROBLEM_KINDS, "benign"):
            return match
        key = (match.signature.id, _DIGITS.sub("#", message.strip()))
        first = self._seen.get(key)
        if first is None:
            self._seen[key] = match
            return match
        first.repeats.append(match.line_no)
        return None

    def _fold_exit_code(self, message: str) -> None:
        """`Exit code: -9` after `Rank N scheduler is dead` completes that match instead of being a new one."""
        code = _EXIT_CODE.match(message)
        if code and self._last is not None and self._last.signature.id == "scheduler-died":
            self._last.details.setdefault("exit_code", code.group(1))


_ABSORBED = Match(-1, "", TORCHCODEC)  # marker: the line belongs to an incident already reported


def _with_context(details: dict[str, str], context: str) -> dict[str, str]:
    if context == "ignored":
        details["ignored"] = "yes"
    elif context == "request":
        details["during"] = "request"
    return details


def match(lines: Iterable[str]) -> list[Match]:
    """Every signature in these lines, in order (a fresh scanner: the lines are one whole log)."""
    return JournalScanner().feed(lines)


def primary_cause(matches: Iterable[Match]) -> Match | None:
    """The match that best explains a failure: the first fatal one, else the first error, else a warning.

    Among equals the heavier signature wins (a specific cause over a generic import error)."""
    ranked = [
        m
        for m in matches
        if m.signature.kind in PROBLEM_KINDS
        and not (m.signature.id == TORCHCODEC_ID and "abi_core" in m.details)  # its torchcodec-abi match explains it
    ]
    for wanted in PROBLEM_KINDS:
        candidates = [m for m in ranked if _effective_kind(m) == wanted]
        if candidates:
            return max(candidates, key=lambda m: m.signature.weight)
    return None


def _effective_kind(found: Match) -> str:
    """A fatal signature that the process survived counts as an error (one failed request) or a warning (an ignored
    import)."""
    return (
        survived_severity(found.details)
        if found.signature.kind == "fatal" and not found.fatal
        else found.signature.kind
    )
