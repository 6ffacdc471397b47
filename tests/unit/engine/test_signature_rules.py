"""How a journal line is read: any prefix, what the process did next, traceback source code, one cause per TP
rank, benign lines. The messages are real ones (data/journal_corpus); only the wrappers around them vary."""

from __future__ import annotations

import json

import pytest

from specops.engine.signatures import JournalScanner, match, primary_cause
from specops.engine.signatures.corpus import load
from specops.engine.signatures.explain import explain_lines, primary

CORPUS = {excerpt.name: excerpt.lines for excerpt in load()}
NCCL = "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
PREFIXES = [
    "",
    "Nov 29 17:22:14 gpu-a sglang[4121]: ",
    "2026-11-29T17:22:14+0000 gpu-a sglang[4121]: ",
    "sglang-1  | ",
    "[2025-11-01 16:50:36 TP0] ",
    "[2026-04-20 21:34:08 ATTN_CP1 MOE_DP1 TP2] ",
    "(EngineCore_DP0 pid=1359765) ERROR 03-05 09:56:09 [core.py:1100] ",
    "2025-10-09T04:13:06.6371779Z [rank0]: ",
    "E0303 11:40:42.533000 713 site-packages/torch/_inductor/runtime/triton_heuristics.py:533] ",
    "- ",
    ">   | [2024-09-05T00:38:34Z] ",
]


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize(
    ("message", "sig_id"),
    [
        (NCCL, "nccl"),
        ("ModuleNotFoundError: No module named 'sgl_kernel'", "import-error"),
        ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", "kv-cache-no-room"),
        ("Rank 0 scheduler is dead. Please check if there are relevant logs.", "scheduler-died"),
    ],
)
def test_the_message_matches_whatever_prefix_the_line_carries(prefix: str, message: str, sig_id: str) -> None:
    [found] = match([prefix + message])
    assert found.signature.id == sig_id
    assert found.line == prefix + message


def test_an_error_in_one_request_is_not_fatal_while_the_server_serves_on() -> None:
    found = match(CORPUS["torchcodec-request-time"])
    [incident] = [m for m in found if m.signature.kind == "fatal"]
    assert incident.signature.id == "torchcodec-ffmpeg" and not incident.fatal
    assert "the server kept serving" in incident.summary
    assert primary_cause(found) is incident  # still the best explanation of a failed request, as an error
    [explained] = [e for e in explain_lines(CORPUS["torchcodec-request-time"]) if e.signature_id == "torchcodec-ffmpeg"]
    assert (explained.severity, explained.fatal) == ("error", False)  # a user got a 500: an error, not harmless
    later = match([*CORPUS["torchcodec-request-time"], "[2025-12-08 23:05:00] " + NCCL])
    assert [m.fatal for m in later if m.signature.id == "nccl"] == [True]  # a new record: the request is over


def test_an_import_failure_that_stops_start_up_is_fatal_one_sglang_ignores_is_not() -> None:
    [stopped] = explain_lines(["ModuleNotFoundError: No module named 'sgl_kernel'"])
    assert (stopped.signature_id, stopped.kind, stopped.severity, stopped.fatal) == (
        "import-error",
        "import",
        "fatal",
        True,
    )
    served = explain_lines(
        ["ModuleNotFoundError: No module named 'decord'", "The server is fired up and ready to roll!"]
    )
    assert [(e.signature_id, e.fatal) for e in served] == [("import-error", False)]
    ignored = explain_lines(CORPUS["benign-ignore-import-per-rank"])
    assert [(e.signature_id, e.severity, e.fatal) for e in ignored] == [("ignored-import", "warning", False)]


def test_traceback_source_code_is_not_a_second_occurrence() -> None:
    lines = CORPUS["nccl-init-rank"]
    assert any('raise RuntimeError(f"NCCL error: {error_str}")' in line for line in lines)
    [nccl] = [e for e in explain_lines(lines) if e.kind == "nccl"]
    assert nccl.line.startswith("RuntimeError: NCCL error: unhandled system error")
    ptxas = explain_lines(CORPUS["triton-ptxas-runtime-error"])
    assert [e.line for e in ptxas] == ["RuntimeError: `ptxas` failed with error code 4294967295: "]


def test_one_cause_is_explained_once_not_once_per_tp_rank() -> None:
    lines = [f"[2025-03-11 15:02:53 TP{rank}] {NCCL}" for rank in range(8)]
    [found] = match(lines)
    assert found.line_no == 0 and found.repeats == [1, 2, 3, 4, 5, 6, 7]
    [allreduce] = explain_lines(CORPUS["benign-custom-allreduce-peer-access"])[1:]
    assert allreduce.signature_id == "custom-allreduce-fallback" and len(allreduce.repeats) == 1


def test_benign_lines_are_named_as_harmless_and_never_fatal() -> None:
    lines = [line for name, excerpt in CORPUS.items() if name.startswith("benign-") for line in excerpt]
    explained = explain_lines(lines)
    assert explained and not any(e.fatal for e in explained)
    assert {e.severity for e in explained} == {"benign", "warning"}  # warning: the ignored imports
    streamed = [m for m in JournalScanner().feed(lines) if m.signature.kind != "progress"]
    assert {m.signature.id for m in streamed} == {"ignored-import"}  # benign ones only with include_benign


def test_a_draft_shape_mismatch_is_speculative_only_inside_speculative_code() -> None:
    [spec] = explain_lines(CORPUS["standalone-hidden-size"])
    assert spec.signature_id == "spec-shape-mismatch" and spec.kind == "speculative"
    message = CORPUS["standalone-hidden-size"][-1]
    assert explain_lines(['  File "/app/model.py", line 3, in forward', "    x = torch.cat(xs)", message]) == []


def test_scheduler_exit_code_completes_the_dead_rank() -> None:
    [dead] = [m for m in match(CORPUS["scheduler-killed-9"]) if m.signature.id == "scheduler-died"]
    assert dead.details == {"rank": "0", "exit_code": "-9"}
    assert "OOM killer" in dead.signature.hint


def test_explained_lines_serialise_with_id_kind_and_fatality() -> None:
    explained = explain_lines(CORPUS["warmup-502-killed-zh"])
    cause = primary(explained)
    assert cause is not None and cause.signature_id == "warmup-failed"
    payload = json.loads(json.dumps([e.to_json() for e in explained]))
    assert [(p["id"], p["kind"], p["fatal"]) for p in payload] == [
        ("warmup-failed", "warmup", True),
        ("process-killed", "rank-killed", True),
    ]
    assert set(payload[0]) == {"line_no", "line", "id", "kind", "severity", "fatal", "summary", "hint", "repeats"}
    assert payload[0]["line_no"] == 1 and payload[0]["hint"]


def test_source_code_stays_code_when_a_paste_lost_its_indentation() -> None:
    flush_left = [line.strip() for line in CORPUS["nccl-init-rank"]]  # as some issues show tracebacks
    assert [e.line for e in explain_lines(flush_left) if e.kind == "nccl"] == [NCCL]


def test_another_ranks_record_between_frame_and_source_is_still_read() -> None:
    frame = (
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1787, in run_scheduler_process'
    )
    [nccl] = explain_lines([frame, f"[2025-02-09 21:23:00 TP1] {NCCL}"])
    assert nccl.signature_id == "nccl" and nccl.line_no == 1
