"""Which release a new release's smoke is compared with: the newest verified release of the same profile."""

from __future__ import annotations

from specops.commands.manifest import parse_gates
from specops.commands.release import Listing, ReleaseInfo
from specops.deploy.smoke_baseline import last_verified_figures, release_figures


def _release(rid: str, profile: str, verified_at: str | None, tokens: float | None = 100.0):
    gates = parse_gates({"smoke": {"figures": {"tokens_per_s": tokens}}} if tokens is not None else {})
    return ReleaseInfo(id=rid, complete=True, verified=verified_at is not None, verified_at=verified_at,
                       profile=profile, gates=gates)  # fmt: skip


LISTING = Listing(
    current="r4",
    releases=[
        _release("r1", "ddtree", "2026-11-01T10:00:00Z", tokens=300.0),
        _release("r2", "ddtree", "2026-11-20T10:00:00Z", tokens=400.0),
        _release("r3", "dflash", "2026-11-25T10:00:00Z", tokens=900.0),  # newer, but another profile
        _release("r4", "ddtree", None, tokens=50.0),  # failed its gates: never a baseline
        _release("r5", "ddtree", "2026-11-28T10:00:00Z", tokens=None),  # verified, recorded no figures
        _release("nospec", "plain", "2026-10-01T10:00:00Z", tokens=160.0),
    ],
)


def test_the_newest_verified_release_of_the_same_profile_with_figures_is_the_baseline() -> None:
    assert last_verified_figures(LISTING, "ddtree") == {"tokens_per_s": 400.0}
    assert last_verified_figures(LISTING, "dflash") == {"tokens_per_s": 900.0}


def test_the_release_being_deployed_is_never_its_own_baseline() -> None:
    assert last_verified_figures(LISTING, "ddtree", exclude="r2") == {"tokens_per_s": 300.0}
    assert last_verified_figures(LISTING, "nextn") is None


def test_a_named_baseline_release_is_read_from_the_listing() -> None:
    assert release_figures(LISTING, "nospec") == {"tokens_per_s": 160.0}
    assert release_figures(LISTING, "gone") is None
    assert release_figures(LISTING, None) is None
