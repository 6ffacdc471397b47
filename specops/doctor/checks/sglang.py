"""Checks of the sglang build that would run: its version, the profile's algorithm, the enum's stability.

A DDTREE host runs a fork or PR build: the algorithm must be registered AND be in the predicate that decides
the hidden-state capture in that build (`is_dflash()` before SGLang 0.5.16, `is_dflash_family()` since), or
the draft silently gets the wrong hidden states.
"""

from __future__ import annotations

from specops.doctor.checks._helpers import by_value, config_value, describe_build, listing, previous_build, would_run
from specops.doctor.model import CheckContext, CheckResult, failed, passed, skipped, warned
from specops.doctor.registry import check
from specops.probe.facts import HostFacts, ModelFacts, SpecInfoFacts

_MISSING_HINTS = {
    "DDTREE": "no upstream sglang release has DDTREE: deploy a build with the DDTree patch (sglang PR #29907 or "
    "your fork)",
    "DFLASH": "DFLASH is in upstream sglang since 0.5.11 (the flags specops renders need 0.5.12 or newer): "
    "deploy a newer sglang build",
    "EAGLE": "EAGLE (and NEXTN, its alias) is in every upstream sglang 0.4+ release: deploy an upstream build",
}


def _build_evidence(build: SpecInfoFacts) -> list[str]:
    how = "imported spec_info" if build.method == "import" else "read spec_info.py statically"
    lines = [f"{build.label}: {build.root} ({how})", f"SpeculativeAlgorithm: {listing(by_value(build.members), 10)}"]
    if build.error:
        lines.append(f"import error: {build.error}")
    return lines


@check("sglang.version", "which sglang build the service would run")
def sglang_version(ctx: CheckContext) -> CheckResult:
    build = would_run(ctx.facts)
    if build is None:
        return skipped("sglang.version", "no sglang build found (venv, current release or candidate)")
    others = [f"also found {other.label}: sglang {other.version or '?'} ({other.root})"
              for other in ctx.facts.sglang if other.found and other is not build]  # fmt: skip
    return passed("sglang.version", describe_build(build), _build_evidence(build) + others)


def _hidden_shapes(models: list[ModelFacts]) -> tuple[str, str]:
    """('[N, 5120]', '[N, 25600]') from the target's hidden size and the draft's layer ids, else symbolic."""
    target = next((model for model in models if model.role == "target"), None)
    draft = next((model for model in models if model.role == "draft"), None)
    hidden = config_value(target.config, "hidden_size") if target else None
    layer_ids = config_value(draft.config, "target_layer_ids") if draft else None
    if isinstance(hidden, int) and isinstance(layer_ids, list) and layer_ids:
        return f"[N, {hidden}]", f"[N, {len(layer_ids) * hidden}]"
    return "[N, hidden]", "[N, len(target_layer_ids) × hidden]"


@check("sglang.algorithm", "the profile's speculative algorithm exists in the build that would run")
def sglang_algorithm(ctx: CheckContext) -> CheckResult:
    if ctx.profile is None:
        return skipped("sglang.algorithm", "no profile given (--profile or hosts.NAME.profile)")
    build = would_run(ctx.facts)
    algorithm = ctx.profile.algorithm
    if build is None:
        return skipped("sglang.algorithm", f"no sglang build found to check {algorithm} against")
    evidence = _build_evidence(build)
    if algorithm == "NEXTN":
        return _nextn(build, evidence)
    if algorithm not in build.members:
        return failed(
            "sglang.algorithm",
            f"{algorithm} is not in SpeculativeAlgorithm of {describe_build(build)}",
            _MISSING_HINTS.get(
                algorithm, f"choose a profile whose algorithm this build has: {listing(build.members, 8)}"
            ),
            evidence,
        )
    if algorithm == "DDTREE":
        return _ddtree(ctx.facts, build, evidence)
    return passed("sglang.algorithm", f"{algorithm} is available in sglang {build.version or '?'}", evidence)


def _nextn(build: SpecInfoFacts, evidence: list[str]) -> CheckResult:
    """SGLang rewrites NEXTN to EAGLE at start-up (a reserved alias, or a member in some forks)."""
    alias = build.aliases.get("NEXTN")
    if "NEXTN" in build.members or alias == "EAGLE" or (alias is None and "EAGLE" in build.members):
        return passed(
            "sglang.algorithm", f"NEXTN is accepted as EAGLE's alias in sglang {build.version or '?'}", evidence
        )
    return failed(
        "sglang.algorithm",
        f"NEXTN is neither a member nor an alias of EAGLE in {describe_build(build)}",
        "deploy an sglang build with EAGLE (NEXTN maps to it), or use another profile",
        [*evidence, f"from_string('NEXTN') -> {alias}"],
    )


def _ddtree(facts: HostFacts, build: SpecInfoFacts, evidence: list[str]) -> CheckResult:
    rule = f"{build.capture_rule}()"
    table = build.is_dflash_family if build.capture_rule == "is_dflash_family" else build.is_dflash
    evidence = [*evidence, f"hidden-state capture decided by {rule} in this build"]
    if table.get("DDTREE") is True:
        return passed("sglang.algorithm", f"DDTREE is registered and {rule} is True for it", evidence)
    if "DDTREE" not in table:
        return warned(
            "sglang.algorithm",
            f"DDTREE is registered, but whether {rule} includes it could not be read",
            f"check that SpeculativeAlgorithm.{rule} returns True for DDTREE in "
            f"{build.root}/sglang/srt/speculative/spec_info.py",
            evidence,
        )
    got, wanted = _hidden_shapes(facts.models)
    if build.capture_rule == "is_dflash_family":
        fix = "patch is_dflash_family() to include DDTREE (`return self.is_dflash() or ... or self.is_ddtree()`)"
    else:
        fix = "patch is_dflash() to include DDTREE (`return self in (SpeculativeAlgorithm.DFLASH, DDTREE)`)"
    stale = (
        " (is_dflash() includes it: a patch written for SGLang before 0.5.16)" if build.is_dflash.get("DDTREE") else ""
    )
    return failed(
        "sglang.algorithm",
        f"DDTREE is registered but SpeculativeAlgorithm.{rule} returns False for it{stale}: "
        f"the draft model would get {got} hidden states instead of {wanted}",
        f"{fix} and deploy that build",
        [*evidence, f"{rule}: DFLASH → True, DDTREE → False"],
    )


@check("sglang.enum_stability", "SpeculativeAlgorithm members keep their values since the previous release")
def enum_stability(ctx: CheckContext) -> CheckResult:
    build, previous = would_run(ctx.facts), previous_build(ctx.facts)
    if previous is None:
        return skipped("sglang.enum_stability", "no previous verified release to compare with")
    if build is None or build.root == previous.root:
        return skipped("sglang.enum_stability", "no other sglang build to compare the previous release with")
    old, new = previous.members, build.members
    renumbered = [
        f"{name} {old[name]} → {new[name]}" for name in by_value(old) if name in new and new[name] != old[name]
    ]
    evidence = [
        f"previous: sglang {previous.version or '?'} ({previous.root})",
        f"{build.label}: sglang {build.version or '?'} ({build.root})",
    ]
    removed = [name for name in by_value(old) if name not in new]
    added = [name for name in by_value(new) if name not in old]
    if removed:
        evidence.append(f"removed: {', '.join(removed)}")
    if added:
        evidence.append(f"added: {', '.join(added)}")
    if renumbered:
        return warned(
            "sglang.enum_stability",
            f"SpeculativeAlgorithm members changed value since the previous release: {listing(renumbered, 4)}",
            "anything that stored or exchanges the integer (a rollback reading saved state, PD-disaggregation peers "
            "on different builds) now misreads it: add new members after the existing ones instead of before",
            evidence + renumbered,
        )
    kept = len([name for name in old if name in new])
    return passed(
        "sglang.enum_stability",
        f"{kept} members keep their values (sglang {previous.version or '?'} → {build.version or '?'})",
        evidence,
    )
