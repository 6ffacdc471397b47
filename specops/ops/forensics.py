"""Read what `diagnose` and `diff` compare, from one host: releases and their manifests, the unit's state and the
journal of its last start, the changed files' line counts, and a fresh probe.

Why read-only and forgiving: diagnose runs when things are broken (the service down, crash-looping, the probe's
interpreter gone), so every read that fails leaves its part empty and says why in `problems`, and the verdict
works with what is left. Nothing here changes the host.
"""

from __future__ import annotations

import contextlib

from specops.commands import journal
from specops.commands.manifest import Manifest, parse_manifest
from specops.commands.release import Listing, ReleaseInfo, manifest_path, newest_verified, newness, release_env_path
from specops.config.inventory import HostSpec
from specops.config.profile import Profile
from specops.diagnose.case import Material
from specops.diagnose.diff import count_unified, diff_files
from specops.engine.gpu_fault import engine_gpus
from specops.errors import SpecopsError, UsageError
from specops.host.base import Host
from specops.ops.hostfiles import read_document
from specops.ops.release import read_listing
from specops.probe.run import probe

READ_TIMEOUT_S = 60.0
JOURNAL_LINES = 3000
MAX_DIFFED_FILES = 40
DIFF_MARKER = "==specops-diff== "
# per file: a marker line, then `diff -u` of the two releases' copies (diff exits 1 when they differ: fine)
DIFF_SCRIPT = (
    'a=$1; b=$2; shift 2; for f in "$@"; do printf "%s%s\\n" "$0" "$f"; diff -u -- "$a/$f" "$b/$f"; done; exit 0'
)


def read_manifest(host: Host, spec: HostSpec, release_id: str) -> Manifest | None:
    """A release's manifest.json (with its files map), or None when it cannot be read."""
    return read_document(host, manifest_path(spec, release_id), parse_manifest, READ_TIMEOUT_S)


def read_release_envs(host: Host, spec: HostSpec, releases: set[str]) -> dict[str, str]:
    """Each release's own env file (as root; compared on this machine, secret values never shown); a release
    recorded before releases kept their env file has none."""
    found = {}
    for release_id in sorted(releases):
        result = host.run(["cat", release_env_path(spec, release_id)], timeout=READ_TIMEOUT_S, check=False)
        if result.ok:
            found[release_id] = result.text
    return found


def read_unit_and_journal(host: Host, spec: HostSpec) -> tuple[journal.UnitState, list[str]]:
    """The unit's state and restarts, and what its last run said (the whole unit's tail when that run has none)."""
    unit = journal.parse_show(host.run(journal.show_argv(spec.unit_name), timeout=READ_TIMEOUT_S).text)
    lines = host.run(journal.invocation_journal_argv(spec.unit_name, JOURNAL_LINES), timeout=READ_TIMEOUT_S,
                     check=False)  # fmt: skip
    found = journal.journal_lines(lines.text) if lines.ok else []
    if not found:
        tail = host.run(journal.journal_argv(spec.unit_name, None, 300), timeout=READ_TIMEOUT_S, check=False)
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
    result = host.run(argv, timeout=READ_TIMEOUT_S, check=False)  # no numbers beat no diagnosis
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
    earlier = [r for r in verified if subject is None or newness(r) < newness(subject)]
    pool = earlier or verified
    return subject, (max(pool, key=newness) if pool else None)


def _known(listing: Listing, wanted: str | None, name: str) -> None:
    if wanted is not None and wanted not in {release.id for release in listing.releases}:
        known = ", ".join(release.id for release in listing.releases[-5:]) or "none"
        raise UsageError(f"{name}: no release {wanted!r} on the host", hint=f"newest releases: {known}")


def _stats(
    host: Host, spec: HostSpec, manifests: dict[str, Manifest], before: str | None, after: str | None
) -> dict[str, tuple[int, int]]:
    """Line counts of the files that changed from release `before` to `after` ({} when there is nothing to count)."""
    old, new = (manifests[r].files if r in manifests else None for r in (before or "", after or ""))
    if not before or not after or before == after or old is None or new is None:
        return {}
    changed = [c.path for c in diff_files(old, new).changes if c.status == "changed"]
    return diff_stats(host, spec, before, after, changed)


def collect(host: Host, spec: HostSpec, release: str | None, profile: Profile | None = None) -> Material:
    """Everything `diagnose` compares, read from one host; the probe and the journal are best effort (a broken
    interpreter must not stop the diagnosis of a broken host)."""
    listing = read_listing(host, spec)
    _known(listing, release, spec.name)
    subject, reference = choose_releases(listing, release)
    wanted = {r for r in (subject.id if subject else None, reference.id if reference else None, listing.current) if r}
    manifests = {r: m for r in sorted(wanted) if (m := read_manifest(host, spec, r)) is not None}
    stats = _stats(host, spec, manifests, reference.id if reference else None, subject.id if subject else None)
    envs = read_release_envs(host, spec, {r.id for r in (subject, reference) if r is not None})
    unit, lines = read_unit_and_journal(host, spec)
    facts = None
    with contextlib.suppress(SpecopsError):
        facts = probe(host, spec, profile)
    return Material(
        host=spec.name, current=listing.current, subject=subject.id if subject else None,
        reference=reference.id if reference else None, subject_verified=bool(subject and subject.verified),
        manifests=manifests, unit=unit, journal=lines, facts=facts, file_stats=stats, envs=envs,
        secrets=tuple(spec.secrets), gpus=engine_gpus(spec),
    )  # fmt: skip


LAST_VERIFIED = "last-verified"  # `--release last-verified`: the newest verified release, whichever it is


def release_material(host: Host, spec: HostSpec, release: str | None, profile: Profile | None = None) -> Material:
    """For `diff`: the fresh probe, and the manifests of `current` and of `release` (when given; LAST_VERIFIED
    names the newest verified release: "what drifted since the last good deploy")."""
    listing = read_listing(host, spec)
    if release == LAST_VERIFIED:
        verified = newest_verified(listing.releases)
        if verified is None:
            raise UsageError(f"{spec.name}: no verified release on the host", hint="deploy one first")
        release = verified.id
    _known(listing, release, spec.name)
    wanted = sorted({r for r in (listing.current, release) if r})
    manifests = {r: m for r in wanted if (m := read_manifest(host, spec, r)) is not None}
    stats = _stats(host, spec, manifests, release, listing.current)
    facts = probe(host, spec, profile)
    return Material(host=spec.name, current=listing.current, subject=listing.current, reference=release,
                    manifests=manifests, facts=facts, file_stats=stats)  # fmt: skip
