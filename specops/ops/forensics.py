"""Read what `diagnose` and `diff` compare, from one host: releases and their manifests, the unit's state and the
journal of its last start, the changed files' line counts, and a fresh probe.

Why read-only and forgiving: diagnose runs when things are broken (the service down, crash-looping, the probe's
interpreter gone), so every read that fails leaves its part empty and says why in `problems`, and the verdict
works with what is left. Nothing here changes the host.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

from specops.commands import journal
from specops.commands.release import Listing, ReleaseInfo, manifest_path
from specops.config.inventory import HostSpec
from specops.config.profile import Profile
from specops.diagnose.diff import count_unified
from specops.errors import SpecopsError
from specops.host.base import Host
from specops.ops.release import read_listing
from specops.probe.facts import HostFacts
from specops.probe.run import probe

READ_TIMEOUT_S = 60.0
JOURNAL_LINES = 3000
MAX_DIFFED_FILES = 40
DIFF_MARKER = "==specops-diff== "
# per file: a marker line, then `diff -u` of the two releases' copies (diff exits 1 when they differ: fine)
DIFF_SCRIPT = (
    'a=$1; b=$2; shift 2; for f in "$@"; do printf "%s%s\\n" "$0" "$f"; diff -u -- "$a/$f" "$b/$f"; done; exit 0'
)


@dataclass
class HostEvidence:
    """Everything read from one host; an empty part means it could not be read (see `problems`)."""

    host: str
    listing: Listing | None = None
    manifests: dict[str, dict[str, Any]] = field(default_factory=dict)  # release id -> manifest
    unit: journal.UnitState | None = None
    journal: list[str] = field(default_factory=list)
    facts: HostFacts | None = None
    file_stats: dict[str, tuple[int, int]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def read_manifest(host: Host, spec: HostSpec, release_id: str) -> dict[str, Any] | None:
    """A release's manifest.json (with its files map), or None when it cannot be read."""
    result = host.run(["cat", "--", manifest_path(spec, release_id)], timeout=READ_TIMEOUT_S)
    with contextlib.suppress(ValueError):
        data = json.loads(result.stdout) if result.ok else None
        return data if isinstance(data, dict) else None
    return None


def read_unit_and_journal(host: Host, spec: HostSpec) -> tuple[journal.UnitState, list[str]]:
    """The unit's state and restarts, and what its last run said (the whole unit's tail when that run has none)."""
    unit = journal.parse_show(host.run(journal.show_argv(spec.unit_name), timeout=READ_TIMEOUT_S).text)
    lines = host.run(journal.invocation_journal_argv(spec.unit_name, JOURNAL_LINES), timeout=READ_TIMEOUT_S)
    found = lines.text.splitlines() if lines.ok else []
    if not found:
        tail = host.run(journal.journal_argv(spec.unit_name, None, 300), timeout=READ_TIMEOUT_S)
        found, _cursor = journal.split_journal(tail.text)
    return unit, found


def release_dir(spec: HostSpec, release_id: str) -> str:
    return f"{spec.service_dir}/releases/{release_id}"


def diff_stats(host: Host, spec: HostSpec, before: str, after: str, paths: list[str]) -> dict[str, tuple[int, int]]:
    """(+lines, −lines) per changed file, by `diff -u` ON the host (both releases are there); binary files and
    files beyond MAX_DIFFED_FILES get no numbers."""
    if not paths:
        return {}
    argv = ["sh", "-c", DIFF_SCRIPT, DIFF_MARKER, release_dir(spec, before), release_dir(spec, after),
            *paths[:MAX_DIFFED_FILES]]  # fmt: skip
    result = host.run(argv, timeout=READ_TIMEOUT_S)
    return split_diff_output(result.text) if result.ok else {}


def split_diff_output(text: str) -> dict[str, tuple[int, int]]:
    """DIFF_SCRIPT's output -> path -> (+, −), skipping binary files."""
    stats: dict[str, tuple[int, int]] = {}
    path: str | None = None
    chunk: list[str] = []
    for line in [*text.splitlines(), DIFF_MARKER]:
        if line.startswith(DIFF_MARKER):
            if path and not any(part.startswith("Binary files") for part in chunk):
                stats[path] = count_unified("\n".join(chunk))
            path, chunk = line[len(DIFF_MARKER) :] or None, []
        else:
            chunk.append(line)
    return stats


def gather(host: Host, spec: HostSpec, profile: Profile | None, releases: list[str]) -> HostEvidence:
    """Listing, the named releases' manifests, the unit and its journal, a fresh probe: each part best effort."""
    evidence = HostEvidence(host=spec.name)
    try:
        evidence.listing = read_listing(host, spec)
    except SpecopsError as error:
        evidence.problems.append(f"releases: {error.message}")
    for release_id in releases:
        manifest = read_manifest(host, spec, release_id)
        if manifest is None:
            evidence.problems.append(f"release {release_id}: its manifest cannot be read")
        else:
            evidence.manifests[release_id] = manifest
    try:
        evidence.unit, evidence.journal = read_unit_and_journal(host, spec)
    except SpecopsError as error:
        evidence.problems.append(f"unit: {error.message}")
    try:
        evidence.facts = probe(host, spec, profile)
    except SpecopsError as error:
        evidence.problems.append(f"probe: {error.message}")
    return evidence


def choose_releases(listing: Listing, wanted: str | None) -> tuple[ReleaseInfo | None, ReleaseInfo | None]:
    """(the release under diagnosis, the last verified one to compare it with).

    The subject is `wanted` or `current`. The reference is the subject itself when it was verified (it worked
    here: what changed is the host), else the newest verified release created before it, else any verified one.
    """
    by_id = {release.id: release for release in listing.releases}
    subject = by_id.get(wanted or listing.current or "")
    if subject is not None and subject.rollback_target:
        return subject, subject
    verified = [r for r in listing.releases if r.rollback_target and (subject is None or r.id != subject.id)]
    earlier = [r for r in verified if subject is None or r.id < subject.id]
    pool = earlier or verified
    return subject, (max(pool, key=lambda r: r.id) if pool else None)
