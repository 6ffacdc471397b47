"""Each verdict from recorded material: environment drift, code change, configuration change, nothing changed."""

from __future__ import annotations

from typing import Any

from specops.commands.journal import UnitState
from specops.commands.manifest import Manifest, parse_manifest
from specops.diagnose.case import Material, build_case
from specops.diagnose.verdict import CODE, CONFIG, ENVIRONMENT, HEALTHY, HOST_FAULT, NOTHING, Verdict, decide
from specops.probe.parse import parse_host_facts
from tests.unit.diagnose.recorded import fingerprint, journal, probe_document, without_ffmpeg

GOOD, BAD = "20261130T010000Z-aaaaaaaaaaaa", "20261130T020000Z-bbbbbbbbbbbb"
SPEC_INFO = "sglang/srt/speculative/spec_info.py"
SCHEDULER = "sglang/srt/managers/scheduler.py"
CRASH_LOOP = UnitState(active_state="activating", sub_state="auto-restart", n_restarts=4, exec_main_status=1)
RUNNING = UnitState(active_state="active", sub_state="running", main_pid=42)


def files(spec_info: str = "1", scheduler: str = "s") -> dict[str, Any]:
    return {SPEC_INFO: {"size": 9, "mode": 420, "sha256": spec_info},
            SCHEDULER: {"size": 9, "mode": 420, "sha256": scheduler}}  # fmt: skip


def manifest_json(tree: str, file_map: dict[str, Any], **extra: Any) -> dict[str, Any]:
    facts = fingerprint(tree_hash=tree * 64).to_json()
    return {"tree_hash": tree * 64, "files": file_map, "facts": facts, "profile": "ddtree", "unit_sha256": "u1",
            **extra}  # fmt: skip


def manifest(tree: str, file_map: dict[str, Any], **extra: Any) -> Manifest:
    """The manifest as diagnose gets it: manifest.json through its reader."""
    return parse_manifest(manifest_json(tree, file_map, **extra), "manifest.json", "llm-one")


def verdict(**material: Any) -> Verdict:
    defaults: dict[str, Any] = {"host": "llm-one", "current": GOOD, "subject": GOOD, "reference": GOOD}
    return decide(build_case(Material(**{**defaults, **material})))


def test_ffmpeg_removed_is_environment_drift_naming_the_library_and_clearing_the_release() -> None:
    found = verdict(
        subject_verified=True, manifests={GOOD: manifest("a", files())}, unit=CRASH_LOOP,
        journal=journal("torchcodec_no_ffmpeg.txt"), facts=parse_host_facts(without_ffmpeg()),
    )  # fmt: skip
    assert found.kind == ENVIRONMENT
    assert "libavutil.so.57" in found.headline and "removed" in found.headline
    assert any("torchcodec cannot load FFmpeg" in line for line in found.evidence)
    assert found.cleared == [f"the code is cleared: no file differs from {GOOD}, the release that passed its gates on "
                             "this host"]  # fmt: skip
    assert found.next_steps[0].startswith("install FFmpeg") or "ffmpeg" in found.next_steps[0].lower()


def test_degenerate_smoke_after_a_change_under_speculative_is_a_code_change_and_clears_the_host() -> None:
    gates = {"passed": False, "readiness": {"ok": True, "reason": "ready"}, "smoke": {
        "passed": False, "reason": "smoke gate failed: output '!!!!!!!!' (want real text)",
        "gates": [{"id": "output", "ok": False, "detail": "one character repeated"}], "cause": None}}  # fmt: skip
    found = verdict(
        current=GOOD, subject=BAD, subject_verified=False, unit=RUNNING, facts=parse_host_facts(probe_document()),
        manifests={GOOD: manifest("a", files()), BAD: manifest("b", files(spec_info="2"), gates=gates)},
        file_stats={SPEC_INFO: (1, 1)}, journal=journal("engine_start_patched.txt"),
    )  # fmt: skip
    assert found.kind == CODE
    assert found.headline == f"code change: 1 file(s) differ from {GOOD}: {SPEC_INFO} +1 −1"
    assert any("degenerate smoke output after a change under speculative/" in line for line in found.evidence)
    assert found.cleared and found.cleared[0].startswith("the environment is cleared: nothing in the host's")
    assert f"releases/{GOOD}/{SPEC_INFO}" in found.next_steps[0]


def test_after_an_automatic_rollback_the_advice_is_what_serves_now_never_a_rollback() -> None:
    gates = {"passed": False, "readiness": {"ok": True, "reason": "ready"}, "smoke": {
        "passed": False, "reason": "smoke gate failed: output '!!!!!!!!' (want real text)", "cause": None}}  # fmt: skip
    found = verdict(
        current=GOOD, subject=BAD, subject_verified=False, unit=RUNNING, facts=parse_host_facts(probe_document()),
        manifests={GOOD: manifest("a", files(), verified=True), BAD: manifest("b", files(spec_info="2"), gates=gates)},
        journal=journal("engine_start_patched.txt"),
    )  # fmt: skip
    assert found.kind == CODE
    assert f"nothing to roll back: the rollback already happened, {GOOD} (verified) serves now" in found.next_steps
    assert not any("specops rollback" in step for step in found.next_steps)
    shown = found.to_json()
    assert shown["serving"] == GOOD
    assert shown["now"] == f"now: {GOOD} serves (verified); {BAD} no longer serves (the host was rolled back)"


def test_a_traceback_in_a_changed_file_points_at_the_code() -> None:
    lines = [
        "Traceback (most recent call last):",
        f'  File "/opt/specops/sglang/releases/{BAD}/{SCHEDULER}", line 120, in event_loop',
        "ZeroDivisionError: division by zero",
    ]
    found = verdict(
        current=BAD, subject=BAD, manifests={GOOD: manifest("a", files()), BAD: manifest("b", files(scheduler="t"))},
        unit=CRASH_LOOP, journal=lines, facts=parse_host_facts(probe_document()),
    )  # fmt: skip
    assert found.kind == CODE
    assert any(f"frames are in changed files: {SCHEDULER}" in line for line in found.evidence)
    # the failed release is current and nothing verified serves: a rollback is the way back
    assert f"the last verified release is {GOOD}: `specops rollback llm-one` returns to it" in found.next_steps


def test_a_torchcodec_failure_with_unrelated_code_changes_is_still_the_environment() -> None:
    found = verdict(
        current=BAD, subject=BAD, manifests={GOOD: manifest("a", files()), BAD: manifest("b", files(scheduler="t"))},
        unit=CRASH_LOOP, journal=journal("torchcodec_no_ffmpeg.txt"), facts=parse_host_facts(without_ffmpeg()),
    )  # fmt: skip
    assert found.kind == ENVIRONMENT
    assert found.cleared == ["the code is cleared: the failure is in loading torchcodec, which no file of this "
                             "release's change touches (1 file(s) changed)"]  # fmt: skip
    assert [c.kind for c in found.ranking] == [ENVIRONMENT, CODE]


def test_a_new_unit_and_profile_with_the_same_files_is_a_configuration_change() -> None:
    found = verdict(
        current=BAD, subject=BAD, unit=CRASH_LOOP, journal=["something went wrong"],
        manifests={GOOD: manifest("a", files()), BAD: manifest("a", files(), profile="dflash", unit_sha256="u2")},
        facts=parse_host_facts(probe_document()),
    )  # fmt: skip
    assert found.kind == CONFIG
    assert "profile ddtree → dflash" in found.headline


def test_out_of_memory_with_nothing_changed() -> None:
    found = verdict(
        subject_verified=True, manifests={GOOD: manifest("a", files())}, unit=CRASH_LOOP,
        journal=["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"],
        facts=parse_host_facts(probe_document()),
    )  # fmt: skip
    assert found.kind == NOTHING
    assert "memory" in found.headline
    assert found.cleared[0].startswith("the code is cleared")


def test_a_healthy_host_has_no_failure() -> None:
    found = verdict(subject_verified=True, manifests={GOOD: manifest("a", files())}, unit=RUNNING,
                    journal=journal("engine_start_patched.txt"), facts=parse_host_facts(probe_document()))  # fmt: skip
    assert found.kind == HEALTHY
    assert found.to_json()["verdict"] == "no failure"


def test_a_reference_without_a_fingerprint_says_the_host_could_not_be_compared() -> None:
    old = parse_manifest({k: v for k, v in manifest_json("a", files()).items() if k != "facts"}, "m", "llm-one")
    found = verdict(subject_verified=True, manifests={GOOD: old}, unit=CRASH_LOOP, journal=["it broke"],
                    facts=parse_host_facts(probe_document()))  # fmt: skip
    assert found.kind == NOTHING
    assert "recorded no environment fingerprint" in found.headline


SMI = "0, 00000000:18:00.0, No\n1, 00000000:2A:00.0, No\n2, 00000000:3B:00.0, No\n"
FELL_OFF_GPU2 = ("2026-12-03T13:52:46.118000+0000 gpu-one kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
                 "name=<unknown>, GPU has fallen off the bus.\n")  # fmt: skip
CUDA_CRASH = ["  File \"/opt/specops/sglang/releases/b/sglang/srt/managers/scheduler.py\", line 88, in event_loop",
              "RuntimeError: CUDA error: an illegal memory access was encountered"]  # fmt: skip


def _facts_with_kernel_log(journal_text: str) -> Any:
    from specops.probe.facts_kernel import parse_kernel_log_facts

    raw = {"journal": {"found": True, "rc": 0, "out": journal_text, "err": "", "timed_out": False}, "method": "grep",
           "euid": 0, "user": "root"}  # fmt: skip
    kernel_log = parse_kernel_log_facts(raw, {"query_health": {"rc": 0, "out": SMI}})
    return parse_host_facts(probe_document()).model_copy(update={"kernel_log": kernel_log})


def test_a_crash_loop_on_a_gpu_that_fell_off_the_bus_is_the_host_whatever_the_code_changed() -> None:
    """The unit's journal shows a CUDA error in a changed file; the kernel journal of this boot shows the engine's
    GPU fell off the bus: the host, with the GPU, the Xid and the release cleared."""
    found = verdict(
        current=BAD, subject=BAD, reference=GOOD, manifests={GOOD: manifest("a", files()),
                                                            BAD: manifest("b", files(scheduler="s2"))},
        unit=CRASH_LOOP, journal=CUDA_CRASH, facts=_facts_with_kernel_log(FELL_OFF_GPU2), gpus={2},
    )  # fmt: skip
    assert found.kind == HOST_FAULT, found.headline
    assert "GPU 2 (0000:3b:00.0) fell off the bus (Xid 79)" in found.headline
    assert found.cleared == [f"the release is cleared: {BAD} did not cause a GPU fault of the host"]
    assert found.to_json()["failure"]["source"] == "kernel"


def test_a_fault_on_a_gpu_the_engine_does_not_use_leaves_the_journal_to_speak() -> None:
    found = verdict(
        current=BAD, subject=BAD, reference=GOOD, manifests={GOOD: manifest("a", files()),
                                                            BAD: manifest("b", files(scheduler="s2"))},
        unit=CRASH_LOOP, journal=CUDA_CRASH, facts=_facts_with_kernel_log(FELL_OFF_GPU2), gpus={0, 1},
    )  # fmt: skip
    assert found.kind == CODE, found.headline
