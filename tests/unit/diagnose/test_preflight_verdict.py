"""A deploy the doctor's checks stopped: its candidate never ran, yet `diagnose --release` names the host's fault
from what the candidate's manifest recorded (the fingerprint and the failed checks), never "no failure"."""

from __future__ import annotations

from specops.deploy.preflight import preflight_record
from specops.diagnose.case import Material, build_case
from specops.diagnose.verdict import HEALTHY, HOST_FAULT, decide
from specops.doctor.model import CheckResult, Status
from tests.unit.diagnose.recorded import fingerprint
from tests.unit.diagnose.test_verdict import GOOD, RUNNING, files, manifest

STOPPED = "0123456789ab-c0ffee"
FFMPEG = CheckResult("torchcodec.ffmpeg", Status.FAIL, "no FFmpeg core loads",
                     ["core5: missing libavutil.so.59"], hint="install FFmpeg 7 on HOST")  # fmt: skip


def _material(**candidate: object) -> Material:
    stopped = manifest("b", files(spec_info="2"), **candidate)
    return Material(host="llm-one", current=GOOD, subject=STOPPED, reference=GOOD, unit=RUNNING,
                    manifests={GOOD: manifest("a", files()), STOPPED: stopped})  # fmt: skip


def test_a_preflight_failure_is_the_environment_naming_each_failed_check_with_its_evidence() -> None:
    found = decide(build_case(_material(preflight=preflight_record([FFMPEG]))))
    assert found.kind == HOST_FAULT == "environment"
    assert found.headline == f"environment: the host failed torchcodec.ffmpeg before {STOPPED} ran"
    assert "torchcodec.ffmpeg: core5: missing libavutil.so.59" in found.evidence
    assert found.next_steps[:2] == ["install FFmpeg 7 on llm-one", "check the host again: specops doctor llm-one"]
    assert found.cleared == [
        f"the release is cleared: {STOPPED} never ran on this host (the checks stopped its deploy)"
    ]
    document = found.to_json()
    assert document["verdict"] == "environment" and document["failure"]["source"] == "preflight"
    assert document["failure"]["checks"][0]["id"] == "torchcodec.ffmpeg"


def test_the_host_changes_the_candidate_recorded_are_part_of_the_evidence() -> None:
    moved = fingerprint(tree_hash="b" * 64).to_json() | {"driver": "999.1"}
    found = decide(build_case(_material(preflight=preflight_record([FFMPEG]), facts=moved)))
    assert any(line.startswith("changed on the host: ") and "999.1" in line for line in found.evidence)


def test_without_a_preflight_record_the_stopped_release_is_no_failure_as_before() -> None:
    assert decide(build_case(_material())).kind == HEALTHY
    assert decide(build_case(_material(preflight=None))).kind == HEALTHY  # a later deploy's preflight passed
