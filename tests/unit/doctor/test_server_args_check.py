"""`sglang.server_args`: the verdict on what the build's own parser said about the unit's argv."""

from __future__ import annotations

from specops.doctor.checks.server_args import server_args
from specops.doctor.model import Status
from specops.probe.facts import ServerArgsFacts
from tests.unit.doctor.factory import context, healthy_facts, spec_info


def _run(report: ServerArgsFacts | None, version: str = "0.5.23", profile: object = "default") -> object:
    build = spec_info("candidate", version=version, server_args=report)
    facts = healthy_facts(sglang=[build])
    return server_args(context(facts) if profile == "default" else context(facts, profile=profile))


def test_an_unknown_ddtree_flag_fails_naming_flag_version_and_profile() -> None:
    result = _run(ServerArgsFacts(method="parser", unknown_flags=["--speculative-ddtree-budget"]))
    assert result.status is Status.FAIL
    assert result.summary == (
        "sglang 0.5.23 does not know --speculative-ddtree-budget (a DDTree fork flag: no upstream release has it): "
        "this build cannot run the ddtree profile"
    )
    assert "PR #29907" in result.hint
    assert "checked with the build's own parser (ServerArgs.add_cli_args)" in result.evidence


def test_an_invalid_choice_fails_with_the_parsers_words() -> None:
    error = "argument --speculative-algorithm: invalid choice: 'DFLASH' (choose from 'EAGLE', 'EAGLE3', 'NEXTN')"
    result = _run(ServerArgsFacts(method="parser", errors=[error]), version="0.5.10")
    assert (result.status, result.summary) == (Status.FAIL, f"sglang 0.5.10 refuses the unit's argv: {error}")


def test_a_speculative_validation_error_fails_and_another_only_warns() -> None:
    spec = ServerArgsFacts(method="parser", validation="failed", validation_error="ValueError: dflash block size 16")
    assert _run(spec).status is Status.FAIL
    other = ServerArgsFacts(method="parser", validation="failed", validation_error="ValueError: no GPU found")
    result = _run(other)
    assert result.status is Status.WARN and "run without the GPU" in result.summary


def test_the_source_fallback_says_so() -> None:
    report = ServerArgsFacts(method="source", parser_error="ModuleNotFoundError: No module named 'triton'")
    result = _run(report)
    assert (result.status, result.summary) == (Status.PASS, "sglang 0.5.23 accepts the unit's argv (source)")
    assert any("add_argument calls in its source" in line and "triton" in line for line in result.evidence)


def test_validation_not_run_still_passes_with_the_reason() -> None:
    report = ServerArgsFacts(method="parser", validation="not run", validation_error="ModuleNotFoundError: x")
    result = _run(report)
    assert result.status is Status.PASS
    assert "validation not run: ModuleNotFoundError: x" in result.evidence


def test_nothing_checkable_warns_and_no_profile_skips() -> None:
    assert _run(ServerArgsFacts(method="none", error="no add_argument calls")).status is Status.WARN
    assert _run(ServerArgsFacts(method="parser"), profile=None).status is Status.SKIP
    assert _run(None).status is Status.SKIP


def test_a_renamed_flag_names_the_builds_spelling() -> None:
    report = ServerArgsFacts(
        method="parser",
        unknown_flags=["--speculative-draft-window-size"],
        speculative_flags=["--speculative-algorithm", "--speculative-dflash-draft-window-size"],
    )
    result = _run(report, version="0.5.11")
    assert result.summary.startswith(
        "sglang 0.5.11 does not know --speculative-draft-window-size (spelled --speculative-dflash-draft-window-size "
        "before sglang 0.5.12)"
    )
    assert "this build spells --speculative-draft-window-size as --speculative-dflash-draft-window-size" in (
        result.evidence
    )
