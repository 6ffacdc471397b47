"""Journal signatures on the real texts (torchcodec 0.13/0.10 on torch 2.13 as captured here, torch's CUDA
errors as torch prints them, the test engine's own start-up log)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specops.engine.signatures import JournalScanner, match, primary_cause

DATA = Path(__file__).parent / "data"
NO_FFMPEG = (DATA / "torchcodec_no_ffmpeg.txt").read_text().splitlines()
ABI = (DATA / "torchcodec_abi.txt").read_text().splitlines()
PATCHED_START = (DATA / "engine_start_patched.txt").read_text().splitlines()

DRIVER = (
    "RuntimeError: The NVIDIA driver on your system is too old (found version 12080). Please update your GPU driver "
    "by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx "
    "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your "
    "version of the CUDA driver."
)
REAL_ONE_LINERS = [
    (DRIVER, "driver-too-old", True, {"found_version": "12080"}),
    ("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from "
     "http://www.nvidia.com/Download/index.aspx", "no-driver", True, {}),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB "
     "of which 1.06 GiB is free.", "cuda-oom", True, {}),
    ("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, "
     "unhandled cuda error (run with NCCL_DEBUG=INFO for details)", "nccl", True, {}),
    ("ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 30000): address already in use",
     "address-in-use", True, {}),
    ("[2026-11-29 17:22:14] DFLASH target_hidden feature dim mismatch. Expected shape [N, 2560] "
     "(num_context_features=5, hidden_size=512), but got shape=(7, 512).", "dflash-feature-mismatch", False, {}),
    ("ValueError: Qwen2ForCausalLM does not implement set_dflash_layers_to_capture", "dflash-layers-capture", True,
     {}),
    ("[2026-11-29 17:22:23] Initialization failed. warmup error: Traceback (most recent call last):", "warmup-failed",
     True, {}),
    ("ModuleNotFoundError: No module named 'sgl_kernel'", "import-error", False,
     {"error": "ModuleNotFoundError", "message": "No module named 'sgl_kernel'"}),
    ("ImportError: /opt/venv/lib/python3.11/site-packages/sgl_kernel/common_ops.abi3.so: undefined symbol: "
     "_ZN3c104cuda9SetDeviceEa", "undefined-symbol", False,
     {"library": "common_ops.abi3.so", "symbol": "_ZN3c104cuda9SetDeviceEa"}),
    ("OSError: /opt/venv/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: "
     "undefined symbol: _ZN3c105ErrorC2E", "undefined-symbol", False,
     {"library": "flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so", "symbol": "_ZN3c105ErrorC2E"}),
    ("[2026-11-29 17:22:23] The server is fired up and ready to roll!", "ready", False, {}),
]  # fmt: skip


@pytest.mark.parametrize(("line", "sig_id", "fatal", "details"), REAL_ONE_LINERS)
def test_one_line_signatures(line: str, sig_id: str, fatal: bool, details: dict[str, str]) -> None:
    [found] = match([line])
    assert found.signature.id == sig_id
    assert found.fatal is fatal
    assert details.items() <= found.details.items()
    assert found.signature.hint or sig_id == "ready"


def test_torchcodec_without_ffmpeg_is_one_fatal_incident_naming_the_ffmpeg_majors() -> None:
    found = match(NO_FFMPEG)
    assert [m.signature.id for m in found] == ["torchcodec-ffmpeg"]
    incident = found[0]
    assert incident.fatal
    assert incident.line.startswith("RuntimeError: Could not load libtorchcodec")
    assert incident.details["tried"] == "8, 7, 6, 5, 4"
    assert incident.details["supported"] == "4, 5, 6, 7, 8"
    assert "libavutil.so.57" in incident.details["missing"]
    assert incident.summary.startswith("torchcodec cannot load FFmpeg: it needs FFmpeg 4, 5, 6, 7 or 8 libraries")
    assert "(libavutil.so.56-60)" in incident.summary
    assert "apt-get install ffmpeg" in incident.signature.hint


def test_inner_torchcodec_lines_alone_still_name_the_major() -> None:
    lines = [
        "OSError: libavutil.so.57: cannot open shared object file: No such file or directory",
        "OSError: Could not load this library: /opt/venv/lib/python3.11/site-packages/torchcodec/libtorchcodec_core5.so",
    ]
    [found] = match(lines)
    assert found.signature.id == "torchcodec-ffmpeg" and found.fatal
    assert found.details == {"missing": "libavutil.so.57", "tried": "5"}
    assert "FFmpeg 5 libraries (libavutil.so.57)" in found.summary


def test_torchcodec_abi_mismatch_is_named_as_abi_not_ffmpeg() -> None:
    found = match(ABI)
    cause = primary_cause(found)
    assert cause is not None and cause.signature.id == "torchcodec-abi"
    assert cause.details == {"ffmpeg": "5", "symbol": "_ZN3c1013MessageLoggerC1EPKciib"}
    assert "torchcodec/torch" in cause.signature.hint or "torch 2.13" in cause.signature.hint
    incident = next(m for m in found if m.signature.id == "torchcodec-ffmpeg")
    assert "ABI mismatch, not an FFmpeg problem" in incident.summary


def test_torchcodec_in_sglangs_ignore_import_error_is_only_a_warning() -> None:
    start = NO_FFMPEG.index(next(line for line in NO_FFMPEG if line.startswith("RuntimeError: Could not load")))
    message = NO_FFMPEG[start].removeprefix("RuntimeError: ")
    warned = [
        f"[2026-11-29 17:30:01] Ignore import error when loading sglang.srt.multimodal.processors.mimo_v2: {message}",
        *NO_FFMPEG[start + 1 :],
        "[2026-11-29 17:30:09] The server is fired up and ready to roll!",
    ]
    found = match(warned)
    assert [m.signature.id for m in found] == ["torchcodec-ffmpeg", "ready"]
    assert not found[0].fatal
    assert "SGLang ignored it" in found[0].summary
    assert primary_cause(found) is found[0]


def test_engine_start_up_is_progress_then_ready_with_phases() -> None:
    found = match(PATCHED_START)
    kinds = {m.signature.kind for m in found}
    assert kinds == {"progress", "ready"}
    phases = [m.signature.phase for m in found if m.signature.kind == "progress"]
    assert phases[0] == "starting" and "loading weights" in phases and "warming up" in phases
    shards = [m.details for m in found if m.signature.id == "load-shards"]
    assert shards[-1] == {"percent": "100", "shards": "4/4"}
    assert found[-1].signature.id == "ready"


def test_scanner_counts_lines_across_polls() -> None:
    scanner = JournalScanner()
    assert scanner.feed(["starting", "nothing here"]) == []
    [found] = scanner.feed(["Found no NVIDIA driver on your system."])
    assert found.line_no == 2


def test_primary_cause_prefers_fatal_over_errors_and_warnings() -> None:
    found = match([
        "Ignore import error when loading sglang.srt.multimodal.processors.x: No module named 'decord'",
        "ModuleNotFoundError: No module named 'sgl_kernel'",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.",
    ])  # fmt: skip
    assert [m.signature.kind for m in found] == ["warning", "error", "fatal"]
    cause = primary_cause(found)
    assert cause is not None and cause.signature.id == "cuda-oom"
    assert primary_cause(found[:2]) is found[1]
    assert primary_cause([]) is None


def test_every_problem_signature_is_documented_with_its_fix() -> None:
    from specops.engine.signatures import SIGNATURES, TORCHCODEC

    text = (Path(__file__).resolve().parents[3] / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    problems = [sig for sig in (TORCHCODEC, *SIGNATURES) if sig.kind in ("fatal", "error", "warning")]
    assert [sig.id for sig in problems if f"`{sig.id}`" not in text] == []
