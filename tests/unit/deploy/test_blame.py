"""Blame before marks: the one decision every automatic bad mark goes through (specops/deploy/blame.py), and its
host-side twin's lines (remote/release/hostblame.py), which must name the same environment faults."""

from __future__ import annotations

import pytest

from specops.commands.config_change import ConfigChange
from specops.commands.release import rollback_argv
from specops.config.inventory import HostSpec
from specops.deploy.blame import HOST_NOT_RELEASE, blame_for_failed_gates, host_at_fault
from specops.diagnose.fingerprint import Fingerprint
from specops.engine.gates import GateResult
from specops.engine.readiness import Readiness
from specops.engine.signatures import match, primary_cause
from specops.remote.release.hostblame import host_fault_line

GOOD, FAILED = "20261101T000000Z-aaaa", "20261102T000000Z-bbbb"
TORCHCODEC = [
    "Traceback (most recent call last):",
    "RuntimeError: Could not load libtorchcodec. Likely causes:",
    "OSError: libavutil.so.57: cannot open shared object file: No such file or directory",
]
SPEC_CRASH = ["Traceback (most recent call last):", "AssertionError: draft token shape mismatch"]
UNCHANGED = ConfigChange()  # this deploy changed neither the env file nor the unit
WITH_FFMPEG = Fingerprint(host="h", ffmpeg_libs=["libavutil.so.57"], packages={"torch": "2.13.0"})
WITHOUT_FFMPEG = Fingerprint(host="h", ffmpeg_libs=[], packages={"torch": "2.13.0"})


def _not_ready(journal: list[str]) -> GateResult:
    """Readiness that failed on these journal lines, the cause as the real scanner finds it."""
    found = match(journal)
    cause = primary_cause(found)
    readiness = Readiness(False, cause, "startup", 4.0, journal[-1], 1, "the engine exited", found, journal)
    return GateResult(readiness, None)


def test_a_failure_the_journal_does_not_blame_on_the_host_marks_the_release_and_rolls_back() -> None:
    blame = blame_for_failed_gates(UNCHANGED, _not_ready(SPEC_CRASH), GOOD, WITH_FFMPEG, WITH_FFMPEG)
    assert (blame.culprit, blame.marks_bad, blame.roll_back) == ("build", True, True)
    assert blame.reason == "the gates failed with the configuration unchanged"


def test_an_environment_fault_on_the_environment_the_target_was_verified_on_rolls_back_and_marks_nothing() -> None:
    blame = blame_for_failed_gates(UNCHANGED, _not_ready(TORCHCODEC), GOOD, WITHOUT_FFMPEG, WITHOUT_FFMPEG)
    assert (blame.culprit, blame.marks_bad, blame.roll_back) == ("host", False, True)
    assert blame.reason.startswith(f"{HOST_NOT_RELEASE}: torchcodec")
    assert "journal: RuntimeError: Could not load libtorchcodec" in blame.reason
    assert blame.reason.endswith(f"{GOOD} was verified on this same environment: rolled back to it")


def test_an_environment_fault_after_the_environment_changed_neither_marks_nor_rolls_back() -> None:
    blame = blame_for_failed_gates(UNCHANGED, _not_ready(TORCHCODEC), GOOD, WITH_FFMPEG, WITHOUT_FFMPEG)
    assert (blame.marks_bad, blame.roll_back) == (False, False)
    assert f"not rolled back: {GOOD} is not known to work on this environment (" in blame.reason
    assert "libavutil.so.57" in blame.reason and blame.reason.endswith("it would restart into the same fault")


@pytest.mark.parametrize(("target_env", "candidate_env"), [(None, WITHOUT_FFMPEG), (WITH_FFMPEG, None)])
def test_an_environment_fault_without_both_fingerprints_does_not_roll_back(
    target_env: Fingerprint | None, candidate_env: Fingerprint | None
) -> None:
    blame = blame_for_failed_gates(UNCHANGED, _not_ready(TORCHCODEC), GOOD, target_env, candidate_env)
    assert (blame.marks_bad, blame.roll_back) == (False, False)
    assert "(no environment fingerprint to compare with)" in blame.reason


def test_without_a_target_the_host_is_still_blamed_and_nothing_is_rolled_back() -> None:
    host = blame_for_failed_gates(UNCHANGED, _not_ready(TORCHCODEC), None, None, None)
    assert (host.culprit, host.marks_bad, host.roll_back) == ("host", False, False)


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: Could not load libtorchcodec. Likely causes:",
        "OSError: libavutil.so.57: cannot open shared object file: No such file or directory",
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU",
        "OSError: libcuda.so.1: cannot open shared object file: No such file or directory",
        "RuntimeError: The NVIDIA driver on your system is too old (found version 535).",
        "ImportError: libnvrtc.so.12: cannot open shared object file: No such file or directory",
        "RuntimeError: CUDA error: uncorrectable ECC error encountered",
        "Failed to initialize NVML: Driver/library version mismatch",
        "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Error 802: system not yet "
        "initialized",
    ],
)
def test_the_guard_names_the_host_for_the_lines_the_client_blames_on_the_host(line: str) -> None:
    cause = primary_cause(match([line]))
    assert cause is not None
    family = cause.signature.family
    assert host_at_fault(_not_ready([line]), None, None, None) is not None, family
    assert host_fault_line(["INFO starting", line]) == host_fault_line([line]) is not None


def test_the_guard_leaves_every_other_line_to_the_release() -> None:
    assert host_fault_line([*SPEC_CRASH, "INFO Uvicorn running on http://127.0.0.1:30000"]) is None


def test_the_host_script_is_asked_to_keep_the_release_unmarked_only_when_the_build_is_not_blamed() -> None:
    spec = HostSpec.model_validate({"name": "gpu-a", "ssh": "root@10.0.0.2", "python": "/usr/bin/python3",
                                    "model_path": "/models/none"})  # fmt: skip
    assert rollback_argv(spec, GOOD, "why")[-1] == "why"  # marks the release it leaves, as before
    assert rollback_argv(spec, GOOD, "why", keep_unmarked=True)[-1] == "keep-unmarked"
    assert rollback_argv(spec, GOOD, "why", force=True, keep_unmarked=True)[-1] == "force,keep-unmarked"


def test_a_configuration_change_in_the_same_deploy_is_blamed_before_the_host() -> None:
    """The new env file may be what broke the start (LD_LIBRARY_PATH): the rollback puts back the old one."""
    changed = ConfigChange(env=("LD_LIBRARY_PATH: /opt/a -> /opt/b",))
    blame = blame_for_failed_gates(changed, _not_ready(TORCHCODEC), GOOD, WITH_FFMPEG, WITHOUT_FFMPEG)
    assert (blame.culprit, blame.marks_bad, blame.roll_back) == ("configuration", False, True)
