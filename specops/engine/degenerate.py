"""Is an answer language, or a decoder stuck in a loop? Judged on every smoke answer, greedy and sampled
(a loop in the greedy, ignore_eos answer only warns: specops.engine.smoke).

Why more than "one character repeated": a speculative build that verifies greedily while the request samples
(temperature > 0) does not print `!!!!`; it writes a sentence or two, then the same phrase again and again
(`drafts a block of drafts a block of ...`). No single word dominates such an answer, so the check looks for a
short stretch of words (or characters) repeated back to back, many times, anywhere in the text.

The thresholds are set so that prose passes: a word said twice ("very, very"), a phrase repeated three times
for effect, a numbered list or a line of dashes stay well below them (docs/smoke.md, "Degenerate output").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

DOMINANT_TOKEN_SHARE = 0.5  # one token making up more than half of the output is a loop, not language
MIN_TOKENS_FOR_SHARE = 4
WORD_MAX_PERIOD = 24  # a looping phrase of up to 24 words
WORD_MIN_REPEATS = 4  # said 4 times back to back
WORD_MIN_SPAN = 12  # and covering at least 12 words ("no, no, no, no" is speech, 12 "no"s are not)
CHAR_MAX_PERIOD = 8  # `!!!!`, `!?!?`, `ha ha `, CJK loops without spaces
CHAR_MIN_REPEATS = 8
CHAR_MIN_SPAN = 32
EXCERPT_BEFORE, EXCERPT_AFTER = 24, 56
_WORD = re.compile(r"\S+")
_EDGE_PUNCTUATION = re.compile(r"^\W+|\W+$")


@dataclass(frozen=True)
class Loop:
    """`repeats` back-to-back copies of `unit` (words joined by spaces, or characters), from `start` (a character
    offset in the text) over `length` characters."""

    kind: str
    unit: str
    repeats: int
    start: int
    length: int


def degenerate_reason(text: str, output_ids: object = None, *, loops: bool = True) -> str:
    """Why an output is not language ("" when it looks fine): empty, one character repeated (`!!!!!!!!`), one
    token or word making up most of it (`the the the the`), or (with `loops`) a repetition loop of words or
    characters, named with where it starts and an excerpt (loop_reason)."""
    stripped = text.strip()
    if not stripped:
        return "the output is empty"
    if len(set(stripped)) == 1 and len(stripped) > 1:
        return f"one character repeated: {stripped[0]!r} x{len(stripped)}"
    ids = [item for item in output_ids if isinstance(item, int)] if isinstance(output_ids, list) else []
    for units, what in ((ids, "token id"), (stripped.split(), "word")):
        if len(units) >= MIN_TOKENS_FOR_SHARE:
            unit, count = Counter(units).most_common(1)[0]
            if count / len(units) > DOMINANT_TOKEN_SHARE:
                return f"one {what} is {count} of {len(units)}: {unit!r}"
    return loop_reason(text) if loops else ""


def loop_reason(text: str) -> str:
    """The repetition loop in the text as one line ("" when there is none)."""
    loop = find_loop(text)
    if loop is None:
        return ""
    return (
        f"repetition loop: {loop.unit!r} x{loop.repeats} ({loop.kind}s, from character {loop.start}): "
        f"{excerpt(text, loop.start)}"
    )


def find_loop(text: str) -> Loop | None:
    """The longest repetition loop of words (they name the phrase), else the first loop of characters inside a
    stretch without spaces (`!!!!`, a CJK phrase): a spaced loop of characters is a loop of words."""
    matches = list(_WORD.finditer(text))
    words = [_normal(match.group()) for match in matches]
    found = _periodic_run(words, WORD_MAX_PERIOD, WORD_MIN_REPEATS, WORD_MIN_SPAN)
    if found is not None:
        first, period, span = found
        last = matches[first + span - 1]
        phrase = " ".join(match.group() for match in matches[first : first + period])
        start = matches[first].start()
        return Loop("word", phrase, span // period, start, last.end() - start)
    for match in matches:  # within a run of text without spaces: a spaced loop is the words' to find
        chunk = match.group()
        if len(chunk) < CHAR_MIN_SPAN:
            continue
        found = _periodic_run(chunk, CHAR_MAX_PERIOD, CHAR_MIN_REPEATS, CHAR_MIN_SPAN)
        if found is not None:
            first, period, span = found
            return Loop("character", chunk[first : first + period], span // period, match.start() + first, span)
    return None


def excerpt(text: str, at: int) -> str:
    """The text around `at` on one line, with … where it was cut."""
    begin, end = max(0, at - EXCERPT_BEFORE), min(len(text), at + EXCERPT_AFTER)
    body = " ".join(text[begin:end].split())
    return ("…" if begin > 0 else "") + repr(body) + ("…" if end < len(text) else "")


def _normal(word: str) -> str:
    """Case and edge punctuation do not make a loop's copies different (`Again, again, again.`)."""
    return _EDGE_PUNCTUATION.sub("", word.lower()) or word


def _periodic_run(
    units: Sequence[str], max_period: int, min_repeats: int, min_span: int
) -> tuple[int, int, int] | None:
    """(first index, period, span) of the longest stretch where units[i] == units[i - period], for the smallest
    period reaching it; None when no stretch has `min_repeats` copies over `min_span` units."""
    best: tuple[int, int, int] | None = None
    for period in range(1, max_period + 1):
        run = 0
        for index in range(period, len(units)):
            run = run + 1 if units[index] == units[index - period] else 0
            span = run + period
            if run and span // period >= min_repeats and span >= min_span and (best is None or span > best[2]):
                best = (index - span + 1, period, span)
    return best
