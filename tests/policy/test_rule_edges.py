"""The deciding rules at their edges: each test pins a branch or a bar that mutation testing
(``mutmut``, ``[tool.mutmut]`` in pyproject.toml) found no other test held.

Expected values come from the rule as documented and from ``simstore.text.similarity`` /
``simstore.text.minhash`` called directly in the test, never from the policy under test.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from simstore import fingerprint
from simstore.errors import InvalidInput
from simstore.policy._match import SMALL_JOIN, near_pairs
from simstore.policy._minhash_policy import _lookalike_reason
from simstore.policy.decide import Edge, Rule, confirm_candidates, confirm_pairs, replay_edges
from simstore.policy.policies import (
    Item,
    Kept,
    MinHashVerification,
    Policy,
    SimHashOnly,
    SimHashVerification,
    policy_from,
    strip_markup,
)
from simstore.policy.probes import band_radii, band_values, pair_radii
from simstore.results import Judged
from simstore.text import minhash, similarity
from simstore.text._algorithms import default_normalise
from simstore.text.encoding import bands
from simstore.text.lookalike import Swap
from simstore.text.normalise import compare_normalise
from tests.policy.test_policies import AT, EDITED, OTHER, TEXT, kept_of, planned

MEETING = "We met at the old mill by the river and we had tea for an hour or so."
AT_FOUR = "We met at the old mill at 4 pm by the river and we had tea for an hour."


def _jaccard(a: str, b: str) -> float:
    return similarity.jaccard(compare_normalise(a), compare_normalise(b), normalise=False)


def _replacements(a: str, b: str, *, typos: bool = True) -> tuple[int, bool]:
    return similarity.replacements(compare_normalise(a), compare_normalise(b), typos=typos)


# --- the count rule (identity_rule=False, recipe 1's) --------------------------------------------


def test_count_rule_counts_replaced_words_without_the_number_check() -> None:
    # two ordinary words put for others (mill -> barn, tea -> gin: 2 places, no number) are more
    # than max_replaced = 1: a look-alike even when numbers do not matter
    swapped = MEETING.replace("mill", "barn").replace("tea", "gin")
    assert _jaccard(MEETING, swapped) >= 0.55  # 0.686: the measure alone would merge them
    assert _replacements(MEETING, swapped) == (2, False)
    policy = MinHashVerification(identity_rule=False, numbers_matter=False)
    assert (
        policy.confirm(planned(policy, "b", swapped), kept_of(planned(policy, "a", MEETING)), 3)
        is None
    )
    # max_replaced None and numbers not minded: nothing makes a look-alike
    lenient = MinHashVerification(identity_rule=False, numbers_matter=False, max_replaced=None)
    assert lenient.confirm(
        planned(lenient, "b", swapped), kept_of(planned(lenient, "a", MEETING)), 3
    )


def test_count_rule_sets_a_replaced_number_apart_whatever_max_replaced() -> None:
    # 4 pm -> 5 pm: one place (not more than max_replaced = 1) but a number replaced by another
    other = AT_FOUR.replace("4 pm", "5 pm")
    assert _jaccard(AT_FOUR, other) >= 0.55  # 0.905
    assert _replacements(AT_FOUR, other) == (1, True)
    for max_replaced in (None, 1):
        policy = MinHashVerification(identity_rule=False, max_replaced=max_replaced)
        kept = kept_of(planned(policy, "a", AT_FOUR))
        assert policy.confirm(planned(policy, "b", other), kept, 3) is None, max_replaced
    blind = MinHashVerification(identity_rule=False, numbers_matter=False)
    assert blind.confirm(planned(blind, "b", other), kept_of(planned(blind, "a", AT_FOUR)), 3)


def test_count_rule_honours_the_typos_option() -> None:
    # "teh" for "the" is a typo under the broad rule, a replaced word under 0.3's narrow one
    # (words of four letters or more only): 1 place with typos, 2 without
    edited = MEETING.replace("the old", "teh old").replace("mill", "barn")
    assert _jaccard(MEETING, edited) >= 0.55  # 0.765
    assert _replacements(MEETING, edited) == (1, False)
    assert _replacements(MEETING, edited, typos=False) == (2, False)
    broad = MinHashVerification(identity_rule=False)
    assert broad.confirm(planned(broad, "b", edited), kept_of(planned(broad, "a", MEETING)), 3)
    narrow = MinHashVerification(identity_rule=False, typos=False)
    assert (
        narrow.confirm(planned(narrow, "b", edited), kept_of(planned(narrow, "a", MEETING)), 3)
        is None
    )


# --- reasons and judging -------------------------------------------------------------------------


def test_lookalike_reason_names_three_swaps_and_counts_the_rest() -> None:
    swaps = [Swap(str(i), str(i + 1), "number") for i in range(5)]
    named = ["'0' -> '1' (number)", "'1' -> '2' (number)", "'2' -> '3' (number)"]
    assert _lookalike_reason([]) == "look-alike"
    assert _lookalike_reason(swaps[:1]) == f"look-alike: {named[0]}"
    assert _lookalike_reason(swaps[:3]) == "look-alike: " + "; ".join(named)
    assert _lookalike_reason(swaps[:4]) == "look-alike: " + "; ".join(named) + " and 1 more"
    assert _lookalike_reason(swaps) == "look-alike: " + "; ".join(named) + " and 2 more"


def test_judging_a_signed_text_against_an_unsigned_row_goes_by_distance() -> None:
    # a row kept from a bare fingerprint has no signature: the distance decides, at the radius
    policy = MinHashVerification()
    item = planned(policy, "b", MEETING)
    near = Kept("a", item.fingerprint ^ 0b111, AT, None, None)  # 3 bits apart
    judged = policy.judge(item, near, 3)
    assert (judged.measure, judged.matched, judged.reason) == ("distance", True, "duplicate")
    far = Kept("a", item.fingerprint ^ 0b1111, AT, None, None)  # 4 bits apart
    judged = policy.judge(item, far, 3)
    assert (judged.measure, judged.matched) == ("distance", False)
    assert judged.reason == "4 bits apart, more than 3"


def test_plan_gives_the_store_radius_for_unsigned_rows() -> None:
    # ``plan`` (one text) as ``plan_many``: the store's radius decides against a row without a
    # signature
    policy = MinHashVerification()
    item = Item("b", fingerprint(MEETING), 10, 0)
    policy.plan(item, MEETING, 5)
    assert item.radius == 5
    assert policy.confirm(item, Kept("a", item.fingerprint ^ 0b11111, AT, None, None), 5)


def test_judging_a_long_text_against_a_short_one_uses_the_estimate() -> None:
    # one side longer than short_length (700 normalised characters): the signatures' estimate
    # decides, not the exact measure (which needs both texts)
    policy = MinHashVerification()
    long_text = " ".join([MEETING] * 12)  # ~830 normalised characters
    assert len(compare_normalise(long_text)) >= policy.short_length
    long, short = planned(policy, "b", long_text), planned(policy, "a", MEETING)
    assert long.text is None and short.text is not None
    assert long.signature is not None and short.signature is not None
    judged = policy.judge(long, kept_of(short), 3)
    estimate = minhash.estimate(long.signature, short.signature)
    assert judged.measure == "minhash"
    assert judged.score == round(estimate, 6)


# --- long texts under the count rule: the opening ------------------------------------------------

_WORDS = [
    "river",
    "stone",
    "maple",
    "copper",
    "lantern",
    "harbour",
    "meadow",
    "signal",
    "thunder",
    "velvet",
    "orchard",
    "canyon",
    "beacon",
    "willow",
    "marble",
    "falcon",
    "timber",
    "glacier",
]


def _body() -> str:
    rng = random.Random(3)
    return " ".join(" ".join(rng.choice(_WORDS) for _ in range(12)) + "." for _ in range(70))


def _licence(*names: str) -> str:
    """One template's document: five names in its opening, then a body all of them share. The
    pad ``xx`` puts a word's end at character 350, where ``_opening_replaced`` cuts (0.7 of the
    500-character opening), so the cut splits no word and the places are the names replaced."""
    a, b, c, d, e = names
    opening = f"This licence covers {a} and {b}, written by {c} for {d} at {e}; read it first. x "
    return opening + _body()


ORIGINAL = _licence("alpha", "bravo", "carol", "delta", "echo")


def _opening_places(a: str, b: str) -> int:
    """Places where the openings hold other words, each side's first 350 characters aligned
    against the other's 500, the fewer taken (the rule as documented)."""
    x, y = compare_normalise(a)[:500], compare_normalise(b)[:500]
    return min(similarity.replacements(x[:350], y)[0], similarity.replacements(y[:350], x)[0])


FIVE = _licence("golf", "hotel", "india", "juliet", "kilo")
FOUR = _licence("golf", "hotel", "india", "juliet", "echo")


def test_count_rule_tells_one_templates_long_documents_apart_by_their_opening() -> None:
    # identity_rule=False: more than max_opening_replaced = 4 places of the openings holding
    # other words make a look-alike; 4 are an edit (one place a name, counted by hand)
    policy = MinHashVerification(identity_rule=False)
    norm = compare_normalise(ORIGINAL)
    assert len(norm) >= policy.short_length and norm[349] != " " and norm[350] == " "
    assert (_opening_places(FIVE, ORIGINAL), _opening_places(FOUR, ORIGINAL)) == (5, 4)
    kept = kept_of(planned(policy, "a", ORIGINAL))
    five, four = planned(policy, "b", FIVE), planned(policy, "c", FOUR)
    for item in (five, four):
        assert item.signature is not None and kept.signature is not None and item.text is None
        assert minhash.estimate(item.signature, kept.signature) >= policy.long_threshold
    assert policy.confirm(five, kept, 3) is None
    judged = policy.judge(five, kept, 3)
    assert (judged.measure, judged.matched, judged.threshold) == ("minhash", False, 0.70)
    assert judged.reason == "look-alike: 5 replaced word(s) in the opening"
    match = policy.confirm(four, kept, 3)
    assert match is not None and match.measure == "minhash"
    judged = policy.judge(four, kept, 3)
    assert (judged.reason, judged.matched, judged.distance) == ("duplicate", True, match.distance)
    # typos=False (0.3's narrow rule): "ti" for "it" (two letters swapped in a word under four
    # letters) is a fifth replaced place; a typo, no place, under the default rule
    typo = FOUR.replace("read it", "read ti")
    assert _replacements(typo[:80], FOUR[:80]) == (0, False)
    assert _replacements(typo[:80], FOUR[:80], typos=False) == (1, False)
    narrow = MinHashVerification(identity_rule=False, typos=False)
    assert narrow.confirm(planned(narrow, "d", FOUR), kept_of(planned(narrow, "a", ORIGINAL)), 3)
    assert (
        narrow.confirm(planned(narrow, "d", typo), kept_of(planned(narrow, "a", ORIGINAL)), 3)
        is None
    )
    assert policy.confirm(planned(policy, "d", typo), kept, 3)
    # words inserted near the start push the opening's last words past its end: aligned (the
    # first 350 characters against the other's 500) the places stay the 4 names; opening
    # against opening (500 each) would count a fifth at the cut
    inserted = FOUR.replace(
        "licence covers", "licence, in force from today in every country, covers"
    )
    x, y = compare_normalise(inserted)[:500], compare_normalise(ORIGINAL)[:500]
    assert (similarity.replacements(x, y)[0], _opening_places(inserted, ORIGINAL)) == (5, 4)
    assert policy.confirm(planned(policy, "e", inserted), kept, 3) is not None


def test_count_rule_passes_over_an_opening_pushed_away_by_a_header() -> None:
    # a long header added in front: the openings share under 30% of their words, so they are
    # not one template's (the places are not counted) and containment decides: a duplicate
    header = " ".join(f"notice{i} for clause{i}" for i in range(24)) + ". "
    # (the estimate, .73, must stay under the long threshold for containment to decide)
    policy = MinHashVerification(identity_rule=False, long_threshold=0.75)
    assert _opening_places(header + ORIGINAL, ORIGINAL) > 4
    x, y = (
        compare_normalise(header + ORIGINAL)[:500].split(),
        compare_normalise(ORIGINAL)[:500].split(),
    )
    shared = sum((Counter(x) & Counter(y)).values())
    assert 0 < shared < 0.3 * min(len(x), len(y))  # "for" only
    item, kept = planned(policy, "b", header + ORIGINAL), kept_of(planned(policy, "a", ORIGINAL))
    match = policy.confirm(item, kept, 3)
    assert match is not None and match.measure == "containment"
    judged = policy.judge(item, kept, 3)
    assert (judged.measure, judged.reason, judged.threshold) == ("containment", "duplicate", 0.95)
    assert (judged.distance, judged.score) == (match.distance, match.score)
    # a containment exactly at long_containment is a duplicate (from the estimate and the two
    # sizes the signatures store, by simstore.text.minhash)
    assert item.signature is not None and kept.signature is not None
    own, other = minhash.size_of(item.signature), minhash.size_of(kept.signature)
    assert own is not None and other is not None
    estimate = minhash.estimate(item.signature, kept.signature)
    contained = minhash.contained(estimate, own, other)
    at_bar = MinHashVerification(
        identity_rule=False, long_threshold=0.75, long_containment=contained
    )
    assert at_bar.confirm(item, kept, 3) is not None
    # a bar of 0 (every copy-sized pair under the estimate's threshold) is shown as 0, not 1
    anything = MinHashVerification(identity_rule=False, long_threshold=0.75, long_containment=0.0)
    assert anything.judge(item, kept, 3).threshold == 0.0


def test_count_rule_without_a_kept_opening_goes_by_the_estimate() -> None:
    # a row signed without an opening (opening_length None, or before openings were kept): the
    # estimate alone decides, so one template's other document is a duplicate there
    policy = MinHashVerification(identity_rule=False)
    unopened = MinHashVerification(identity_rule=False, opening_length=None)
    kept = kept_of(planned(unopened, "a", ORIGINAL))
    assert kept.signature is not None and minhash.opening_of(kept.signature) is None
    assert policy.confirm(planned(policy, "b", FIVE), kept, 3) is not None


def _judge(policy: Policy, kept_text: str, text: str) -> Judged:
    return policy.judge(planned(policy, "b", text), kept_of(planned(policy, "a", kept_text)), 3)


def test_judging_short_texts_says_which_rule_refused_them() -> None:
    # each reason of the short-text rule, with the measure, score and bar it names; scores from
    # simstore.text.similarity and the signatures' estimate from simstore.text.minhash
    policy = MinHashVerification()
    edited = _judge(policy, TEXT, EDITED)
    assert (edited.measure, edited.reason, edited.matched) == ("jaccard", "duplicate", True)
    assert (edited.score, edited.threshold) == (round(_jaccard(TEXT, EDITED), 6), 0.55)
    reworded = MEETING.replace("mill by the river", "bridge on the lake").replace("tea", "cake")
    under = _judge(policy, MEETING, reworded)
    assert _jaccard(MEETING, reworded) < 0.55  # 0.494
    assert (under.measure, under.reason, under.matched) == (
        "jaccard",
        "score under the threshold",
        False,
    )
    assert under.distance == (fingerprint(MEETING) ^ fingerprint(reworded)).bit_count()
    vacuum = _judge(policy, TEXT, TEXT.replace("hiking boots", "robot vacuum"))
    assert vacuum.reason == "look-alike: 'hiking boots' -> 'robot vacuum' (phrase)"
    assert vacuum.matched is False
    # recipe 1's count rule names how many words were replaced, and whether numbers differ
    counted = MinHashVerification(identity_rule=False)
    four = _judge(counted, AT_FOUR, AT_FOUR.replace("4 pm", "5 pm"))
    assert (four.reason, four.matched) == ("look-alike: 1 replaced word(s), numbers differ", False)
    swapped = _judge(counted, MEETING, MEETING.replace("mill", "barn").replace("tea", "gin"))
    assert (swapped.reason, swapped.matched) == ("look-alike: 2 replaced word(s)", False)
    assert (swapped.measure, swapped.threshold) == ("jaccard", 0.55)


def test_judging_short_texts_under_the_prefilter_says_they_did_not_match() -> None:
    # two unrelated short texts: the signatures' estimate is under the prefilter (0.35), so
    # confirm refuses the pair, and the judgement says so (matched False), naming the prefilter
    policy = MinHashVerification()
    new, old = planned(policy, "b", OTHER), planned(policy, "a", TEXT)
    assert new.signature is not None and old.signature is not None
    estimate = minhash.estimate(new.signature, old.signature)
    assert estimate < policy.prefilter
    assert policy.confirm(new, kept_of(old), 3) is None
    judged = policy.judge(new, kept_of(old), 3)
    assert (judged.measure, judged.threshold) == ("minhash", 0.35)
    assert (judged.reason, judged.matched) == ("estimate under the prefilter", False)
    assert judged.score == round(estimate, 6)
    assert judged.distance == (new.fingerprint ^ old.fingerprint).bit_count()


# --- the exact measures and SimHashVerification --------------------------------------------------


def test_each_measure_scores_the_comparison_texts_as_they_are() -> None:
    # the policies compare texts they normalised themselves (symbols kept under the default
    # policy): a measure must not normalise them again, which would drop "c++" and the spaces
    # that character cosine counts. References: simstore.text.similarity without normalising.
    a = compare_normalise("Built with C++ and Go, tested on Linux.")
    b = compare_normalise("Built with C# and Go, tested on Linux!")
    assert "c++" in a and "c#" in b
    expected = {
        "jaccard": similarity.jaccard(a, b, n=3, normalise=False),
        "cosine": similarity.cosine(a, b, unit="char", normalise=False),
        "edit": similarity.edit_ratio(a, b, normalise=False),
    }
    assert expected["cosine"] != similarity.cosine(a, b, unit="char")  # normalising changes it
    assert expected["cosine"] != similarity.cosine(a, b, unit="word", normalise=False)
    assert expected["edit"] != similarity.edit_ratio(a, b)
    assert len(set(expected.values())) == 3
    for measure, value in expected.items():
        assert MinHashVerification(measure=measure).score(a, b) == value, measure  # type: ignore[arg-type]
        assert SimHashVerification(measure=measure).score(a, b) == value, measure  # type: ignore[arg-type]


def _simhash_item(policy: SimHashVerification, text: str, max_distance: int = 3) -> Item:
    item = Item("b", fingerprint(text), 10, max_distance)
    policy.plan_many([item], [text], max_distance)
    return item


def test_simhash_verification_confirms_a_short_text_at_its_bars() -> None:
    # a short text (under 300 normalised characters) looks at kept texts within short_radius = 7
    # bits and is a duplicate when the Jaccard of 3-grams reaches the threshold; the distance of
    # the kept row is set in the test (its fingerprint is the new one's with bits flipped)
    new, old = default_normalise(EDITED), default_normalise(TEXT)
    score = similarity.jaccard(new, old, normalise=False)  # 0.93
    policy = SimHashVerification()
    item = _simhash_item(policy, EDITED)
    assert (item.radius, item.threshold, item.text) == (7, 0.8, new)
    at_radius = Kept("a", item.fingerprint ^ 0b1111111, AT, old, None)  # 7 bits apart
    match = policy.confirm(item, at_radius, 3)
    assert match is not None
    assert (match.key, match.fingerprint, match.distance) == ("a", at_radius.fingerprint, 7)
    assert (match.measure, match.score) == ("jaccard", round(score, 6))
    assert policy.confirm(item, at_radius._replace(fingerprint=item.fingerprint ^ 0xFF), 3) is None
    # a score exactly at the threshold is a duplicate; the least bit over it is not
    at_bar = SimHashVerification(threshold=score)
    assert at_bar.confirm(_simhash_item(at_bar, EDITED), at_radius, 3) is not None
    over = SimHashVerification(threshold=min(1.0, score + 1e-9))
    assert over.confirm(_simhash_item(over, EDITED), at_radius, 3) is None


def test_simhash_verification_goes_by_the_store_radius_without_a_kept_text() -> None:
    # a kept row without its text (kept from a fingerprint, or as a long text): nothing to
    # compare, so the store's max_distance decides, not the wider short_radius
    policy = SimHashVerification()
    item = _simhash_item(policy, EDITED)
    near = Kept("a", item.fingerprint ^ 0b111, AT, None, None)  # 3 bits
    match = policy.confirm(item, near, 3)
    assert match is not None and (match.distance, match.measure) == (3, None)
    assert policy.confirm(item, near._replace(fingerprint=item.fingerprint ^ 0b11111), 3) is None


def test_simhash_verification_names_a_bad_option() -> None:
    for option, value in (
        ("threshold", 1.5),
        ("long_threshold", -0.1),
        ("short_length", -1),
        ("short_radius", -1),
        ("long_radius", -2),
        ("expire_by_last_seen", "yes"),
    ):
        with pytest.raises(InvalidInput, match=rf"\b{option}\b"):
            SimHashVerification(**{option: value})  # type: ignore[arg-type]
    assert SimHashVerification(short_length=0, short_radius=0, long_radius=0).short_radius == 0
    for option, value in (("min_features", -1), ("expire_by_last_seen", "yes")):
        with pytest.raises(InvalidInput, match=rf"^{option} must "):
            SimHashOnly(**{option: value})  # type: ignore[arg-type]


def test_plan_many_refuses_items_and_texts_of_different_lengths() -> None:
    items = [Item("a", 1, 10, 3), Item("b", 2, 10, 3)]
    for policy in (SimHashOnly(), SimHashVerification(), MinHashVerification()):
        with pytest.raises(ValueError):
            policy.plan_many(items, ["only one text"], 3)


def test_simhash_verification_splits_short_and_long_at_short_length() -> None:
    # "shorter than short_length" is short: a text of exactly short_length characters is long,
    # decided at long_radius (or the store's radius) without a threshold
    norm = default_normalise(EDITED)
    exact = SimHashVerification(short_length=len(norm), long_radius=5)
    long = _simhash_item(exact, EDITED)
    assert (long.radius, long.threshold, long.text) == (5, None, None)
    one_more = SimHashVerification(short_length=len(norm) + 1, long_radius=5)
    assert (_simhash_item(one_more, EDITED).radius, _simhash_item(one_more, EDITED).threshold) == (
        7,
        0.8,
    )
    assert _simhash_item(SimHashVerification(short_length=len(norm)), EDITED).radius == 3


def test_confirm_many_is_confirm_over_aligned_pairs() -> None:
    policy = SimHashVerification()
    item = _simhash_item(policy, EDITED)
    near = Kept("a", item.fingerprint ^ 0b111, AT, None, None)  # no text: the store's radius
    far = near._replace(fingerprint=item.fingerprint ^ 0b11111)
    found = policy.confirm_many([item, item], [near, far], 3)
    assert [m and m.distance for m in found] == [3, None]
    with pytest.raises(ValueError):
        policy.confirm_many([item, item], [near], 3)


def test_judging_by_distance_names_the_radius() -> None:
    # SimHashOnly: the distance decides; the judgement names it, the radius as its bar
    policy = SimHashOnly()
    item = Item("b", fingerprint(TEXT), 10, 3)
    policy.plan_many([item], [TEXT], 3)
    near = Kept("a", item.fingerprint ^ 0b1011, AT, None, None)  # 3 bits
    judged = policy.judge(item, near, 3)
    assert (judged.key, judged.fingerprint, judged.distance) == ("a", near.fingerprint, 3)
    assert (judged.measure, judged.score, judged.threshold) == ("distance", 3, 3)
    assert (judged.reason, judged.matched) == ("duplicate", True)
    far = policy.judge(item, near._replace(fingerprint=item.fingerprint ^ 0b11011), 3)
    assert (far.distance, far.reason, far.matched) == (4, "4 bits apart, more than 3", False)
    # SimHashVerification: a duplicate by its measure names the measure and score
    verified = SimHashVerification()
    short = _simhash_item(verified, EDITED)
    kept = Kept("a", short.fingerprint ^ 0b11, AT, default_normalise(TEXT), None)
    judged = verified.judge(short, kept, 3)
    score = similarity.jaccard(default_normalise(EDITED), default_normalise(TEXT), normalise=False)
    assert (judged.measure, judged.score, judged.distance) == ("jaccard", round(score, 6), 2)
    assert (judged.reason, judged.matched) == ("duplicate", True)
    # and without a kept text, the distance at the store's radius
    bare = verified.judge(short, kept._replace(text=None), 3)
    assert (bare.measure, bare.distance, bare.matched) == ("distance", 2, True)
    # another text exactly short_radius (7) bits away is a candidate: refused by its score
    other = Kept("c", short.fingerprint ^ 0b1111111, AT, default_normalise(OTHER), None)
    refused = verified.judge(short, other, 3)
    assert (refused.measure, refused.distance, refused.threshold) == ("jaccard", 7, 0.8)
    assert (refused.reason, refused.matched) == ("score under the threshold", False)


def test_judging_without_a_kept_text_names_the_store_radius_and_the_distance() -> None:
    # a short text's candidates lie within short_radius = 7 bits, but a kept row without its
    # text is decided by the store's max_distance (3 here: nothing to compare, as _confirm
    # says): 5 bits apart is refused at 3, and the judgement says so, not "more than 7"
    policy = SimHashVerification()
    item = _simhash_item(policy, EDITED)
    assert item.radius == 7
    bare = Kept("a", item.fingerprint ^ 0b11111, AT, None, None)  # 5 bits apart
    assert policy.confirm(item, bare, 3) is None
    judged = policy.judge(item, bare, 3)
    assert (judged.measure, judged.score, judged.threshold) == ("distance", 5, 3)
    assert (judged.reason, judged.matched) == ("5 bits apart, more than 3", False)
    # matched by distance (2 bits), the bar is the store's radius as well
    near = policy.judge(item, bare._replace(fingerprint=item.fingerprint ^ 0b11), 3)
    assert (near.threshold, near.matched, near.reason) == (3, True, "duplicate")


def test_judging_a_match_by_its_measure_names_the_policy_bar() -> None:
    # a pair matched by the measure is shown against the bar it had to reach (threshold for a
    # short text, long_threshold for a long one), its margin the score's distance above it
    new, old = default_normalise(EDITED), default_normalise(TEXT)
    score = round(similarity.jaccard(new, old, normalise=False), 6)  # 0.93
    policy = SimHashVerification()
    kept = Kept("a", fingerprint(EDITED) ^ 0b11, AT, old, None)
    judged = policy.judge(_simhash_item(policy, EDITED), kept, 3)
    assert (judged.measure, judged.score, judged.matched) == ("jaccard", score, True)
    assert judged.threshold == 0.8
    assert judged.margin == pytest.approx(score - 0.8)
    # a text at short_length is long: verified at long_threshold when one is set
    long = SimHashVerification(short_length=len(new), long_threshold=0.6)
    judged = long.judge(_simhash_item(long, EDITED), kept, 3)
    assert (judged.measure, judged.score, judged.threshold) == ("jaccard", score, 0.6)


def test_roff_comment_lines_are_stripped_in_a_text_without_a_full_stop() -> None:
    # a roff comment line starts with ' or . followed by \" (strip_markup's documented rule);
    # the text holds no "." at all, only the apostrophe
    stripped = strip_markup("'\\\" Copyright line\nHello world")
    assert "Copyright" not in stripped and "Hello world" in stripped


def test_thresholds_name_every_bar_of_the_default_policy() -> None:
    # the lines a report draws, from the policy's documented defaults
    assert MinHashVerification().thresholds(3) == (
        {
            "jaccard": (("short texts", 0.55),),
            "minhash": (("long texts", 0.70), ("long, mostly CJK", 0.60)),
            "containment": (("short texts", 0.8), ("long texts", 0.95)),
        },
        (("unsigned rows", 3),),
    )
    assert MinHashVerification(cjk_long_threshold=None, containment=None).thresholds(5) == (
        {
            "jaccard": (("short texts", 0.55),),
            "minhash": (("long texts", 0.70),),
            "containment": (("long texts", 0.95),),
        },
        (("unsigned rows", 5),),
    )
    none = MinHashVerification(containment=None, long_containment=None, measure="edit")
    assert none.thresholds(3)[0] == {
        "edit": (("short texts", 0.55),),
        "minhash": (("long texts", 0.70), ("long, mostly CJK", 0.60)),
    }


def test_thresholds_name_every_bar_and_radius_of_the_simhash_policies() -> None:
    # from the documented defaults: short texts verified at 0.8 among candidates within
    # short_radius 7 bits, long texts by the store's radius unless long_radius / long_threshold
    # are set; plain SimHash has the radius alone
    assert SimHashVerification().thresholds(3) == (
        {"jaccard": (("short texts", 0.8),)},
        (("short-text candidates", 7), ("long texts", 3)),
    )
    assert SimHashVerification(long_threshold=0.75, long_radius=5).thresholds(3) == (
        {"jaccard": (("short texts", 0.8), ("long texts", 0.75))},
        (("short-text candidates", 7), ("long texts", 5)),
    )
    # one radius for both when they are equal
    assert SimHashVerification(long_radius=7).thresholds(3)[1] == (("short-text candidates", 7),)
    assert SimHashOnly().thresholds(4) == ({}, (("radius", 4),))


# --- the lookup planner and the in-order decision ------------------------------------------------


def test_band_radii_follow_the_multi_index_split() -> None:
    # r = 4p + q: q + 1 bands probed at radius p, the other 3 - q at p - 1 (worked by hand)
    assert band_radii(0) == [(0, 0)]
    assert band_radii(3) == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert band_radii(4) == [(0, 1), (1, 0), (2, 0), (3, 0)]
    assert band_radii(5) == [(0, 1), (1, 1), (2, 0), (3, 0)]
    assert band_radii(7) == [(0, 1), (1, 1), (2, 1), (3, 1)]
    assert band_radii(8) == [(0, 2), (1, 1), (2, 1), (3, 1)]
    assert pair_radii(0) == [(0, 0)]
    assert pair_radii(1) == [(0, 0), (1, 0)]
    assert pair_radii(2) == [(0, 1), (1, 0)]
    assert pair_radii(3) == [(0, 1), (1, 1)]
    with pytest.raises(ValueError, match=r"radii 0\.\.3"):
        pair_radii(4)


def test_band_values_find_every_fingerprint_within_a_wide_radius() -> None:
    # radius 4..8: every split of the flipped bits among the four 16-bit bands leaves some band
    # within its probe radius, so the candidate's band value is among those looked up
    rng = random.Random(13)
    for radius in range(4, 9):
        for _ in range(40):
            query = rng.getrandbits(64)
            found = query
            for bit in rng.sample(range(64), radius):
                found ^= 1 << bit
            wanted = band_values(query, radius)
            own = bands(found)
            assert any(own[band] in values for band, values in wanted.items()), (radius, found)
            # and nothing beyond each band's probe radius is looked up
            for band, band_radius in band_radii(radius):
                assert all(
                    (value ^ bands(query)[band]).bit_count() <= band_radius
                    for value in wanted[band]
                )


def test_replayed_matches_carry_no_fingerprint() -> None:
    moments = [AT, AT, AT]
    edges = [Edge(new=1, old=0, distance=2, measure="jaccard", score=0.9)]
    decided = replay_edges(["a", "b", "c"], edges, moments)
    assert decided[0] == [] and decided[2] == []
    [match] = decided[1]
    assert (match.key, match.fingerprint, match.distance, match.score) == ("a", 0, 2, 0.9)


def test_policy_from_checks_the_threshold_first() -> None:
    with pytest.raises(InvalidInput, match=r"^threshold must lie in \[0, 1\]"):
        policy_from("minhash", threshold=1.5)


def test_confirm_pairs_passes_the_store_radius() -> None:
    # a short text against an earlier long one (whose text is not kept): SimHashVerification
    # decides by the store's radius (3 here, not short_radius 7), so confirm_pairs must pass it on
    policy = SimHashVerification()
    base = fingerprint(TEXT)
    long_text = " ".join([OTHER] * 5)  # over 300 normalised characters
    old, near, far = (
        Item("old", base, 10, 3),
        Item("near", base ^ 0b111, 10, 3),
        Item("far", base ^ 0b11111, 10, 3),
    )
    policy.plan_many([old, near, far], [long_text, EDITED, EDITED], 3)
    assert old.text is None and near.text is not None
    edges = confirm_pairs([old, near, far], [(1, 0), (2, 0)], Rule(policy, 3))
    assert edges == [Edge(new=1, old=0, distance=3, measure=None, score=None)]
    # and so must Spark's confirm step
    matches = confirm_candidates([near, far], [old, old], [0, 0], Rule(policy, 3))
    assert [(m.key, m.distance, m.measure) if m else None for m in matches] == [
        ("old", 3, None),
        None,
    ]


def test_confirm_candidates_confirms_admitted_pairs_only_each_in_its_place() -> None:
    # Spark's confirm step: pairs aligned by position. An edited copy sharing band keys is
    # confirmed by its Jaccard (computed here from the normalised texts); the same pair sharing
    # none (its SimHash distance 4, over the radius 3) is no candidate; an unrelated text sharing
    # band keys is a candidate that the measure refuses
    policy = MinHashVerification()
    old, edited, other = (
        planned(policy, key, text) for key, text in (("a", TEXT), ("b", EDITED), ("c", OTHER))
    )
    assert (old.fingerprint ^ edited.fingerprint).bit_count() == 4
    matches = confirm_candidates(
        [other, edited, edited], [old, old, old], [5, 0, 3], Rule(policy, 3)
    )
    assert matches[:2] == [None, None]
    match = matches[2]
    assert match is not None and (match.key, match.distance) == ("a", 4)
    assert match.measure == "jaccard" and match.score == pytest.approx(_jaccard(TEXT, EDITED))
    assert confirm_candidates([], [], [], Rule(policy, 3)) == []


@pytest.mark.parametrize("measure", ["edit", "cosine"])
def test_a_batch_confirms_by_the_measure_it_is_given(measure: str) -> None:
    # the batch path's scorer (confirm_many) and the judge score an edited copy alike, as
    # simstore.text.similarity does on the normalised texts (the reference)
    policy = MinHashVerification(measure=measure, threshold=0.5)  # type: ignore[arg-type]
    old, edited = planned(policy, "a", TEXT), planned(policy, "b", EDITED)
    own, other = compare_normalise(EDITED), compare_normalise(TEXT)
    expected = (
        similarity.edit_ratio(own, other, normalise=False)
        if measure == "edit"
        else similarity.cosine(own, other, unit="char", normalise=False)
    )
    [edge] = confirm_pairs([old, edited], [(1, 0)], Rule(policy, 3))
    assert (edge.measure, edge.score) == (measure, round(expected, 6))
    assert policy.judge(edited, kept_of(old), 3).score == edge.score


def test_judging_under_the_count_rule_counts_as_the_policy_does() -> None:
    # three words replaced: Jaccard 0.553 reaches the bar (set exactly at it here) while the
    # containment (0.71) stays under 0.8, so the score alone accepts the pair and the count
    # rule refuses it: the reason counts the places
    three = MEETING.replace("mill", "barn").replace("tea", "gin").replace("river", "lake")
    score = _jaccard(MEETING, three)
    a, b = compare_normalise(MEETING), compare_normalise(three)
    grams = similarity.char_ngrams(a, 3), similarity.char_ngrams(b, 3)
    assert score >= 0.55 and similarity.containment_of_sets(*grams) < 0.8
    at_bar = MinHashVerification(identity_rule=False, threshold=score)
    judged = _judge(at_bar, MEETING, three)
    assert (judged.reason, judged.matched) == ("look-alike: 3 replaced word(s)", False)
    # a typo and two replaced words: 2 places under the typo rule, 3 under 0.3's narrow one
    typo = MEETING.replace("the old", "teh old").replace("mill", "barn").replace("tea", "gin")
    assert (_replacements(MEETING, typo), _replacements(MEETING, typo, typos=False)) == (
        (2, False),
        (3, False),
    )
    broad = _judge(MinHashVerification(identity_rule=False), MEETING, typo)
    assert broad.reason == "look-alike: 2 replaced word(s)"
    narrow = _judge(MinHashVerification(identity_rule=False, typos=False), MEETING, typo)
    assert narrow.reason == "look-alike: 3 replaced word(s)"


def test_judging_long_texts_under_the_threshold_says_so() -> None:
    # two long texts of one template whose bodies differ in their second half (each word
    # spelt backwards): the estimate is
    # under long_threshold (0.75) and neither is contained in the other, so the reason is the
    # estimate, whatever their openings share
    policy = MinHashVerification()
    half = len(_body()) // 2
    other = FIVE[: len(FIVE) - half] + " ".join(word[::-1] for word in _body()[half:].split())
    new, old = planned(policy, "b", other), planned(policy, "a", ORIGINAL)
    assert new.signature is not None and old.signature is not None and new.text is None
    estimate = minhash.estimate(new.signature, old.signature)
    assert estimate < policy.long_threshold
    judged = policy.judge(new, kept_of(old), 3)
    assert (judged.measure, judged.threshold, judged.score) == ("minhash", 0.70, round(estimate, 6))
    assert (judged.reason, judged.matched) == ("estimate under the threshold", False)
    assert judged.distance == (new.fingerprint ^ old.fingerprint).bit_count()


def test_near_pairs_finds_pairs_that_only_a_later_band_holds() -> None:
    # 70 x 70 pairs (over SMALL_JOIN, so the band join runs): every candidate is its query with
    # one bit of band 0 flipped, so band 0 joins nothing and band 1 finds every pair; the
    # expected pairs by brute force
    rng = random.Random(17)
    queries = [rng.getrandbits(64) for _ in range(70)]
    candidates = [query ^ (1 << 60) for query in queries]
    assert len(queries) * len(candidates) > SMALL_JOIN
    expected = [
        [j for j, value in enumerate(candidates) if (value ^ query).bit_count() <= 1]
        for query in queries
    ]
    assert expected == [[i] for i in range(70)]
    assert near_pairs(queries, [1] * 70, candidates) == expected


def test_near_pairs_refuses_what_it_cannot_answer() -> None:
    with pytest.raises(ValueError, match=r"^near_pairs handles radii up to 3$"):
        near_pairs(list(range(70)), [4] * 70, list(range(70)))
    with pytest.raises(ValueError):  # one radius a query
        near_pairs([1, 2], [0], [3])


def test_plan_without_symbols_compares_word_characters_only() -> None:
    # keep_symbols=False: simstore 0.4.0's comparison text (default_normalise), by plan as by
    # plan_many
    text = "Use C++ and C# every day, said the team lead on Monday."
    policy = MinHashVerification(keep_symbols=False)
    one = Item("a", fingerprint(text), 10, 3)
    policy.plan(one, text, 3)
    assert one.text == default_normalise(text) != compare_normalise(text)
    assert planned(policy, "b", text).text == one.text
