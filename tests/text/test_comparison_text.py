"""The comparison text (``simstore.text.normalise``) and what differs between two texts
(``simstore.text.lookalike``), without a database.

Expected strings are written by hand from the rules in each module's docstring (NFKC, casefold,
the listed symbol contexts, the listed kinds of identity). Jaccard similarities are recomputed here
with the textbook definition over a plain set comprehension of character 3-grams, not with
``simstore.text.similarity``.
"""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from simstore.text import minhash
from simstore.text._algorithms import default_normalise
from simstore.text.fingerprint import fingerprint
from simstore.text.lookalike import (
    Context,
    context,
    identity_swaps,
    mostly_cjk,
    names_of,
    sketch,
    sketch_swaps,
    tokens,
)
from simstore.text.normalise import (
    _FILLER,
    _TOKEN,
    compare_normalise,
    compare_normalise_many,
    is_blank,
)
from simstore.text.similarity import jaccard

PLUS = "GNU Objective-C++ compiler"
PLAIN = "GNU Objective-C compiler"


def _grams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(len(text) - 2)}


def _jaccard(a: str, b: str) -> float:
    left, right = _grams(a), _grams(b)
    return len(left & right) / len(left | right)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (PLUS, "gnu objective-c++ compiler"),
        (PLAIN, "gnu objective-c compiler"),
        ("C# and F# on .NET, ASP.NET", "c# and f# on .net asp.net"),
        ("use --verbose or -v.", "use --verbose or -v"),
        ("version 1.2.3, e.g. this.", "version 1.2.3 e.g this"),
        ("see /usr/bin and lib_foo", "see usr/bin and lib_foo"),  # a leading / is not kept
        ("a - b, x- (y)", "a b x y"),  # a dash between spaces or after a word is not a symbol
        ("DVD+R and DVD+ drives", "dvd+r and dvd drives"),  # one + after a word is not C++
        ("中文，测试．中文 v1.2版", "中文 测试 中文 v1.2版"),  # no symbol kept between CJK
    ],
)
def test_symbols_in_or_after_a_word_are_kept(text: str, expected: str) -> None:
    assert compare_normalise(text) == expected


def test_objective_c_plus_plus_is_not_objective_c_on_either_measure() -> None:
    old_a, old_b = default_normalise(PLUS), default_normalise(PLAIN)
    assert old_a == old_b  # the fingerprint preset's normalisation drops the ++ (unchanged)
    a, b = compare_normalise(PLUS), compare_normalise(PLAIN)
    # by hand: "gnu objective-c++ compiler" has 24 distinct 3-grams, "gnu objective-c compiler"
    # 22; they share the 20 of "gnu objective-c" and " compiler" and differ by "c++", "++ ",
    # "+ c", "-c+" against "-c ", "c c": 20 / 26
    assert _jaccard(a, b) == pytest.approx(20 / 26)
    assert jaccard(a, b, normalise=False) == pytest.approx(20 / 26)
    signed = minhash.signatures([a, b])
    assert not np.array_equal(signed[0], signed[1])
    equal = int(np.count_nonzero(signed[0] == signed[1]))
    assert minhash.jaccard(equal) < 1.0


def test_the_fingerprint_preset_is_unchanged() -> None:
    # the simstore-v1 preset normalises as before: the two texts have one fingerprint
    assert fingerprint(PLUS) == fingerprint(PLAIN)


@pytest.mark.parametrize("text", ["\u1160\u1160", "\uffa0\uffa0", "\u3164", "\u115f \u1160\n"])
def test_hangul_fillers_are_blank(text: str) -> None:
    assert is_blank(text)
    assert compare_normalise(text) == ""


@pytest.mark.parametrize("text", ["a\u1160", "\u1160 ?", "  x ", "👍"])
def test_a_text_with_anything_else_is_not_blank(text: str) -> None:
    assert not is_blank(text)


def test_a_filler_between_words_is_a_space() -> None:
    assert compare_normalise("open\u3164source") == "open source"


# characters where one text's end meets the next one's start in a batch: combining marks,
# fullwidth and compatibility forms, fillers, the prefix symbols, line breaks, NUL
EDGES = st.text(
    st.one_of(
        st.sampled_from("\u0301\u0308\u3099\uff0d\uff0e\uff03\u2026\u1160\u3164-.+#\n\x85\x00 "),
        st.characters(codec="utf-8"),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(EDGES, max_size=10))
@example([])
@example(["a\x00b", "c"])  # a text holding NUL: the batch cannot be split back, each alone
@example(["x", "\u0301--v", "c+", "+"])
def test_a_batch_is_normalised_as_each_text_alone(texts: list[str]) -> None:
    assert compare_normalise_many(texts) == [compare_normalise(text) for text in texts]


def _folded_alone(text: str) -> str:
    """A text's comparison text by the definition: ``unicodedata``'s NFKC, casefold, fillers
    made spaces, the module's tokens (what the batch may change is the folding, not the tokens)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_TOKEN.findall(_FILLER.sub(" ", folded)))


@pytest.mark.slow  # ~10 s: a million texts
def test_every_character_at_a_texts_edges_is_normalised_as_in_the_text_alone() -> None:
    differ = []
    for first in range(0, 0x110000, 4096):
        chars = [chr(p) for p in range(first, first + 4096) if not 0xD800 <= p <= 0xDFFF]
        # each character starts a text, then a combining mark and a prefix symbol follow it, and
        # it ends the text: the next code point's text starts across the boundary
        texts = [f"{c}\u0308-{c}" for c in chars]
        batch = compare_normalise_many(texts)
        differ += [t for t, got in zip(texts, batch, strict=True) if got != _folded_alone(t)]
    assert differ == []


EN = (
    "We met at the old mill by the river and we had tea for an hour or so, then walked back "
    "along the towpath to the station before the last train of the evening left."
)


def _swaps(old: str, new: str) -> list[str]:
    found = identity_swaps(compare_normalise(old), compare_normalise(new), context(new))
    return [swap.why for swap in found]


@pytest.mark.parametrize(
    "edited",
    [
        EN.replace("walked", "wakled").replace("station", "statoin"),  # typos
        EN.replace("mill", "barn").replace("towpath", "road").replace("evening", "night"),
        EN.replace("then walked", "then slowly walked"),  # an insertion
        EN.replace(" to the station", ""),  # a deletion
        EN.replace("tea for an hour", "an hour for tea"),  # words moved
    ],
    ids=["typos", "scattered-words", "insertion", "deletion", "moved"],
)
def test_edits_are_no_identity_swaps(edited: str) -> None:
    assert _swaps(EN, edited) == []


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ("Release 1.2.3 fixes the parser.", "Release 1.2.4 fixes the parser.", "number"),
        (PLUS, PLAIN, "symbol"),
        ("Learn C# in a week with these notes.", "Learn C in a week with these notes.", "symbol"),
        ("install aspell-da for the checker", "install hunspell-de for the checker", "symbol"),
        ("pass --verbose to see more", "pass --quiet to see more", "symbol"),
        (
            "we met with Alice at the old mill today",
            "we met with Bob at the old mill today",
            "name",
        ),
        (
            "the foo tool reads files; run foo daily and foo prints a summary",
            "the bar tool reads files; run bar daily and bar prints a summary",
            "recurring",
        ),
        (
            "i bought hiking boots from them last week",
            "i bought robot vacuum from them last week",
            "phrase",
        ),
    ],
)
def test_identity_swaps_are_named(old: str, new: str, why: str) -> None:
    assert why in _swaps(old, new)


def test_names_need_a_text_in_lowercase() -> None:
    assert context("we met with Alice at the mill").names == frozenset({"alice"})
    assert context("We Met With Alice At The Mill").names == frozenset()  # title case
    assert context("Hello. The mill").names == frozenset()  # capitals that start a sentence
    assert "libreoffice" in context("get LibreOffice now").names  # capitals inside a word


def test_chinese_words_replaced_are_a_fill() -> None:
    # with no capitals, nothing tells a name put in a template from a word edited: precision
    # wins (MAX_CJK_WORDS = 0), one character for another stays a typo
    old = "王国栋的故事平凡朴实，感人至深。他对自己是如此吝啬，对他人又是如此慷慨。"
    one = old.replace("故事", "经历")
    two = one.replace("吝啬", "严格")
    assert _swaps(old, one) == ["words"]
    found = identity_swaps(compare_normalise(old), compare_normalise(two))
    assert [(swap.old, swap.new, swap.why) for swap in found] == [
        ("故事", "经历", "words"),
        ("吝啬", "严格", "words"),
    ]
    assert _swaps(old, old.replace("朴", "扑")) == []  # one character for another: a typo


def test_a_number_swap_is_found_in_two_sketches() -> None:
    body = " ".join(f"line {n} of the manual" for n in range(40))
    old, new = body + " version 2.3", body + " version 2.4"
    # forty plain numbers and one version: the version is in its own sample, always kept
    [swap] = sketch_swaps(sketch(compare_normalise(old)), sketch(compare_normalise(new)))
    assert (swap.old, swap.new, swap.why) == ("2.3", "2.4", "number")
    small_old, small_new = "see version 2.3 of 2024", "see version 2.4 of 2024"
    [swap] = sketch_swaps(sketch(small_old), sketch(small_new))
    assert (swap.old, swap.new, swap.why) == ("2.3", "2.4", "number")
    # a number only added (a dated header): one side only, no swap
    assert sketch_swaps(sketch(small_old), sketch("posted 2025-01-02 " + small_old)) == []


def test_a_sketch_compares_only_the_hash_range_both_cover() -> None:
    many = " ".join(str(n) for n in range(100, 200))
    full = sketch(many)
    # no version, eight plain numbers, no name, no number twice: four parts, three splits
    assert full[0] == "/" and len(full) == 11 and full[-2:] == ("/", "/")
    # a text with one more number: its sketch differs at most by numbers past the other's range
    assert sketch_swaps(full, sketch(many + " 7")) == []


def test_a_sketch_keeps_names_and_dates_apart() -> None:
    made = sketch("released 2024/01/02 and 2.3", names=["alice", "bob"])
    assert sorted(made[:2]) == ["2.3", "2024/01/02"]
    assert made[2:] == ("/", "/", "alice", "bob", "/") or made[2:] == (
        "/",
        "/",
        "bob",
        "alice",
        "/",
    )
    assert names_of(made) == frozenset({"alice", "bob"})
    assert names_of(sketch("1 2 3")) == frozenset()
    old, new = sketch("on 2024/01/02"), sketch("on 2024/01/09")
    [swap] = sketch_swaps(old, new)
    assert (swap.old, swap.new) == ("2024/01/02", "2024/01/09")


def test_context_is_empty_for_no_capitals() -> None:
    assert context("all in lower case") == Context(frozenset())


def test_a_frequent_identifier_swapped_everywhere_but_not_one_that_ties_off_the_list() -> None:
    # hand-made sketches: no numbers, no names, then the four most frequent identifiers
    def tops(*entries: str) -> tuple[str, ...]:
        return ("/", "/", "/", *entries)

    old = tops("lspci*5", "pci-ids*3", "-v*2", "--help*2")
    # the command put for another at its five places: a man page made into another's
    [swap] = sketch_swaps(old, tops("lsusb*5", "pci-ids*3", "-v*2", "--help*2"))
    assert (swap.old, swap.new, swap.why) == ("lspci", "lsusb", "recurring")
    # a re-wrap broke '--help' once: '-n', twice in both texts but off the old's full list
    # (tied with its last place), takes the last place; neither tells a swap
    assert sketch_swaps(old, tops("lspci*5", "pci-ids*3", "-v*2", "-n*2")) == []
    # not a full list: a token off it occurs once at most, so one listed twice came in
    [swap] = sketch_swaps(tops("lspci*5", "-v*2"), tops("lspci*5", "-n*2"))
    assert (swap.old, swap.new) == ("-v", "-n")


def test_a_symbol_dropped_where_the_bare_word_stands_elsewhere_too_is_identity() -> None:
    # 'C' is found elsewhere in the old text, so the place is no plain replacement of a word
    # that came from nowhere: the symbol itself tells the two libraries apart
    old = "ICU is a C++ and C library that provides robust Unicode support."
    assert _swaps(old, old.replace("C++", "C")) == ["symbol"]
    assert _swaps(old, old.replace("C++", "C#")) == ["symbol"]
    # both forms in both texts, one place changed: layout (a table's border glued to a cell)
    both = "use C++ here and C++ there and plain C too"
    assert _swaps(both, both.replace("C++", "C", 1)) == []


def _is_cjk_character(token: str) -> bool:
    # the ranges the module documents: kana (U+3040-30FF), CJK unified ideographs with extension
    # A (U+3400-9FFF) and the compatibility ideographs (U+F900-FAFF), written out here
    return len(token) == 1 and any(
        low <= ord(token) <= high
        for low, high in ((0x3040, 0x30FF), (0x3400, 0x9FFF), (0xF900, 0xFAFF))
    )


@given(
    st.text(
        alphabet=st.sampled_from("ab1- \u3042\u30a2\u4e2d\u6587\uf900\u9fff\u3400"), max_size=40
    )
)
@example("中 abc")  # one CJK token of two: half is not most
@example("中文abc")  # two of three: a CJK character is a token even inside a run
def test_mostly_cjk_counts_tokens_that_are_one_cjk_character(text: str) -> None:
    found = tokens(text)
    expected = 2 * sum(1 for t in found if _is_cjk_character(t)) > len(found)
    assert mostly_cjk(found) is expected


_PIECES = ["the", "new", "release", "of", "gcc", "c++", "1.2", "1.3", "2024", "Alice", "Bob"]
_PIECES += ["--verbose", "-v", "etc/ssh", "中", "文", "版", "本", "三", "四", "\n"]


@given(
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=14),
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=14),
)
@example(["version", "1.2", "of", "gcc"], ["version", "1.3", "of", "gcc"])  # a number: at once
@example(["gcc", "and", "c++"], ["clang", "and", "c"])  # found while aligning
@example(["the", "中", "文", "release"], ["the", "版", "release"])  # CJK words: judged at the end
@settings(deadline=None)  # the first CJK words load jieba's dictionary
def test_the_first_swap_alone_is_the_first_of_all_swaps(old: list[str], new: list[str]) -> None:
    # what the policy asks when it only needs to know whether two texts are told apart: the
    # same answer, the first swap of the full list, or none when the full list is empty
    old_text, new_text = " ".join(old), " ".join(new)
    every = identity_swaps(old_text, new_text, context(old_text), cjk_replaced=0)
    assert (
        identity_swaps(old_text, new_text, context(old_text), cjk_replaced=0, first=True)
        == (every[:1])
    )
