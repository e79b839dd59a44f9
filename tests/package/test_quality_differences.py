"""The quality benchmark's classes of ``benchmarks/quality/differences.py`` (words replaced,
identity swaps, version bumps, symbols, recurring footers), its scoring of texts identical after
normalisation, and the candidate-recall table's buckets, on small inputs: no Debian file, no store.
"""

from __future__ import annotations

import random
from datetime import timedelta

from tests.package.test_quality_benchmark import _load

build_dataset = _load("build_dataset")
differences = _load("differences")
evaluate_policy = _load("evaluate_policy")
candidate_recall = _load("candidate_recall")
Text = _load("sources").Text

TEXT = (
    "the quick brown fox jumps over the lazy dog and then the other dog runs away from the "
    "house while the small cat sleeps under the warm table near the open window"
)


def test_normalisation_keeps_symbols_and_drops_the_rest() -> None:
    # the DESIGN rule: case, width, white space and punctuation ignored; C++, C#, .NET kept
    assert differences.same_normalised("Hello,  World!", "hello world")
    assert differences.same_normalised("ＡＢＣ 1", "abc 1")  # NFKC width
    assert not differences.same_normalised("GNU Objective-C++ compiler", "GNU Objective-C compiler")
    assert not differences.same_normalised("written in C#", "written in C")
    assert not differences.same_normalised("the .NET runtime", "the NET runtime")
    assert not differences.same_normalised("ls --verbose", "ls -v")


def test_replace_words_replaces_ordinary_words_once_each_at_the_share_asked() -> None:
    vocab = ["table", "chair", "garden", "river", "cloud"]
    known = set(TEXT.split()) - {"the"}
    words = len(TEXT.split())  # 29
    for level, (low, high) in differences.REPLACE_RATES.items():
        edited = differences.replace_words(random.Random(level), TEXT, "en", level, vocab, known)
        assert edited is not None
        changed = [(a, b) for a, b in zip(TEXT.split(), edited.split(), strict=True) if a != b]
        assert max(1, round(words * low)) <= len(changed) <= max(1, round(words * high))
        assert all(a in known and b in vocab for a, b in changed)  # never "the", never a name
    again = differences.replace_words(random.Random(3), TEXT, "en", 3, vocab, known)
    assert again == differences.replace_words(random.Random(3), TEXT, "en", 3, vocab, known)


def test_an_identity_is_swapped_at_every_occurrence_and_only_as_a_whole_token() -> None:
    text = "aspell-da - Danish dictionary for aspell-da. ASPELL-DA(1); libaspell-da-dev stays"
    swapped = differences.swap_everywhere(text, "aspell-da", "idanish")
    assert swapped == "idanish - Danish dictionary for idanish. IDANISH(1); libaspell-da-dev stays"
    assert differences.swap_everywhere("Italian pages, 'italian'", "Italian", "Irish") == (
        "Irish pages, 'irish'"
    )
    assert differences.swap_everywhere("libfoo and libfoo-dev", "libfoo", "libbar") == (
        "libbar and libfoo-dev"
    )
    assert differences.swap_everywhere("德语版和德语词典", "德语", "日语") == "日语版和日语词典"


def test_versions_are_named_numbers_not_section_numbers() -> None:
    assert differences.versions_in("GNU coreutils 9.1 and Python 3.11.") == ["9.1", "3.11"]
    assert differences.versions_in("Linux kernel v2.6.32 is old; 版本 1.2") == ["v2.6.32", "1.2"]
    assert differences.versions_in("3.1.1.\xa0Title: see section 5.2 and Chapter 4.1") == []
    rng = random.Random(1)
    for version in ("1.2", "3.0.7", "v2.10"):
        bumped = differences.bump(rng, version)
        assert bumped != version and bumped.count(".") == version.count(".")


def test_symbol_pairs_drop_only_the_symbol() -> None:
    items = [("dpkg-status", "package:x", "en", "x - C++ library for C++ programs and tools")]
    pairs = differences.symbol_pairs(random.Random(0), items)
    assert len(pairs) == 1 and pairs[0].label == 0 and pairs[0].kind == "symbol"
    assert pairs[0].b == "x - C library for C programs and tools"
    assert pairs[0].a in (items[0][3], items[0][3].replace("C++", "C#"))


def test_a_recurring_footer_burst_pairs_unrelated_texts_and_resends() -> None:
    bases = [
        Text("fortunes", "f", n, "en", words)
        for n, words in enumerate(
            [
                "Cats sleep all day long.",
                "Rain falls on the old roof.",
                "Trains leave at noon.",
                "Bread rises in a warm kitchen.",
                "Snow covers the quiet hills.",
            ]
        )
    ]
    footer = "Opinions expressed here are my own."
    fitting = [(item, item.text + "\n\n" + footer) for item in bases]
    pairs = differences._burst_pairs("en", "en-short-test-0", fitting)
    negatives = [p for p in pairs if p.kind == "recurring_footer"]
    resent = [p for p in pairs if p.kind == "footer_added"]
    assert len(negatives) == 4 and all(p.label == 0 and p.a.endswith(footer) for p in negatives)
    assert len(resent) == 2 and all(p.label == 1 and p.b == p.a + "\n\n" + footer for p in resent)
    assert {p.burst for p in pairs} == {"en-short-test-0"}
    # the stream sends a burst's texts within one day (20 hours from the burst's start)
    items, facts = evaluate_policy.stream_items(pairs)
    first_seen: dict[str, timedelta] = {}
    for item in items:
        first_seen.setdefault(item["cluster"], item["at"] - evaluate_policy.START)
    assert max(first_seen.values()) - min(first_seen.values()) <= timedelta(hours=20)
    assert facts["bursts"] == 1


def test_texts_identical_after_normalisation_are_scored_as_duplicates() -> None:
    Pair = build_dataset.Pair
    same = Pair("en-short", "en", "short", 0, "natural", 0, "s", "f", "Never mind.", "never mind")
    other = Pair("en-short", "en", "short", 0, "natural", 0, "s", "g", "Never mind.", "Go on.")
    assert evaluate_policy.label_of(same) == 1 and evaluate_policy.label_of(other) == 0
    tables = evaluate_policy.pair_tables([same, other], [True, False])
    assert tables["relabelled"] == 1 and tables["groups"]["en-short"].tp == 1
    items, facts = evaluate_policy.stream_items([same, other])
    cluster = {i["text"]: i["cluster"] for i in items}
    assert cluster["Never mind."] == cluster["never mind"] != cluster["Go on."]
    assert facts["joined"] == 1


def test_old_classes_are_the_pairs_not_made_by_differences() -> None:
    Pair = build_dataset.Pair
    old = Pair("en-short", "en", "short", 1, "typos+surface", 1, "s", "f", "a b", "a c")
    new = Pair("en-short", "en", "short", 1, "replace_words", 1, "s", "f", "a b", "a d")
    assert not evaluate_policy.is_new(old) and evaluate_policy.is_new(new)


def test_candidate_recall_buckets() -> None:
    assert candidate_recall.LABELS == (
        "<.3",
        ".3-.4",
        ".4-.5",
        ".5-.6",
        ".6-.7",
        ".7-.8",
        ".8-.9",
        ".9-1",
    )
    assert [candidate_recall.bucket(v) for v in (0.1, 0.3, 0.55, 0.899, 0.9, 1.0)] == [
        "<.3",
        ".3-.4",
        ".5-.6",
        ".8-.9",
        ".9-1",
        ".9-1",
    ]
