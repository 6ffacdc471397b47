"""The preflight's decision: which failing checks stop a deploy, which are waived, which --force overrides.

Pure, so the rule is tested on its own: a check the host waives (`waive` in specops.toml) or the command line
skips (`--skip-check`) still runs and is shown with its reason, but its failure stops nothing; any other
failure stops the deploy, unless --force, which then names every check it overrode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specops.config.waivers import Waiver, waiver_reasons
from specops.doctor.model import CheckResult, waive

FORCE_HINT = "--force overrides every check (recorded in the audit log)"


@dataclass(frozen=True)
class Verdict:
    results: list[CheckResult]  # every check's result, the waived ones carrying their reason
    blocking: list[CheckResult]  # failures that stop the deploy (empty: it goes on)
    overridden: list[CheckResult]  # failures --force let through

    @property
    def waived(self) -> list[CheckResult]:
        return [result for result in self.results if result.failing and result.waived]

    def hint(self) -> str:
        """The first blocking check's own fix, else how to let this one check through."""
        first = self.blocking[0]
        return first.hint or (
            f"fix the host, or waive {first.id} for this host (`waive` in specops.toml, or --skip-check "
            f"{first.id}); {FORCE_HINT}"
        )


def judge(results: Sequence[CheckResult], waivers: Sequence[Waiver], skipped: Sequence[str], force: bool) -> Verdict:
    """`waivers`: the host's; `skipped`: the `--skip-check` ids; `force`: the emergency switch."""
    marked = waive(results, waiver_reasons(waivers, skipped))
    failures = [result for result in marked if result.blocks]
    if force:
        return Verdict(marked, [], failures)
    return Verdict(marked, failures, [])


def preflight_record(blocking: Sequence[CheckResult]) -> dict[str, Any]:
    """What a candidate's manifest keeps of a preflight that stopped its deploy: each failed check with its
    evidence, so `diagnose` names the host's fault instead of "no failure" (the release never ran)."""
    failed = [{"id": r.id, "summary": r.summary, "evidence": list(r.evidence), "hint": r.hint} for r in blocking]
    return {"passed": False, "failed": failed}
