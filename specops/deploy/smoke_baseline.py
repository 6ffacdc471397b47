"""Which recorded smoke figures a new release is compared with, read from the listing the deploy already has.

Why "the last verified release of the same profile" and not simply the release a rollback would return to:
the speed of a DFLASH release says nothing about a DDTREE one, and after a profile switch the previous
release is of the other profile. The newest verified release of this profile (by `verified_at`) is what the
host last did with these settings; a release without figures (never gated) is passed over.
"""

from __future__ import annotations

from specops.commands.manifest import Figures
from specops.commands.release import Listing, ReleaseInfo
from specops.deploy.rollback import smoke_figures


def last_verified_figures(listing: Listing, profile: str, exclude: str | None = None) -> Figures | None:
    """The figures of the newest verified release of `profile` on the host (not `exclude`), or None."""
    candidates = [
        release
        for release in listing.releases
        if release.rollback_target and release.profile == profile and release.id != exclude and smoke_figures(release)
    ]
    if not candidates:
        return None
    return smoke_figures(max(candidates, key=_verified_order))


def release_figures(listing: Listing, release_id: str | None) -> Figures | None:
    """The figures a named release recorded (the profile's baseline_release), or None."""
    if release_id is None:
        return None
    return smoke_figures(next((release for release in listing.releases if release.id == release_id), None))


def _verified_order(release: ReleaseInfo) -> tuple[str, str]:
    return release.verified_at or "", release.created_at or ""
