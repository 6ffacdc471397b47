"""One verdict, "environment drift", "code change", "configuration change" or "nothing changed", with its
evidence and the next steps, ranked by how well each explanation fits the failure.

Why ranking and not rules: several things usually changed at once (a new release AND an upgraded package); what
decides is which change the failure points at: a torchcodec load error and a removed libavutil, a traceback
whose frames are in changed files, degenerate output after a change under speculative/. A change that nothing
ties to the failure still counts, but less, and the verdict says plainly what the evidence clears.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specops.diagnose.diff import Change, FilesDiff, FingerprintDiff
from specops.diagnose.failure import ENVIRONMENT_AREAS, GPU_AREA, RESOURCE_AREAS, Failure
from specops.probe.facts import HostFacts

ENVIRONMENT, CODE, CONFIG, NOTHING, HEALTHY, HOST_FAULT = (
    "environment drift", "code change", "configuration change", "nothing changed", "no failure", "environment",
)  # fmt: skip
TIED, UNTIED = 6, 2
DISK_LOW_FRACTION = 0.02


@dataclass(frozen=True)
class Case:
    """What is compared: the failure, the release under diagnosis and the last verified one, and their diffs."""

    host: str
    failure: Failure
    subject: str | None
    reference: str | None
    environment: FingerprintDiff | None  # reference's fingerprint -> the environment the failure happened in
    files: FilesDiff  # reference's files -> subject's
    config: list[Change] = field(default_factory=list)  # unit, profile and flag differences
    facts: HostFacts | None = None  # the fresh probe, for resources (disk, GPU memory)
    serving: str | None = None  # the release `current` names when it is verified and its engine runs: advice
    # that would move the host off it (a rollback) is never given


@dataclass(frozen=True)
class Candidate:
    kind: str
    score: int
    evidence: list[str]
    next_steps: list[str]
    summary: str = ""  # the headline's text; the first evidence line when empty


@dataclass(frozen=True)
class Verdict:
    kind: str
    headline: str
    evidence: list[str]
    cleared: list[str]
    next_steps: list[str]
    ranking: list[Candidate]
    case: Case

    def to_json(self) -> dict[str, Any]:
        env = self.case.environment
        return {
            "host": self.case.host, "verdict": self.kind, "headline": self.headline, "evidence": self.evidence,
            "cleared": self.cleared, "next_steps": self.next_steps,
            "ranking": [{"kind": c.kind, "score": c.score} for c in self.ranking],
            "failure": self.case.failure.to_json(), "release": self.case.subject, "reference": self.case.reference,
            "serving": self.case.serving, "now": serving_line(self.case),
            "fingerprint_diff": env.to_json() if env else None,
            "files": [change.to_json() for change in self.case.files.changes],
            "config": [change.to_json() for change in self.case.config],
        }  # fmt: skip


def _tied(change: Change, failure: Failure) -> bool:
    """Does the failure point at this change (its library, package or area named in what the process said)?"""
    words = [*change.removed, *change.added, change.key]
    if any(word.split(".so")[0].lower() in failure.text for word in words if word.startswith("lib")):
        return True
    if change.key in ("torchcodec", "FFmpeg libraries") and failure.area == "loading torchcodec":
        return True
    if change.group == "driver/CUDA" and failure.area in ("the NVIDIA driver", "the CUDA runtime libraries"):
        return True
    if change.key == "torch" and failure.area in ENVIRONMENT_AREAS:
        return True
    return change.group == "Python packages" and change.key.lower() in failure.text and change.key != "python"


def _hint(case: Case) -> str:
    return case.failure.hint.replace("HOST", case.host)


def _rootness(change: Change) -> int:
    """Causes before consequences: a library that vanished explains why a package's core no longer loads."""
    if change.removed or change.added:
        return 0
    return 1 if change.group == "driver/CUDA" else 2


def _environment(case: Case) -> Candidate | None:
    changes = [c for c in (case.environment.environment if case.environment else []) if c.key != "GPUs"]
    if not changes or not case.failure.present:
        return None
    tied = sorted((c for c in changes if _tied(c, case.failure)), key=_rootness)
    since = f", since {case.reference} was verified" if case.reference else ""
    evidence = [f"changed on the host: {c.text}" for c in (tied or changes)]
    if tied:
        named = f" ({case.failure.signature})" if case.failure.signature else ""
        evidence.append(f"the failure{named} points at this change")
    steps = [_hint(case)] if tied and case.failure.hint else []
    steps.append(f"restore what changed: {tied[0].text if tied else changes[0].text}")
    steps.append(f"see every difference: specops diff {case.host} --release {case.reference}")
    summary = (tied or changes)[0].text + since
    return Candidate(ENVIRONMENT, (TIED if tied else UNTIED) + len(tied), evidence, steps, summary)


def _in_changed_files(frame: str, case: Case) -> str | None:
    return next((c.path for c in case.files.changes if frame.endswith("/" + c.path) or frame == c.path), None)


def _code(case: Case) -> Candidate | None:
    changes = case.files.changes
    if not changes or case.subject == case.reference or not case.failure.present:
        return None
    hits = [path for frame in case.failure.frames if (path := _in_changed_files(frame, case))]
    speculative = [c.path for c in changes if "/speculative/" in f"/{c.path}"]
    evidence = [f"{len(changes)} file(s) differ from {case.reference}: " + ", ".join(c.text for c in changes[:8])]
    score = UNTIED
    if hits:
        evidence.append("the traceback's frames are in changed files: " + ", ".join(sorted(set(hits))))
        score = TIED + 1
    if case.failure.degenerate and speculative:
        evidence.append("degenerate smoke output after a change under speculative/: " + ", ".join(speculative))
        score = max(score, TIED)
    elif case.failure.area in ENVIRONMENT_AREAS | RESOURCE_AREAS and not hits:
        score = 1
    first = (hits or speculative or [changes[0].path])[0]
    steps = [
        f"read the change on the host: diff -u {_rel(case, case.reference, first)} {_rel(case, case.subject, first)}",
        _way_back(case),
    ]
    return Candidate(CODE, score, evidence, steps)


def _way_back(case: Case) -> str:
    """How to get off the failed release, from what serves now: a rollback only when no verified release serves
    (a rollback would move the host off one, and mark it bad)."""
    if case.serving is None:
        return f"the last verified release is {case.reference}: `specops rollback {case.host}` returns to it"
    if case.serving == case.reference:
        return f"nothing to roll back: the rollback already happened, {case.serving} (verified) serves now"
    return f"nothing to roll back: {case.serving} (verified) serves now"


def serving_line(case: Case) -> str | None:
    """What serves now when the release diagnosed is not it (a deploy that rolled back by itself), or None."""
    if case.serving is None or case.subject in (None, case.serving):
        return None
    return f"now: {case.serving} serves (verified); {case.subject} no longer serves (the host was rolled back)"


def _rel(case: Case, release: str | None, path: str) -> str:
    return f"releases/{release}/{path}"


def _config(case: Case) -> Candidate | None:
    if not case.config or not case.failure.present:
        return None
    evidence = [f"configuration differs from {case.reference}: " + "; ".join(c.text for c in case.config)]
    tied = any(_config_tied(c, case.failure.text) for c in case.config)
    steps = [f"compare the unit and flags: specops render {case.host}, specops diff {case.host} --release "
             f"{case.reference}"]  # fmt: skip
    return Candidate(CONFIG, TIED if tied else UNTIED, evidence, steps)


def _config_tied(change: Change, failure_text: str) -> bool:
    """The failure names the changed key, or the new value of a changed env key (`could not convert 'abc'`);
    a secret's value is shown as *** and never matched."""
    if change.key.removeprefix("env ").lower() in failure_text:
        return True
    value = (change.after or "").strip("'\"")
    return change.key.startswith("env ") and change.after not in (None, "***") and len(value) >= 3 and (
        value.lower() in failure_text)  # fmt: skip


def _resources(case: Case) -> list[str]:
    """Faults that need no change at all: memory, a GPU gone, a full disk, a port someone else holds."""
    found: list[str] = []
    if case.failure.area in RESOURCE_AREAS:
        found.append(f"the failure is about {case.failure.area}: {case.failure.summary}")
    env = case.environment
    gpus = [c for c in (env.changes if env else []) if c.key == "GPUs"]
    found += [f"GPUs {c.before} → {c.after}" for c in gpus]
    for disk in case.facts.disks if case.facts else []:
        if disk.total_bytes and disk.free_bytes / disk.total_bytes < DISK_LOW_FRACTION:
            found.append(f"disk almost full at {disk.checked}: {disk.free_bytes // 2**20} MiB free")
    others = [p for p in (case.facts.nvidia.processes if case.facts else []) if p.used_memory_mib]
    if others and case.failure.area == "memory":
        found.append("GPU memory held by: " + ", ".join(f"pid {p.pid} {p.process_name}" for p in others))
    return found


def _nothing(case: Case, others: list[Candidate]) -> Candidate | None:
    if not case.failure.present:
        return None
    found = _resources(case)
    if not found and others:
        return None
    if found:
        steps = [*([_hint(case)] if case.failure.hint else []), "free what is named above, then restart: the same "
                 "release worked on this host"]  # fmt: skip
        return Candidate(NOTHING, TIED + 1, found, steps)
    return Candidate(NOTHING, UNTIED + 1, _unknowns(case), [f"read the whole journal: specops logs {case.host}"])


def _unknowns(case: Case) -> list[str]:
    """What could not be compared, said plainly: "nothing changed" is only as good as what was recorded."""
    if case.reference is None:
        return ["there is no verified release on this host to compare with"]
    if case.environment is None:
        return [f"no file or configuration differs from {case.reference}; it recorded no environment fingerprint "
                "(or the probe failed now), so the host could not be compared"]  # fmt: skip
    return [f"no file, configuration or environment fact differs from {case.reference}"]


def _cleared(case: Case, kind: str) -> list[str]:
    cleared: list[str] = []
    if kind in (ENVIRONMENT, NOTHING):
        if not case.files.changes or case.subject == case.reference:
            cleared.append(f"the code is cleared: no file differs from {case.reference}, the release that passed its "
                           "gates on this host")  # fmt: skip
        elif not any(_in_changed_files(frame, case) for frame in case.failure.frames):
            area = case.failure.area or "the failure's area"
            cleared.append(f"the code is cleared: the failure is in {area}, which no file of this release's change "
                           f"touches ({len(case.files.changes)} file(s) changed)")  # fmt: skip
    if kind == CODE and case.environment is not None and not case.environment.environment:
        cleared.append(f"the environment is cleared: nothing in the host's fingerprint changed since "
                       f"{case.reference} ({case.environment.equal_line})")  # fmt: skip
    return cleared


def decide(case: Case) -> Verdict:
    """Rank every explanation and keep the best; its evidence, then every plausible explanation's next step."""
    if not case.failure.present:
        return Verdict(HEALTHY, "no failure: the unit runs and its journal shows no known fault", [], [], [], [], case)
    if case.failure.source == "preflight":
        return _host_fault(case)
    if case.failure.area == GPU_AREA:
        return _gpu_fault(case)
    ranked = [c for c in (_environment(case), _code(case), _config(case)) if c is not None]
    nothing = _nothing(case, ranked)
    ranked = sorted([*ranked, *([nothing] if nothing else [])], key=lambda c: -c.score)
    best = ranked[0]
    steps = [step for candidate in ranked for step in candidate.next_steps]
    headline = f"{best.kind}: {best.summary or best.evidence[0]}"
    evidence = [f"failure: {case.failure.summary}", *best.evidence]
    return Verdict(best.kind, headline, evidence, _cleared(case, best.kind), list(dict.fromkeys(steps)), ranked, case)


def _host_fault(case: Case) -> Verdict:
    """The doctor's checks stopped the deploy before the release ran: the host, not the release, with each
    failed check's evidence; the code is cleared (it never started here)."""
    checks = case.failure.checks
    names = ", ".join(str(check["id"]) for check in checks) or "the preflight"
    evidence = [f"failure: {case.failure.summary}"]
    for check in checks:
        evidence += [f"{check['id']}: {line}" for line in check.get("evidence") or [] if isinstance(line, str)]
    if case.environment is not None and case.environment.environment:
        evidence += [f"changed on the host: {c.text}" for c in case.environment.environment]
    steps = [str(check["hint"]).replace("HOST", case.host) for check in checks if check.get("hint")]
    steps.append(f"check the host again: specops doctor {case.host}")
    cleared = [f"the release is cleared: {case.subject} never ran on this host (the checks stopped its deploy)"]
    headline = f"{HOST_FAULT}: the host failed {names} before {case.subject} ran"
    ranked = [Candidate(HOST_FAULT, TIED, evidence, steps)]
    return Verdict(HOST_FAULT, headline, evidence, cleared, list(dict.fromkeys(steps)), ranked, case)


def _gpu_fault(case: Case) -> Verdict:
    """A GPU or its driver failed under the engine (an Xid of the reboot/reset class, ECC, a lost GPU): the host,
    whatever else changed; the release is not what a reset or a reboot fixes."""
    evidence = [f"failure: {case.failure.summary}"]
    steps = [*([_hint(case)] if case.failure.hint else []), f"check the host again: specops doctor {case.host}"]
    cleared = [f"the release is cleared: {case.subject or 'the release'} did not cause a GPU fault of the host"]
    ranked = [Candidate(HOST_FAULT, TIED, evidence, steps)]
    headline = f"{HOST_FAULT}: the host's GPU failed: {case.failure.summary}"
    return Verdict(HOST_FAULT, headline, evidence, cleared, list(dict.fromkeys(steps)), ranked, case)
