"""Fingerprint and file differences: grouped, differences first, equal facts in one line."""

from __future__ import annotations

from specops.diagnose.diff import FileChange, count_unified, diff_files, diff_fingerprints
from specops.ops.forensics import DIFF_MARKER, split_diff_output
from tests.unit.diagnose.recorded import cu128_with_torchcodec_010, fingerprint, without_ffmpeg

SPEC_INFO = "sglang/srt/speculative/spec_info.py"


def test_two_hosts_differing_in_torch_cuda_tag_and_torchcodec_list_exactly_those() -> None:
    found = diff_fingerprints(fingerprint(), fingerprint(cu128_with_torchcodec_010()))
    assert [change.text for change in found.changes] == [
        "torch 2.13.0+cu130 (CUDA 13.0) → 2.13.0+cu128 (CUDA 12.8)",
        "torchcodec 0.13.0 (loads core5) → 0.10.0 (no FFmpeg core loads)",
    ]
    assert {change.group for change in found.changes} == {"Python packages"}
    assert found.equal_line.startswith("equal: driver/CUDA, native libraries, system, unit and flags (")


def test_removed_ffmpeg_libraries_are_named_under_native_libraries() -> None:
    found = diff_fingerprints(fingerprint(), fingerprint(without_ffmpeg()))
    ffmpeg = next(change for change in found.changes if change.key == "FFmpeg libraries")
    assert ffmpeg.group == "native libraries"
    assert "libavutil.so.57" in ffmpeg.removed and ffmpeg.added == ()
    assert ffmpeg.text.startswith("FFmpeg libraries: removed libavcodec.so.59, libavdevice.so.59")
    assert [c.key for c in found.changes] == ["torchcodec", "FFmpeg libraries"]  # packages before libraries


def test_changes_follow_the_group_order_and_other_packages_are_named() -> None:
    after = fingerprint().model_copy(update={
        "driver": "570.124.06", "kernel": "6.1.0-30-amd64", "tree_hash": "e" * 64,
        "installed": {**fingerprint().installed, "accelerate": "1.11.0", "peft": "0.17.0"},
    })  # fmt: skip
    found = diff_fingerprints(fingerprint(tree_hash="d" * 64), after)
    assert [(c.group, c.key) for c in found.changes] == [
        ("driver/CUDA", "driver"), ("Python packages", "other packages"), ("system", "kernel"),
        ("build files", "tree hash"),
    ]  # fmt: skip
    others = next(c for c in found.changes if c.key == "other packages")
    assert others.after == "accelerate 1.10.0 → 1.11.0, +peft 0.17.0"
    assert others.added == ("peft",)


def test_a_fact_observed_on_one_side_only_is_not_a_difference() -> None:
    older = fingerprint().model_copy(update={"glibc": ""})  # recorded by a probe that did not read glibc
    assert diff_fingerprints(older, fingerprint()).changes == []


def test_files_that_differ_between_releases_with_line_counts() -> None:
    before = {SPEC_INFO: {"size": 10, "mode": 420, "sha256": "1"}, "a.py": {"size": 1, "mode": 420, "sha256": "x"},
              "gone.py": {"size": 1, "mode": 420, "sha256": "g"}}  # fmt: skip
    after = {SPEC_INFO: {"size": 10, "mode": 420, "sha256": "2"}, "a.py": {"size": 1, "mode": 420, "sha256": "x"},
             "new.py": {"size": 1, "mode": 420, "sha256": "n"}}  # fmt: skip
    found = diff_files(before, after).with_stats({SPEC_INFO: (1, 1)})
    assert [c.text for c in found.changes] == ["gone.py (removed)", "new.py (added)", f"{SPEC_INFO} +1 −1"]
    assert FileChange("b.py", "changed").text == "b.py (changed)"


def test_unified_diff_output_is_counted_per_file_and_binary_files_get_no_numbers() -> None:
    text = "\n".join([
        f"{DIFF_MARKER}{SPEC_INFO}",
        f"--- /r/a/{SPEC_INFO}", f"+++ /r/b/{SPEC_INFO}", "@@ -10,3 +10,3 @@", " context",
        "-        return self in (SpeculativeAlgorithm.DFLASH,)",
        "+        return self in (SpeculativeAlgorithm.DFLASH, SpeculativeAlgorithm.DDTREE)",
        f"{DIFF_MARKER}lib.so", "Binary files /r/a/lib.so and /r/b/lib.so differ",
    ])  # fmt: skip
    assert split_diff_output(text) == {SPEC_INFO: (1, 1)}
    assert count_unified("--- a\n+++ b\n+x\n+y\n-z\n") == (2, 1)
