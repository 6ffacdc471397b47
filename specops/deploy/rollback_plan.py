"""A rollback's plan, decided before anything on the host changes: which release goes back, and why.

A rollback stops the serving engine before the host-side switch; if the host then refused the target, nothing
would serve. So the target is chosen and checked here first, from the host's listing alone, with the same
rules as the host-side script (remote/release/rollback.py), and a rollback that cannot happen is refused with a
RollbackRefused before the lock, the hooks, the drain or the stop: the host, its guard's watch and its engine
are left exactly as they were. The host-side refusals stay as a safety net.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from specops.commands.release import BUILD_ID, Listing, ReleaseInfo, newest_verified, newness, releases_of_build
from specops.config.inventory import HostSpec
from specops.deploy.rollback import ProfileFor
from specops.errors import ExitCode, SpecopsError

NEWEST = "the newest verified release that is neither current nor marked bad"


class RollbackRefused(SpecopsError):
    """The rollback cannot happen (no target, or the one named is not a target); nothing was changed."""

    exit_code = ExitCode.CHECKS_FAILED


@dataclass(frozen=True)
class Target:
    """The release a rollback puts back, why that one, and whether it is a bad one allowed by --force."""

    release: ReleaseInfo
    why: str
    forced: bool = False


def choose_target(host: str, listing: Listing, wanted: str | None, force: bool) -> Target:
    """The host script's rules, from the listing alone: `wanted` must be a complete, verified release with a
    readable manifest (a bad one only with `force`); without it, the newest verified release that is neither
    current nor bad. Raises RollbackRefused, saying what still serves and what to do."""
    if wanted:
        return _named(host, listing, wanted, force)
    found = newest_verified(listing.releases, exclude=listing.current)
    if found is None:
        raise _refused(host, listing, "no verified release other than the current one (and not marked bad) to "
                       "roll back to", _no_target_hint(host, listing))  # fmt: skip
    skipped = [f"{r.id} ({r.bad_reason})" for r in listing.releases if newness(r) > newness(found)
               and r.id != listing.current and r.bad is not None and r.complete and r.verified]  # fmt: skip
    return Target(found, NEWEST + (f"; skipped, marked bad: {', '.join(skipped)}" if skipped else ""))


def _named(host: str, listing: Listing, wanted: str, force: bool) -> Target:
    release = next((r for r in listing.releases if r.id == wanted), None)
    if release is None and BUILD_ID.fullmatch(wanted):
        release = _of_build(host, listing, wanted)
        wanted = release.id
    problem = _not_a_target(release)
    if release is None or problem:
        message = f"release {wanted} {problem or 'does not exist on this host'}"
        raise _refused(host, listing, message, f"`specops releases {host}` lists the releases and which are verified")
    if release.bad is None:
        why = "named with --to" + ("; it serves now: it is restarted and proven" if release.is_current else "")
        return Target(release, why)
    if not force:
        hint = f"pass --force to roll back to it anyway, or `specops releases {host} --unmark-bad {wanted}` first"
        raise _refused(host, listing, f"release {wanted} is marked bad ({release.bad_reason})", hint)
    return Target(release, f"named with --to; marked bad ({release.bad_reason}), allowed by --force", forced=True)


def _of_build(host: str, listing: Listing, build: str) -> ReleaseInfo:
    """`--to BUILD`: this host's newest verified release of that build (one not marked bad first; a bad one is
    then refused as by its id, --force letting it through); refused when the host holds none of it verified."""
    of_build = releases_of_build(listing.releases, build)
    verified = [r for r in of_build if r.complete and r.verified and r.error is None]
    if not verified:
        held = f" (it holds {', '.join(r.id for r in of_build)}, none verified)" if of_build else ""
        raise _refused(host, listing, f"no verified release of build {build} on this host{held}",
                       f"`specops releases {host}` lists the releases and which are verified")  # fmt: skip
    good = [r for r in verified if r.bad is None]
    return max(good or verified, key=newness)


def _not_a_target(release: ReleaseInfo | None) -> str:
    """Why a listed release cannot be rolled back to ("" when it can, bad marks aside)."""
    if release is None:
        return ""
    if not release.complete:
        return "is unfinished (its push never completed): not a verified, complete release"
    if release.error is not None:
        return f"cannot be read ({release.error}): not a verified, complete release"
    if not release.verified:
        return "never passed its gates: not a verified, complete release"
    return ""


def _no_target_hint(host: str, listing: Listing) -> str:
    bad = [r.id for r in listing.releases if r.id != listing.current and r.bad is not None and r.verified]
    if bad:
        return (f"every other verified release is marked bad: name one with `specops rollback {host} --to ID "
                f"--force` (`specops releases {host}` shows why each is bad), or deploy a good build")  # fmt: skip
    return (
        f"deploy a build that passes its gates (`specops deploy {host}`); `specops releases {host}` lists the releases"
    )


def _refused(host: str, listing: Listing, message: str, hint: str) -> RollbackRefused:
    serving = f"; {listing.current} still serves" if listing.current else ""
    return RollbackRefused(f"{host}: {message}: nothing on the host was changed{serving}", hint)


@dataclass(frozen=True)
class RollbackPlan:
    """What `specops rollback` will do on one host (its --dry-run shows this, and the rollback follows it)."""

    host: str
    unit: str
    from_release: str | None
    to_release: str
    why: str
    forced: bool
    marks_bad: str | None  # the release it leaves, marked bad afterwards (None: it leaves none)
    drain_s: int  # the serving engine's drain budget (its release's profile)
    profile: str  # the profile the restored release runs with (its gates' thresholds)
    readiness_s: int
    hooks: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host, "unit": self.unit, "from": self.from_release, "to": self.to_release, "why": self.why,
            "forced": self.forced, "marks_bad": self.marks_bad, "drain_s": self.drain_s, "profile": self.profile,
            "gates": ["readiness", "smoke"], "readiness_s": self.readiness_s, "hooks": dict(self.hooks),
        }  # fmt: skip

    def lines(self) -> list[str]:
        """The plan as an operator reads it: from -> to and why, then each step in order."""
        steps = [
            f"drain {self.unit}: up to {self.drain_s} s for running requests, then stop it and prove its GPUs free",
            f"switch current to {self.to_release}, put back its unit and env file, restart {self.unit}",
            f"gates: readiness (up to {self.readiness_s} s), then smoke (profile {self.profile})",
        ]
        if "pre_stop" in self.hooks:
            steps.insert(0, f"pre_stop hook: {self.hooks['pre_stop']}")
        if "post_start" in self.hooks:
            steps.append(f"post_start hook (only when verified): {self.hooks['post_start']}")
        marked = f"{self.marks_bad} is marked bad" if self.marks_bad else "no release is marked bad"
        lines = [f"{self.host}: would roll back {self.from_release or 'none'} -> {self.to_release}",
                 f"  why {self.to_release}: {self.why}"]  # fmt: skip
        lines += [f"  {number}. {step}" for number, step in enumerate(steps, start=1)]
        return [*lines, f"  afterwards: {marked}; the lock is held throughout and the result audited"]


def plan_rollback(spec: HostSpec, listing: Listing, profile_for: ProfileFor, wanted: str | None,
                  force: bool) -> RollbackPlan:  # fmt: skip
    """Choose and check the target (raises RollbackRefused), then what the rollback will do with it."""
    target = choose_target(spec.name, listing, wanted, force)
    serving = next((r for r in listing.releases if r.id == listing.current), None)
    restored = profile_for(target.release.profile)
    hooks = {name: shlex.join(argv) for name, argv in (("pre_stop", spec.pre_stop), ("post_start", spec.post_start))
             if argv}  # fmt: skip
    left = listing.current if listing.current != target.release.id else None
    return RollbackPlan(
        host=spec.name, unit=spec.unit_name, from_release=listing.current, to_release=target.release.id,
        why=target.why, forced=target.forced, marks_bad=left,
        drain_s=profile_for(serving.profile if serving else None).drain.timeout_s, profile=restored.name,
        readiness_s=restored.readiness.timeout_s, hooks=hooks,
    )  # fmt: skip
