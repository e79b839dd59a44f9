"""Exact similarity measures used to verify SimHash candidates: Jaccard, cosine, edit ratio."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from simstore.errors import InvalidInput
from simstore.text.similarity import (
    char_ngrams,
    cosine,
    cosine_vectors,
    edit_ratio,
    jaccard,
    jaccard_of_sets,
)

Measure = Callable[[str, str], float]
MEASURES: dict[str, Measure] = {
    "jaccard": jaccard,
    "cosine-word": cosine,
    "cosine-char": lambda a, b: cosine(a, b, unit="char"),
    "edit-ratio": edit_ratio,
}
TEXTS = st.text(
    st.one_of(
        st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
        st.characters(min_codepoint=0x20, max_codepoint=0x7E),
        st.sampled_from("，。！？ \t"),
    ),
    max_size=40,
)


SEED_003_A = "这只皮靴号码大了。那只号码合适"
SEED_003_B = "这只皮靴号码不小，那只更合适"


def test_seed_003_worked_example() -> None:
    # Seed 003 segments its two sentences into (这只, 皮靴, 号码, 大了, 那只, 合适, 不, 小, 更),
    # writes the term frequencies (1,1,2,1,1,1,0,0,0) and (1,1,1,0,1,1,1,1,1) and says their cosine
    # is 0.81. The vectors give 6 / sqrt(9 * 8) = 0.7071 (1/sqrt 2): the article's arithmetic slips.
    sentence_a = (1, 1, 2, 1, 1, 1, 0, 0, 0)
    sentence_b = (1, 1, 1, 0, 1, 1, 1, 1, 1)
    assert cosine_vectors(sentence_a, sentence_b) == pytest.approx(2**-0.5, abs=1e-12)
    assert cosine_vectors(sentence_b, sentence_a) == cosine_vectors(sentence_a, sentence_b)
    assert cosine("这只 皮靴 号码 大了 那只 号码 合适", "这只 皮靴 号码 不 小 那只 更 合适") == (
        pytest.approx(2**-0.5, abs=1e-12)
    )
    # its "about 0.81" is what the two sentences score over character frequencies (0.808), the
    # measure of the seed's Java Similarity class once punctuation is dropped
    assert cosine(SEED_003_A, SEED_003_B, unit="char") == pytest.approx(0.81, abs=0.005)


@pytest.mark.parametrize("name", MEASURES)
@settings(max_examples=100, deadline=None)
@given(a=TEXTS, b=TEXTS)
def test_measures_are_symmetric_bounded_and_one_on_identity(name: str, a: str, b: str) -> None:
    measure = MEASURES[name]
    score = measure(a, b)
    assert 0.0 <= score <= 1.0 + 1e-12
    assert score == pytest.approx(measure(b, a))
    assert measure(a, a) == pytest.approx(1.0)


@pytest.mark.parametrize("name", MEASURES)
def test_disjoint_texts_score_zero(name: str) -> None:
    assert MEASURES[name]("今天天气很好", "abcdef xyz") == 0.0


@pytest.mark.parametrize("name", MEASURES)
def test_near_duplicates_score_between(name: str) -> None:
    score = MEASURES[name](
        "你妈妈喊你回家吃饭哦，回家罗回家罗", "你妈妈叫你回家吃饭啦，回家罗回家罗"
    )
    assert 0.0 < score < 1.0


def test_normalisation_ignores_case_width_and_punctuation() -> None:
    assert jaccard("Hello, World!", "hello world") == 1.0
    assert edit_ratio("ＡＢＣ，ｄｅｆ", "abc def") == 1.0
    assert cosine("The cat.", "the CAT") == pytest.approx(1.0)
    assert edit_ratio("Hello", "hello", normalise=False) < 1.0


def test_known_values() -> None:
    assert char_ngrams("abcd", 3) == {"abc", "bcd"}
    assert char_ngrams("ab", 3) == {"ab"}
    assert char_ngrams("", 3) == set()
    assert jaccard("abcd", "abce", n=3) == pytest.approx(1 / 3)  # {abc} of {abc, bcd, bce}
    assert edit_ratio("kitten", "sitting") == pytest.approx(1 - 3 / 7)
    assert cosine_vectors((1, 0), (0, 1)) == 0.0
    assert cosine_vectors((0, 0), (1, 1)) == 0.0  # a zero vector has no direction


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from("ab中文 "), max_size=1100) | TEXTS, st.integers(1, 7))
@example("ab中文 x" * 200, 3)  # 1,200 characters: past the prepared slices
@example("ab中文 x" * 200, 1)
def test_char_ngrams_equal_their_definition(text: str, n: int) -> None:
    # the definition, written out: char_ngrams takes prepared slices up to 1,024 grams
    expected = {text[i : i + n] for i in range(len(text) - n + 1)} if len(text) > n else {text}
    assert char_ngrams(text, n) == (expected if text else set())


@given(TEXTS, TEXTS)
def test_jaccard_of_sets_counts_the_union_it_does_not_build(a: str, b: str) -> None:
    left, right = char_ngrams(a, 3), char_ngrams(b, 3)
    expected = len(left & right) / len(left | right) if left or right else 1.0
    assert jaccard_of_sets(left, right) == expected
    assert jaccard(a, b, normalise=False) == expected


@pytest.mark.parametrize("name", MEASURES)
def test_two_empty_texts_are_identical(name: str) -> None:
    assert MEASURES[name]("", "") == 1.0
    assert MEASURES[name]("，。", "!!") == 1.0  # empty once punctuation is dropped


@pytest.mark.parametrize("name", MEASURES)
@pytest.mark.parametrize("bad", [b"bytes", None, 3])
def test_non_str_input_raises(name: str, bad: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        MEASURES[name]("text", bad)  # type: ignore[arg-type]
    assert isinstance(caught.value, TypeError)


def test_bad_parameters_raise() -> None:
    with pytest.raises(InvalidInput, match="length"):
        cosine_vectors((1, 2), (1, 2, 3))
    with pytest.raises(InvalidInput, match="unit"):
        cosine("a", "b", unit="sentence")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="at least 1"):
        jaccard("a", "b", n=0)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # counted by hand: the words of one text that stand where other words of the other stood
        ("new hiking boots from pelham", "new robot vacuum from pelham", (2, False)),
        (
            "council votes next sunday until march 21",
            "council votes coming sunday until march 21",
            (1, False),
        ),
        ("rated 3 5 by users", "rated 5 5 by users", (1, True)),  # 3 -> 5: a number replaced
        ("rt sam new hiking boots", "new hiking boots really", (0, False)),  # added, removed
        ("stopped working after a week", "stoped wokring after a week", (0, False)),  # typos
        ("锦鲤发布 修复了30个问题", "银杏发布 修复了30个问题", (1, False)),  # a CJK run: one word
        ("修复了30个问题", "修复了91个问题", (1, True)),
        # typos inside words are no substitution (issue 36), whole words are
        ("the cat sat on the mat", "teh cat sat on the mat", (0, False)),  # two letters swapped
        ("the cat sat on the mat", "the cat sat on thee mat", (0, False)),  # a letter doubled
        ("the cat sat on the mat", "th ecat sat on the mat", (0, False)),  # swapped over a space
        ("the cat sat on the mat", "the dog sat on the mat", (1, False)),  # a word for a word
        ("tom met ann at noon", "tim met ann at noon", (1, False)),  # a letter for a letter
        ("he said it was late", "she said it was late", (1, False)),  # short: a new word
        ("今天天气很好我们去公园散步", "今天天汽很好我门去公园散部", (0, False)),  # 3 characters
        ("三月五日在北京开会", "三月六日在北京开会", (1, False)),  # a numeral is a new date
        ("李雷明天来北京", "韩梅明天来北京", (1, False)),  # two characters: a name swapped
    ],
)
def test_replacements_count_substituted_words_not_edits(
    a: str, b: str, expected: tuple[int, bool]
) -> None:
    from simstore.text.similarity import replacements

    assert replacements(a, b) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # counted by hand: shared / the smaller set's size
        ({"ab", "bc", "cd"}, {"ab", "bc", "cd", "de", "ef"}, 1.0),
        ({"ab", "bc", "cd", "xy"}, {"ab", "bc", "cd", "de", "ef"}, 0.75),
        ({"ab"}, {"cd"}, 0.0),
        (set(), set(), 1.0),
        (set(), {"ab"}, 0.0),
    ],
)
def test_containment_of_sets_known_values(a: set[str], b: set[str], expected: float) -> None:
    from simstore.text.similarity import containment_of_sets

    assert containment_of_sets(a, b) == expected == containment_of_sets(b, a)


@given(
    st.lists(st.sampled_from(["ab", "cd", "ef", "1", "2", "中", "文"]), max_size=12),
    st.lists(st.sampled_from(["ab", "cd", "gh", "1", "3", "中", "字"]), max_size=12),
)
def test_excess_is_counter_subtraction(left: list[str], right: list[str]) -> None:
    from collections import Counter

    from simstore.text.similarity import _excess

    # the reference: collections.Counter's own multiset difference
    assert _excess(Counter(left), Counter(right)) == dict(Counter(left) - Counter(right))


@settings(max_examples=200)
@given(st.data())
def test_replacements_count_each_separate_word_substitution(data: st.DataObject) -> None:
    from simstore.text.similarity import replacements

    # distinct lower-case words of 3 letters (shorter than a typo's 4), a few replaced by new
    # ones at positions two apart: any alignment must see exactly those places, one word each
    words = data.draw(
        st.lists(st.text("abcdefgh", min_size=3, max_size=3), min_size=4, max_size=16, unique=True)
    )
    places = data.draw(st.sets(st.sampled_from(range(0, len(words), 2)), min_size=1))
    fresh = [f"zz{chr(ord('a') + k)}" for k in range(len(places))]
    edited = list(words)
    for place, word in zip(sorted(places), fresh, strict=True):
        edited[place] = word
    assert replacements(" ".join(words), " ".join(edited)) == (len(places), False)
