"""The typed reader of a release's manifest.json, and of the gates record a deploy merges into it (`gates`: the
readiness, then the smoke with its figures). Pure: the bytes come from specops/ops/hostfiles.py or from the
host's listing.

Why one reader: status, releases, diagnose, blame, the smoke's baselines and the rollback all dig into the same
document; each used to walk `gates` -> `smoke` -> `figures` by hand, with its own idea of a field of the wrong
type. Here the version is checked once (a newer manifest is HostDataTooNew, never half-understood), every field
gets its type, and a field of the wrong type reads as absent, the way every caller treated it.

Versions (MANIFEST_SCHEMA): 0 (none written) and 1 have the same fields; 2 changed only the tree-hash rule
(remote/release/script.py file_kind), which the host side applies. All three read into the same Manifest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from specops.commands.hostdata import MANIFEST_SCHEMA, check_schema, json_object, number, text

Figures = Mapping[str, object]  # what one smoke measured (engine/smoke_types.py SmokeFigures), as recorded
FileEntry = Mapping[str, object]  # {size, mode, sha256} or {link}


@dataclass(frozen=True)
class Cause:
    """A journal signature a gate named as the cause of a failure."""

    id: str
    summary: str = ""
    hint: str = ""
    line: str = ""


@dataclass(frozen=True)
class GateLine:
    """One smoke gate as recorded: its id, whether it passed, its detail."""

    id: str
    ok: bool
    detail: str = ""


@dataclass(frozen=True)
class ReadinessRecord:
    ok: bool = False
    reason: str = ""
    seconds: float | None = None
    tail: tuple[str, ...] = ()
    cause: Cause | None = None


@dataclass(frozen=True)
class SmokeRecord:
    passed: bool | None = None
    reason: str = ""
    figures: Figures | None = None
    gates: tuple[GateLine, ...] = ()
    cause: Cause | None = None


@dataclass(frozen=True)
class GatesRecord:
    """What the last gates of a release recorded; `recorded` False when it was never gated (`gates: {}`)."""

    recorded: bool = False
    passed: bool | None = None
    readiness: ReadinessRecord | None = None
    smoke: SmokeRecord | None = None

    @property
    def figures(self) -> Figures | None:
        """The smoke's figures (the next smoke's regression baseline), None when none were recorded."""
        return self.smoke.figures if self.smoke else None


@dataclass(frozen=True)
class BadMark:
    """A release marked bad (remote/release/marks.py): never a rollback target; why, when (UTC), who."""

    reason: str = "marked bad"
    when: str | None = None
    who: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"reason": self.reason, "when": self.when, "who": self.who}


@dataclass(frozen=True)
class Manifest:
    """A release's manifest.json, every field typed; `facts` and `preflight` stay raw for their own versioned
    readers (diagnose/fingerprint.py read_fingerprint, diagnose/failure.py from_preflight)."""

    schema: int
    id: str | None = None
    created_at: str | None = None
    profile: str | None = None
    unit_sha256: str | None = None
    deployed_by: str | None = None
    tree_hash: str | None = None
    verified: bool = False
    verified_at: str | None = None
    gates: GatesRecord = field(default_factory=GatesRecord)
    bad: BadMark | None = None
    files: Mapping[str, FileEntry] | None = None
    facts: object = None
    preflight: object = None


def parse_manifest(value: object, path: str, host: str) -> Manifest:
    """`value` (manifest.json as loaded) as a Manifest. ValueError when it is not a JSON object or its schema is
    not a number; HostDataTooNew (naming `host` and `path`) when a newer specops wrote it."""
    record = json_object(value, path)
    schema = check_schema(host, record, path, MANIFEST_SCHEMA)
    files = record.get("files")
    return Manifest(
        schema=schema,
        id=text(record, "id"),
        created_at=text(record, "created_at"),
        profile=text(record, "profile"),
        unit_sha256=text(record, "unit_sha256"),
        deployed_by=text(record, "deployed_by"),
        tree_hash=text(record, "tree_hash"),
        verified=record.get("verified") is True,
        verified_at=text(record, "verified_at"),
        gates=parse_gates(record.get("gates")),
        bad=parse_bad(record.get("bad")),
        files={k: v for k, v in files.items() if isinstance(v, dict)} if isinstance(files, dict) else None,
        facts=record.get("facts"),
        preflight=record.get("preflight"),
    )


def parse_gates(value: object) -> GatesRecord:
    """The `gates` object of a manifest or of a listing's release (engine/gates.py GateResult.to_json); anything
    that is not an object reads as "never gated"."""
    if not isinstance(value, dict) or not value:
        return GatesRecord()
    passed = value.get("passed")
    readiness, smoke = value.get("readiness"), value.get("smoke")
    return GatesRecord(
        recorded=True,
        passed=passed if isinstance(passed, bool) else None,
        readiness=_readiness(readiness) if isinstance(readiness, dict) else None,
        smoke=_smoke(smoke) if isinstance(smoke, dict) else None,
    )


def parse_bad(value: object) -> BadMark | None:
    """A manifest's (or a listing's) `bad` mark; None when the release is not marked (null, absent, not an
    object)."""
    if not isinstance(value, dict):
        return None
    return BadMark(text(value, "reason") or "marked bad", text(value, "when"), text(value, "who"))


def _readiness(record: Mapping[str, object]) -> ReadinessRecord:
    tail = record.get("tail")
    return ReadinessRecord(
        ok=record.get("ok") is True,
        reason=text(record, "reason") or "",
        seconds=number(record, "seconds"),
        tail=tuple(str(line) for line in tail) if isinstance(tail, list) else (),
        cause=_cause(record.get("cause")),
    )


def _smoke(record: Mapping[str, object]) -> SmokeRecord:
    passed, figures, gates = record.get("passed"), record.get("figures"), record.get("gates")
    return SmokeRecord(
        passed=passed if isinstance(passed, bool) else None,
        reason=text(record, "reason") or "",
        figures=figures if isinstance(figures, dict) else None,
        gates=tuple(_gate(gate) for gate in gates if isinstance(gate, dict)) if isinstance(gates, list) else (),
        cause=_cause(record.get("cause")),
    )


def _gate(record: Mapping[str, object]) -> GateLine:
    return GateLine(str(record.get("id") or ""), record.get("ok") is True, str(record.get("detail") or ""))


def _cause(value: object) -> Cause | None:
    """A recorded signature; None without one, or when it names no id."""
    record = value if isinstance(value, dict) else {}
    if not record.get("id"):
        return None
    fields = (str(record.get(key) or "") for key in ("summary", "hint", "line"))
    return Cause(str(record["id"]), *fields)
