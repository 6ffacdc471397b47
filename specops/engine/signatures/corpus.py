"""Measure the journal signatures on real failure output and keep the figures in docs/troubleshooting.md.

Why: "knows SGLang's real failures" is a claim; the corpus (tests/unit/engine/data/journal_corpus/, one TOML
file per excerpt quoted from a public issue, with the kind, signature and fatality a person reads in it) makes it
a measurement. Per kind: recall (excerpts of that kind whose primary explanation names it) and precision (of the
excerpts explained as that kind, how many are). Plus the one rule that must never break: no benign line fatal.

`python -m specops.engine.signatures.corpus` rewrites the generated block in docs/troubleshooting.md; a unit test
fails when the block is stale.
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from specops.engine.signatures import SIGNATURES, TORCHCODEC
from specops.engine.signatures.explain import Explained, explain_lines, primary
from specops.engine.signatures.model import PROBLEM_KINDS

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "unit" / "engine" / "data" / "journal_corpus"
DOC = ROOT / "docs" / "troubleshooting.md"
BEGIN = "<!-- BEGIN GENERATED: journal-corpus -->"
END = "<!-- END GENERATED: journal-corpus -->"


@dataclass(frozen=True)
class Excerpt:
    """One quoted log excerpt and what a person reads in it."""

    name: str
    source: str
    what: str
    kind: str
    signature: str
    fatal: bool
    lines: tuple[str, ...]
    held_out: bool = False  # added after the signatures were written, and not used to write them


@dataclass(frozen=True)
class Outcome:
    """What the signatures made of one excerpt."""

    excerpt: Excerpt
    explained: tuple[Explained, ...]
    cause: Explained | None

    @property
    def kind(self) -> str:
        return self.cause.kind if self.cause else "none"

    @property
    def right(self) -> bool:
        cause = self.cause
        return cause is not None and (cause.signature_id, cause.kind, cause.fatal) == (
            self.excerpt.signature,
            self.excerpt.kind,
            self.excerpt.fatal,
        )

    @property
    def benign_called_fatal(self) -> list[Explained]:
        benign = self.excerpt.kind == "benign"
        return [e for e in self.explained if e.fatal and (benign or e.kind == "benign")]


def load(corpus: Path = CORPUS) -> list[Excerpt]:
    excerpts = []
    for path in sorted(corpus.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        lines = tuple(data["lines"].splitlines())
        excerpts.append(
            Excerpt(
                path.stem,
                data["source"],
                data["what"],
                data["kind"],
                data["signature"],
                bool(data["fatal"]),
                lines,
                bool(data.get("held_out", False)),
            )
        )
    return excerpts


def measure(excerpts: Sequence[Excerpt]) -> list[Outcome]:
    outcomes = []
    for excerpt in excerpts:
        explained = tuple(explain_lines(excerpt.lines))
        outcomes.append(Outcome(excerpt, explained, primary(explained)))
    return outcomes


def per_kind(outcomes: Sequence[Outcome]) -> dict[str, tuple[int, float, float, int]]:
    """kind -> (excerpts, recall, precision, fatality right)."""
    table = {}
    for kind in sorted({o.excerpt.kind for o in outcomes}):
        expected = [o for o in outcomes if o.excerpt.kind == kind]
        predicted = [o for o in outcomes if o.kind == kind]
        hits = sum(1 for o in expected if o.kind == kind)
        fatality = sum(1 for o in expected if o.cause is not None and o.cause.fatal == o.excerpt.fatal)
        precision = sum(1 for o in predicted if o.excerpt.kind == kind) / len(predicted) if predicted else 0.0
        table[kind] = (len(expected), hits / len(expected), precision, fatality)
    return table


def render(outcomes: Sequence[Outcome]) -> str:
    """The generated block: the corpus figures, then every signature with its kind, severity and cause."""
    issues = {o.excerpt.source for o in outcomes if o.excerpt.source.startswith("https://")}
    own = sum(1 for o in outcomes if not o.excerpt.source.startswith("https://"))  # several excerpts may share an issue
    failures = [o for o in outcomes if o.excerpt.kind != "benign"]
    benign_fatal = sum(len(o.benign_called_fatal) for o in outcomes)
    rows = [
        "## Measured on real logs",
        "",
        f"{len(outcomes)} excerpts of real start-up and runtime output ({len(failures)} failures, "
        f"{len(outcomes) - len(failures)} benign), {own} of them from this project's own "
        f"runs and the others quoted from {len(issues)} public SGLang, vLLM, PyTorch and library issues and "
        "pull requests. For each, the *primary* explanation (the first fatal line, else the first error) is "
        "compared with what a person reads in it. The signatures were written with these excerpts in view, so "
        "the figures show coverage, not accuracy on unseen logs. Regenerate with "
        "`python -m specops.engine.signatures.corpus`.",
        "",
        "| kind | excerpts | recall | precision | fatality right |",
        "|---|---|---|---|---|",
    ]
    for kind, (count, recall, precision, fatality) in per_kind(outcomes).items():
        rows.append(f"| {kind} | {count} | {recall:.2f} | {precision:.2f} | {fatality}/{count} |")
    right = sum(1 for o in outcomes if o.right)
    held = [o for o in outcomes if o.excerpt.held_out]
    rows += [
        "",
        f"Exact signature and fatality: {right}/{len(outcomes)}. Benign lines called fatal: **{benign_fatal}**. "
        f"Held out (added after the signatures were written, not used to write them): "
        f"{sum(1 for o in held if o.right)}/{len(held)} right.",
        "",
        "### Every signature",
        "",
        "| id | kind | severity | cause |",
        "|---|---|---|---|",
    ]
    for signature in (TORCHCODEC, *SIGNATURES):
        if signature.kind in (*PROBLEM_KINDS, "benign"):
            cause = signature.cause.replace("|", "\\|")
            rows.append(f"| `{signature.id}` | {signature.family} | {signature.kind} | {cause} |")
    return "\n".join(rows)


def render_sources(excerpts: Sequence[Excerpt]) -> str:
    """The corpus README's table: every excerpt with its attribution, so no quote goes uncredited."""
    rows = ["| file | kind | signature | fatal | source | what |", "|---|---|---|---|---|---|"]
    for e in excerpts:
        source = e.source
        if source.startswith("https://github.com/"):
            source = f"[{source.removeprefix('https://github.com/')}]({source})"
        name = f"`{e.name}.toml`" + (" (held out)" if e.held_out else "")
        rows.append(f"| {name} | {e.kind} | `{e.signature}` | {'yes' if e.fatal else 'no'} | {source} | {e.what} |")
    return "\n".join(rows)


def refresh(text: str, block: str) -> str:
    """The document with the generated block replaced (appended at the end the first time)."""
    generated = f"{BEGIN}\n{block}\n{END}"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        return head + generated + rest.split(END, 1)[1]
    return text.rstrip("\n") + "\n\n" + generated + "\n"


def main() -> int:
    excerpts = load()
    outcomes = measure(excerpts)
    for path, block in ((DOC, render(outcomes)), (CORPUS / "README.md", render_sources(excerpts))):
        text = path.read_text(encoding="utf-8")
        updated = refresh(text, block)
        if updated != text:
            path.write_text(updated, encoding="utf-8")
    for outcome in outcomes:
        if not outcome.right:
            cause = outcome.cause
            got = f"{cause.signature_id}/{cause.kind}/fatal={cause.fatal}" if cause else "nothing"
            print(f"miss: {outcome.excerpt.name}: got {got}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
