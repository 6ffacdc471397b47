"""The journal signatures measured on real failure output (data/journal_corpus, quoted from public issues):
every failure kind is named, no benign line is fatal, and the figures in docs/troubleshooting.md are current."""

from __future__ import annotations

import pytest

from specops.engine.signatures.corpus import CORPUS, DOC, load, measure, per_kind, refresh, render, render_sources

EXCERPTS = load()
OUTCOMES = measure(EXCERPTS)
REQUIRED_KINDS = {
    "torchcodec", "abi", "driver", "cuda-libs", "gpu-oom", "rank-killed", "nccl", "port", "speculative", "warmup",
    "jit", "model-files",
}  # fmt: skip
RECALL_THRESHOLD = 1.0  # every excerpt of every kind is named today; lower it only with the misses listed here


def test_corpus_is_big_and_varied_enough() -> None:
    failures = [e for e in EXCERPTS if e.kind != "benign"]
    assert len(failures) >= 40
    assert {e.kind for e in failures} >= REQUIRED_KINDS
    assert len({e.kind for e in failures}) >= 10
    assert len([e for e in EXCERPTS if e.kind == "benign"]) >= 8
    assert all(e.source and e.lines for e in EXCERPTS)


@pytest.mark.parametrize("kind", sorted({e.kind for e in EXCERPTS}))
def test_every_kind_is_named(kind: str) -> None:
    _, recall, precision, _ = per_kind(OUTCOMES)[kind]
    misses = [
        (o.excerpt.name, o.cause.signature_id if o.cause else None)
        for o in OUTCOMES
        if o.excerpt.kind == kind and o.kind != kind
    ]
    assert recall >= RECALL_THRESHOLD, misses
    assert precision == 1.0


def test_primary_cause_has_the_expected_signature_and_fatality() -> None:
    wrong = [
        (o.excerpt.name, o.cause.signature_id if o.cause else None, o.cause.fatal if o.cause else None)
        for o in OUTCOMES
        if not o.right
    ]
    assert wrong == []


def test_no_benign_line_is_ever_fatal() -> None:
    assert [(o.excerpt.name, [e.line for e in o.benign_called_fatal]) for o in OUTCOMES if o.benign_called_fatal] == []
    benign = [o for o in OUTCOMES if o.excerpt.kind == "benign"]
    assert all(o.cause is not None and not o.cause.fatal for o in benign)


def test_docs_figures_and_corpus_credits_are_current() -> None:
    doc = DOC.read_text(encoding="utf-8")
    assert "| speculative |" in doc and "Benign lines called fatal: **0**" in doc
    assert refresh(doc, render(OUTCOMES)) == doc, "run `python -m specops.engine.signatures.corpus`"
    readme = (CORPUS / "README.md").read_text(encoding="utf-8")
    assert refresh(readme, render_sources(EXCERPTS)) == readme, "run `python -m specops.engine.signatures.corpus`"
    assert all(f"`{e.name}.toml`" in readme for e in EXCERPTS)
