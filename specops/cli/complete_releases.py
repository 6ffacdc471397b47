"""Release ids for completion, from the local audit log only (no SSH on a Tab press), sorted into what each
option accepts: `rollback --to` a verified release that is neither bad nor current, `--mark-bad` one not yet
bad, `--unmark-bad` a bad one, `--release` any.

The log records what this machine did: deploys (verified, or rolled back and so marked bad), rollbacks (the
release left is marked bad), marks and unmarks. What another machine or the host's guard did is not in it, so
the sets are this machine's best knowledge; the command itself still checks the id against the host.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from specops.commands.audit_line import AuditLine, parse_audit_line
from specops.errors import HostDataTooNew
from specops.localdirs import state_root

VERIFIED_DEPLOYS = ("deployed", "unchanged", "started", "restarted")


@dataclass
class Known:
    """What the local log says about one host's releases, replayed oldest first."""

    ids: set[str] = field(default_factory=set)
    verified: set[str] = field(default_factory=set)
    bad: set[str] = field(default_factory=set)
    current: str | None = None
    seen: dict[str, int] = field(default_factory=dict)  # id -> the first entry that named it (ids do not sort by time)
    entries: int = 0
    reasons: dict[str, str] = field(default_factory=dict)  # why a release was marked bad, where the log says

    def replay(self, entry: AuditLine) -> None:
        action, outcome = entry.action, entry.outcome
        before, after = entry.from_release, entry.to_release
        self.entries += 1
        for name in (before, after):
            if name:
                self.ids.add(name)
                self.seen.setdefault(name, self.entries)
        if action == "mark-bad" and after:
            self.bad.add(after)
            self.reasons[after] = entry.message or "marked bad by hand"
        elif action == "unmark-bad" and after:
            self.bad.discard(after)
        elif action == "deploy" and outcome in VERIFIED_DEPLOYS:
            self._serves(after, verified=True)
        elif action == "deploy" and outcome == "rolled-back":
            self._leaves(after, entry.rollback_to if isinstance(entry.record.get("rollback"), dict) else before)
        elif action == "deploy" and outcome == "failed":
            self._serves(after, verified=False)
        elif action == "rollback" and after:
            self._leaves(before, None)
            self._serves(after, verified=outcome == "verified")

    def _serves(self, release: str | None, verified: bool) -> None:
        if release:
            self.current = release
            if verified:
                self.verified.add(release)

    def _leaves(self, release: str | None, back_to: str | None) -> None:
        """A rollback marks the release it leaves bad; `back_to` (when known) serves again."""
        if release:
            self.bad.add(release)
            self.reasons.setdefault(release, "a rollback left it")
        if back_to:
            self.current = back_to

    def accepted(self, kind: str) -> list[str]:
        """The ids an option of this kind accepts, newest first (first named by the log last: a content id says
        nothing of time),
        then the build ids among them (`--to BUILD`, `--mark-bad BUILD`: each host resolves its own release)."""
        if kind == "rollback-target":
            chosen = self.verified - self.bad - {self.current or ""}
        elif kind == "release-unmarked":
            chosen = self.ids - self.bad
        elif kind == "release-bad":
            chosen = self.bad & self.ids
        else:
            chosen = self.ids
        from specops.commands.release import build_part

        ordered = sorted(chosen, key=lambda name: (self.seen.get(name, -1), name), reverse=True)
        builds = [build for name in ordered if (build := build_part(name))]
        return ordered + list(dict.fromkeys(builds))


def known_releases(host: str | None, environ: Mapping[str, str]) -> Known:
    """The host's releases as the local audit log knows them (all hosts' when no host was typed yet)."""
    known = Known()
    try:
        lines = (state_root(environ) / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError:
        return known
    path = str(state_root(environ) / "audit.jsonl")
    for line in lines:
        try:
            entry = parse_audit_line(line, path, "this machine")
        except HostDataTooNew:
            continue  # a newer specops's line: its fields may mean something else; completion only guesses
        if entry.unreadable is None and (host is None or entry.host == host):
            known.replay(entry)
    return known


def bad_builds(hosts: list[str], builds: set[str], environ: Mapping[str, str]) -> list[str]:
    """ "build X is marked bad on host Y: reason" for each of `builds` that this machine's audit log saw marked
    bad on one of `hosts` (not unmarked since): said before a deploy starts anywhere, so a build marked bad on
    one host of a fleet warns before it reaches the others (each host's own listing is checked again there)."""
    from specops.commands.release import build_part

    lines: list[str] = []
    for host in hosts:
        known = known_releases(host, environ)
        for release in sorted(known.bad & known.ids, key=lambda name: known.seen.get(name, -1)):
            build = build_part(release)
            if build in builds:
                lines.append(f"build {build} is marked bad on host {host}: {known.reasons.get(release, 'marked bad')}")
    return lines
