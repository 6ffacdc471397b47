"""The degenerate-output detector on answers like the ones real servers give: loops must be named with where
they start and an excerpt; prose that repeats a word or a phrase the way people write must pass."""

from __future__ import annotations

import pytest

from specops.engine.degenerate import degenerate_reason, find_loop

GREEDY_LOOP = (
    "The sky appears blue because of Rayleigh scattering. " + "The sky is blue because of Rayleigh scattering. " * 6
)
# what a build that verifies greedily at temperature > 0 writes: a start that reads fine, then a short phrase
SAMPLED_LOOP = (
    "Once upon a time, on a rocky island, an old lighthouse keeper found a bottle on the shore and "
    + "opened it slowly and " * 14
)
PROSE = [
    pytest.param(
        "The sky is blue because of Rayleigh scattering: the shorter the wavelength of the light, the more it is "
        "scattered by the molecules of the air. Blue light has a shorter wavelength than red light, so the blue "
        "light is scattered all over the sky, and the sky looks blue. At sunset the light travels through more "
        "of the air, the blue is scattered away, and the sky turns red and orange.",
        id="rayleigh",
    ),
    pytest.param(
        "It was a very, very long night. No, no, no, she said, not again. The keeper climbed the stairs, one by "
        "one, step by step, and lit the lamp as he had done every night for forty years.",
        id="emphasis",
    ),
    pytest.param(
        "1. Practice every day. 2. Speak with native speakers. 3. Read books you enjoy. 4. Watch films with "
        "subtitles. 5. Keep a notebook of new words and review it every week.",
        id="numbered-list",
    ),
    pytest.param(
        "| step | what happens |\n|---|---|\n| 1 | water evaporates |\n| 2 | vapour condenses into clouds |\n"
        "| 3 | rain falls on the fields |\n\nRow, row, row your boat, gently down the stream.",
        id="table-and-refrain",
    ),
    pytest.param(
        "Why is the sky blue? Why is the sea blue? Why is the sky blue? Because the air scatters blue light "
        "more than red light, and the sea reflects the sky.",
        id="question-twice",
    ),
    pytest.param(
        "天空之所以是蓝色的，是因为大气中的分子对短波长的蓝光散射得更多。日落时，光线穿过更厚的大气层，所以天空变成红色和橙色。",
        id="chinese-prose",
    ),
]


@pytest.mark.parametrize("text", PROSE)
def test_prose_that_repeats_words_naturally_passes(text: str) -> None:
    assert degenerate_reason(text) == ""


def test_a_sentence_looping_after_a_good_start_is_named_with_its_excerpt() -> None:
    loop = find_loop(GREEDY_LOOP)
    assert loop is not None and (loop.kind, loop.repeats) == ("word", 6)
    # the loop starts where the text becomes periodic: the first sentence already ends like the looping one
    assert loop.unit == "blue because of Rayleigh scattering. The sky is"
    assert GREEDY_LOOP[loop.start :].startswith("blue because of Rayleigh scattering. The sky is blue")
    assert degenerate_reason(GREEDY_LOOP) == (
        f"repetition loop: {loop.unit!r} x6 (words, from character {loop.start}): "
        "'The sky appears blue because of Rayleigh scattering. The sky is blue bec'…"
    )


def test_a_short_phrase_looping_at_temperature_above_zero_is_found_where_it_starts() -> None:
    loop = find_loop(SAMPLED_LOOP)
    assert loop is not None
    assert (loop.kind, loop.unit, loop.repeats) == ("word", "and opened it slowly", 14)
    assert SAMPLED_LOOP[loop.start :].startswith("and opened it slowly and opened")
    reason = degenerate_reason(SAMPLED_LOOP)
    assert f"x14 (words, from character {loop.start}): …'" in reason
    assert "shore and opened it slowly and opened it" in reason


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("!!!!!!!!", "one character repeated: '!' x8", id="bangs"),
        pytest.param("   \n\n ", "the output is empty", id="whitespace"),
        pytest.param("", "the output is empty", id="empty"),
        pytest.param("the the the the the the", "one word is 6 of 6: 'the'", id="one-word"),
        pytest.param(
            "Sure! The keeper said" + "!" * 40,
            "repetition loop: '!' x40 (characters, from character 21): 'Sure! The keeper said!!!!!!!!!!",
            id="bangs-after-text",
        ),
        pytest.param(
            "答案是" + "天空是蓝色的因为" * 8,
            "repetition loop: '天空是蓝色的因为' x8 (characters, from character 3)",
            id="chinese-loop",
        ),
        pytest.param(
            "The keeper walked down to the shore in the evening light and watched the boats come home, and "
            + "and " * 15
            + "then he stopped.",
            "repetition loop: 'and' x16 (words, from character 90)",
            id="one-word-loop-in-a-sentence",
        ),
    ],
)
def test_degenerate_answers_are_named(text: str, expected: str) -> None:
    assert degenerate_reason(text).startswith(expected)


def test_token_ids_dominated_by_one_id_fail_even_when_the_text_reads_fine() -> None:
    assert degenerate_reason("a b c d", [0, 0, 0, 7]) == "one token id is 3 of 4: 0"


def test_a_loop_just_below_the_thresholds_passes() -> None:
    three_times = "The end is near. " * 3 + "Then the lamp went out."
    assert degenerate_reason(three_times) == ""
    eleven_nos = "No " * 11 + "she said, and the keeper laughed, and the night went on without a word."
    assert degenerate_reason(eleven_nos) == ""
