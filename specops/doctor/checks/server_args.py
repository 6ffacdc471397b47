"""The unit's exact argv through the build's OWN argument parser (and its validation where that runs on CPU).

Why: a flag the build does not know, or an algorithm name its parser refuses, makes `launch_server` exit 2 at
the restart — after the running release was stopped. The probe runs `ServerArgs.add_cli_args(parser);
parser.parse_args(argv)` of the build that would run (a deploy's candidate first), so the verdict is the
build's, not a copy of its rules. A deploy's preflight runs this check: a FAIL stops it before the unit is
installed (unless --force).
"""

from __future__ import annotations

from specops.doctor.checks._helpers import would_run
from specops.doctor.model import CheckContext, CheckResult, failed, passed, skipped, warned
from specops.doctor.registry import check
from specops.probe.facts import ServerArgsFacts, SpecInfoFacts

CHECK_ID = "sglang.server_args"
# flags specops may render that some builds lack, and why a build would not know them
FLAG_NOTES = {
    "--speculative-ddtree-budget": "a DDTree fork flag: no upstream release has it",
    "--speculative-draft-window-size": "spelled --speculative-dflash-draft-window-size before sglang 0.5.12",
    "--speculative-dflash-block-size": "a DFLASH flag: upstream since sglang 0.5.11",
    "--speculative-dflash-draft-window-size": "the old spelling, removed in sglang 0.5.14",
}
FLAG_HINTS = {
    "--speculative-ddtree-budget": "deploy a build with the DDTree patch (sglang PR #29907 or a fork that has "
    "--speculative-ddtree-budget), or choose a profile this build can run",
    "--speculative-draft-window-size": "deploy sglang 0.5.12 or newer, or drop draft_window_size from the profile",
}


def _method(server_args: ServerArgsFacts) -> str:
    if server_args.method == "parser":
        return "the build's own parser (ServerArgs.add_cli_args)"
    return f"the add_argument calls in its source (the parser could not be imported: {server_args.parser_error})"


def _evidence(build: SpecInfoFacts, server_args: ServerArgsFacts) -> list[str]:
    lines = [f"{build.label}: {build.root}", f"checked with {_method(server_args)}"]
    if server_args.speculative_flags:
        lines.append(f"speculative flags it knows: {', '.join(server_args.speculative_flags)}")
    return lines


def _about_speculation(error: str) -> bool:
    """A validation error about the speculative settings is the profile's; others may be the CPU's doing."""
    lowered = error.lower()
    return any(word in lowered for word in ("speculative", "dflash", "ddtree", "draft", "eagle"))


def _profile_name(ctx: CheckContext) -> str:
    return ctx.profile.name if ctx.profile else "this"


@check(CHECK_ID, "the build's own argument parser accepts the exact argv of the unit")
def server_args(ctx: CheckContext) -> CheckResult:
    if ctx.profile is None:
        return skipped(CHECK_ID, "no profile given: no unit argv to check")
    build = would_run(ctx.facts)
    if build is None or build.server_args is None:
        return skipped(CHECK_ID, "no sglang build found to check the unit's argv against")
    found, version = build.server_args, f"sglang {build.version or '(version unknown)'}"
    if found.method == "none":
        return warned(
            CHECK_ID,
            f"could not check the unit's argv against {version}: {found.error}",
            f"check by hand: {build.root} on the path, python -m sglang.launch_server --help",
            [f"{build.label}: {build.root}", f"parser import: {found.parser_error or found.error}"],
        )
    evidence = _evidence(build, found)
    if found.unknown_flags:
        return _unknown(ctx, version, found, evidence)
    if found.errors:
        return failed(
            CHECK_ID,
            f"{version} refuses the unit's argv: {found.errors[0]}",
            f"the {_profile_name(ctx)} profile needs a build whose parser accepts it (see docs/profiles.md)",
            [*evidence, *found.errors],
        )
    if found.validation == "failed" and not _about_speculation(found.validation_error or ""):
        return warned(
            CHECK_ID,
            f"{version} parses the unit's argv; its validation (run without the GPU) refused it: "
            f"{found.validation_error}",
            "the same check runs again at start-up with the real GPU; fix what the error names if it applies",
            evidence,
        )
    if found.validation == "failed":
        return failed(
            CHECK_ID,
            f"{version} parses the unit's argv but its validation refuses it: {found.validation_error}",
            "fix the profile or host settings named in the error",
            evidence,
        )
    how = "parser" if found.method == "parser" else "source"
    if found.validation == "passed":
        return passed(CHECK_ID, f"{version} accepts the unit's argv (parser and validation)", evidence)
    if found.validation_error:
        evidence.append(f"validation not run: {found.validation_error}")
    return passed(CHECK_ID, f"{version} accepts the unit's argv ({how})", evidence)


def _unknown(ctx: CheckContext, version: str, found: ServerArgsFacts, evidence: list[str]) -> CheckResult:
    from specops.commands.systemd import flag_spellings

    renamed = flag_spellings(found.speculative_flags)
    evidence = evidence + [f"this build spells {new} as {old}" for new, old in renamed.items()]
    flag = found.unknown_flags[0]
    note = f" ({FLAG_NOTES[flag]})" if flag in FLAG_NOTES else ""
    others = found.unknown_flags[1:]
    also = f"; also unknown: {', '.join(others)}" if others else ""
    return failed(
        CHECK_ID,
        f"{version} does not know {flag}{note}: this build cannot run the {_profile_name(ctx)} profile{also}",
        FLAG_HINTS.get(flag, "deploy a build that has these flags, or remove them from the profile/extra_args"),
        [*evidence, f"unknown: {', '.join(found.unknown_flags)}"],
    )
