"""The default policy at its edges: for each bar, a pair just over it and a pair just under it.

The bars (``MinHashVerification``): short texts (under ``short_length`` = 700 normalised
characters) are decided by the Jaccard similarity of their character 3-grams, a duplicate at
``threshold`` = 0.55 or more; under it, by containment, a duplicate at ``containment`` = 0.8 or
more; longer texts by their signatures' estimate, a duplicate at ``long_threshold`` = 0.70 or
more (``cjk_long_threshold`` = 0.60 for a text mostly in Chinese or Japanese); under it, by the
containment the estimate and the two texts' sizes give, a duplicate at ``long_containment`` =
0.95 or more. A word in the place of a name is a look-alike unless it is a typo of it: within one
edit in four (``simstore.text.similarity``, 0.75).

INDEPENDENT: every score below is computed here in plain Python (3-gram sets with exact
fractions) from texts already in normal form (lowercase words, single spaces: the test checks that
normalising leaves them as they are), never by simstore. The pairs were found by a search over
random word lists (words only inserted or deleted, never replaced, so that no rule for
look-alikes applies); each pair's other bars are far away, and the pair just under a bar is shown to
match when only that bar is lowered, so that it is that bar, and nothing else, that refuses it.
"""

from __future__ import annotations

import dataclasses
import random
from datetime import datetime, timezone
from fractions import Fraction

import pytest

from simstore import fingerprint
from simstore.policy.policies import DEFAULT_POLICY, Item, Kept, MinHashVerification
from simstore.results import Match

AT = datetime(2026, 1, 1, tzinfo=timezone.utc)


def grams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(len(text) - 2)}


def jaccard(a: str, b: str) -> Fraction:
    left, right = grams(a), grams(b)
    return Fraction(len(left & right), len(left | right))


def containment(a: str, b: str) -> Fraction:
    left, right = grams(a), grams(b)
    smaller = min(left, right, key=len)
    return Fraction(len(left & right), len(smaller))


def osa_similarity(a: str, b: str) -> Fraction:
    """1 - optimal string alignment distance / the longer length (a textbook DP)."""
    rows = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        rows[i][0] = i
    for j in range(len(b) + 1):
        rows[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
    return 1 - Fraction(rows[len(a)][len(b)], max(len(a), len(b)))


def decide(
    kept: str, new: str, policy: MinHashVerification = DEFAULT_POLICY, *, normal: bool = True
) -> Match | None:
    """What ``policy`` decides for ``new`` against kept ``kept`` (its candidate)."""
    items = []
    for key, text in (("kept", kept), ("new", new)):
        item = Item(key, fingerprint(text), 10, 3)
        policy.plan_many([item], [text], 3)
        if normal:
            assert item.normalised == text  # normal form already: the scores here are the policy's
        items.append(item)
    old, item = items
    return policy.confirm(item, Kept(old.key, old.fingerprint, AT, old.text, old.signature), 3)


# --- threshold: Jaccard of 3-grams >= 0.55 ----------------------------------------------------

AT_THRESHOLD = (
    "yogurt oyster garden bottle quiver jungle letter magnet pocket insect lantern basket "
    "spider barrel butter castle wagon falcon mirror desert walnut pepper tomato island "
    "ginger jacket ribbon ladder ticket office quartz",
    "yogurt oyster morning garden quiver jungle anchor letter magnet river pocket lantern "
    "basket winter spider barrel planet butter wagon mirror walnut tomato ginger jacket "
    "engine ribbon ladder forest ticket quartz",
)
UNDER_THRESHOLD = (
    "desert rocket cactus insect spider castle silver pepper kettle almond ginger lantern "
    "zipper planet tomato wagon letter yellow pocket quartz glider vessel window island "
    "engine harbor magnet mirror meadow rabbit feather hammer candle river pillow office "
    "travel bottle walnut wizard butter oyster",
    "desert rocket insect spider falcon castle pepper kettle bridge almond lantern zipper "
    "barrel planet tomato needle wagon letter saddle yellow pocket orange quartz vessel "
    "island harbor magnet anchor mirror rabbit hammer candle summer river office bottle "
    "wizard oyster",
)


def test_a_short_pair_exactly_at_the_threshold_is_a_duplicate() -> None:
    kept, new = AT_THRESHOLD
    assert jaccard(kept, new) == Fraction(11, 20)  # 0.55 exactly
    assert containment(kept, new) < Fraction(4, 5)  # containment would not rescue it
    match = decide(kept, new)
    assert match is not None and (match.measure, match.score) == ("jaccard", 0.55)


def test_a_short_pair_just_under_the_threshold_is_not() -> None:
    kept, new = UNDER_THRESHOLD
    assert jaccard(kept, new) == Fraction(160, 291)  # 0.5498
    assert containment(kept, new) < Fraction(4, 5)
    assert decide(kept, new) is None
    lowered = dataclasses.replace(DEFAULT_POLICY, threshold=0.54)
    match = decide(kept, new, lowered)
    assert match is not None and match.measure == "jaccard"  # only the threshold refused it


# --- short_length: under 700 normalised characters is short ------------------------------------

WORDS = (
    "river garden window morning yellow market bridge travel letter summer winter planet silver "
    "forest castle orange pocket coffee basket ladder candle rabbit bottle harbor meadow pillow "
)


def of_length(length: int) -> str:
    text = (WORDS * 4)[: length - 1].rstrip() + "z"
    return text + "z" * (length - len(text))


@pytest.mark.parametrize(("length", "measure"), [(699, "jaccard"), (700, "minhash")])
def test_texts_under_700_characters_are_decided_by_3_grams_and_from_700_by_the_estimate(
    length: int, measure: str
) -> None:
    kept = of_length(length)
    new = kept.replace(" basket ", " baskat ", 1)  # a typo: the same length
    assert len(kept) == len(new) == length and new != kept
    match = decide(kept, new)
    assert match is not None and match.measure == measure


# --- the typo rule: a name replaced within one edit in four is a typo, not another name -----------

SENTENCE = "yesterday we met {} at the old harbour market and talked about {} for a while"


@pytest.mark.parametrize(
    ("old", "new", "similarity", "duplicate"),
    [
        ("Mark", "Mork", Fraction(3, 4), True),  # one edit in four: a typo, exactly at the bar
        ("Hartley", "Hartlee", Fraction(6, 7), True),
        ("Hartley", "Hurtlay", Fraction(5, 7), False),  # two edits in seven: another name
    ],
)
def test_a_name_within_one_edit_in_four_is_a_typo_and_one_further_is_another_name(
    old: str, new: str, similarity: Fraction, duplicate: bool
) -> None:
    # and an ordinary word replaced elsewhere: an edit, one replaced place of the one allowed
    kept, edited = SENTENCE.format(old, "boats"), SENTENCE.format(new, "ships")
    assert osa_similarity(old.lower(), new.lower()) == similarity
    assert jaccard(kept.lower(), edited.lower()) > Fraction(3, 4)  # the Jaccard bar is far
    assert (decide(kept, edited, normal=False) is not None) == duplicate


# --- containment >= 0.8 of the smaller text's 3-grams -------------------------------------------

AT_CONTAINMENT = (
    "planet coffee island butter candle velvet market desert harbor rocket kitten cotton "
    "letter lemon tomato orange oyster mirror walnut ticket salmon kettle spider violin "
    "napkin",
    "planet coffee island butter candle velvet river market desert garden harbor rocket "
    "kitten cotton letter morning lemon",
)
UNDER_CONTAINMENT = (
    "oyster summer zipper ladder quartz meadow candle basket cotton kettle magnet lemon "
    "barrel falcon garden feather helmet bottle insect vessel yogurt ribbon napkin wagon "
    "saddle harbor quiver anchor butter silver walnut desert pepper mirror bridge violin "
    "orange window jacket lantern",
    "oyster summer zipper ladder morning quartz meadow market candle basket cotton travel "
    "kettle magnet letter lemon barrel falcon garden feather planet helmet bottle insect "
    "forest vessel yogurt",
)


def test_a_short_text_contained_exactly_at_the_bar_is_a_duplicate() -> None:
    kept, new = AT_CONTAINMENT
    assert containment(kept, new) == Fraction(4, 5)
    assert jaccard(kept, new) < Fraction(11, 20)  # the Jaccard bar refuses it
    match = decide(kept, new)
    assert match is not None and (match.measure, match.score) == ("containment", 0.8)


def test_a_short_text_contained_just_under_the_bar_is_not() -> None:
    kept, new = UNDER_CONTAINMENT
    assert containment(kept, new) == Fraction(127, 159)  # 0.7987
    assert jaccard(kept, new) < Fraction(11, 20)
    assert decide(kept, new) is None
    lowered = dataclasses.replace(DEFAULT_POLICY, containment=0.75)
    match = decide(kept, new, lowered)
    assert match is not None and match.measure == "containment"  # only containment refused it


# --- long texts (700 characters or more): the estimate >= 0.70, 0.60 if mostly CJK ----------------
#
# INDEPENDENT: the estimate is counted here from the two stored signatures' 96 one-byte values (the
# first 96 bytes of each) and read with the b-bit MinHash estimator (Li and König 2010): m equal
# values of 96, chance agreements of one byte (1/256) removed, J = (m/96 - 1/256) / (1 - 1/256).
# 0.70 takes 68 equal values (J = .7072; 67 give .6967), 0.60 takes 58 (.6026; 57 give .5922).
# The copies drop one word (character) in `drop` and insert one in `insert` past the opening, so no
# word stands for another: no look-alike rule applies, and the two sizes keep containment far.

LONG_WORDS = WORDS.split()
HANZI = "春夏秋冬山水风云花草树木日月星辰江河湖海天地人心手足口耳目鱼鸟虫"


def edited(tokens: list[str], drop: int, insert: int, extra: str, start: int) -> list[str]:
    """``tokens`` with every ``drop``-th token from ``start`` on left out and ``extra`` put after
    every ``insert``-th."""
    out = []
    for index, token in enumerate(tokens):
        if index >= start and (index - start) % drop == 0:
            continue
        out.append(token)
        if index >= start and (index - start) % insert == 0:
            out.append(extra)
    return out


def equal_values(kept: str, new: str) -> int:
    signatures = []
    for text in (kept, new):
        item = Item("k", fingerprint(text), 10, 3)
        DEFAULT_POLICY.plan_many([item], [text], 3)
        assert item.text is None and item.signature is not None  # long: decided by the estimate
        signatures.append(item.signature[:96])
    return sum(a == b for a, b in zip(*signatures, strict=True))


def b_bit_estimate(equal: int) -> Fraction:
    chance = Fraction(1, 256)
    return (Fraction(equal, 96) - chance) / (1 - chance)


ENGLISH = random.Random(7).choices(LONG_WORDS, k=180)  # 1,264 characters, the opening ~630
CHINESE = random.Random(7).choices(HANZI, k=900)


@pytest.mark.parametrize(("insert", "equal", "duplicate"), [(5, 68, True), (4, 67, False)])
def test_a_long_pair_at_the_estimates_bar_is_a_duplicate_and_one_value_under_it_is_not(
    insert: int, equal: int, duplicate: bool
) -> None:
    kept = " ".join(ENGLISH)
    new = " ".join(edited(ENGLISH, 3, insert, "walnut", 90))
    assert equal_values(kept, new) == equal
    assert (b_bit_estimate(equal) >= Fraction(7, 10)) == duplicate
    match = decide(kept, new)
    assert (match is not None) == duplicate
    if match is not None:
        assert (match.measure, match.score) == ("minhash", 0.70719)
    else:
        lowered = dataclasses.replace(DEFAULT_POLICY, long_threshold=0.69)
        match = decide(kept, new, lowered)
        assert match is not None and match.measure == "minhash"  # only the bar refused it


@pytest.mark.parametrize(
    ("drop", "insert", "equal", "duplicate"), [(14, 14, 58, True), (19, 20, 57, False)]
)
def test_a_long_chinese_pair_has_its_own_lower_bar(
    drop: int, insert: int, equal: int, duplicate: bool
) -> None:
    kept = "".join(CHINESE)
    new = "".join(edited(CHINESE, drop, insert, "雪", 180))
    assert equal_values(kept, new) == equal
    assert (b_bit_estimate(equal) >= Fraction(3, 5)) == duplicate
    match = decide(kept, new)
    assert (match is not None) == duplicate
    english_bar = dataclasses.replace(DEFAULT_POLICY, cjk_long_threshold=None)
    assert decide(kept, new, english_bar) is None  # under 0.70: the CJK bar decided
    if match is None:
        lowered = dataclasses.replace(DEFAULT_POLICY, cjk_long_threshold=0.59)
        match = decide(kept, new, lowered)
        assert match is not None and match.measure == "minhash"  # only the CJK bar refused it


# --- long texts under their estimate's bar: a copy with text added, contained >= 0.95 ------------
#
# INDEPENDENT: the containment is computed here as the signature's rule reads it (Broder 1997):
# |A & B| / min(|A|, |B|) = J (|A| + |B|) / ((1 + J) min(|A|, |B|)), with J the b-bit estimate above
# (from the 96 equal values) and |A|, |B| the distinct character 5-grams of each text, counted here
# with a set (the size a stored signature carries, ``simstore.text.minhash``). The new text is the
# kept one with words of another vocabulary added at its end: the estimate stays under 0.70, the
# containment near 1; two tails were found by a search to sit just over and just under 0.95.

TAIL = (
    "quartz violet thunder marble lantern copper falcon glacier tundra velvet saffron cobalt "
    "juniper ember obsidian plume sable tamarind zephyr walrus"
)
TAIL_WORDS = TAIL.split()


def five_grams(text: str) -> set[str]:
    return {text[i : i + 5] for i in range(len(text) - 4)}


@pytest.mark.parametrize(
    ("seed", "words", "equal", "duplicate"), [(1, 56, 59, True), (7, 98, 53, False)]
)
def test_a_long_text_with_text_added_is_a_copy_from_containment_095_and_not_under(
    seed: int, words: int, equal: int, duplicate: bool
) -> None:
    kept = " ".join(ENGLISH)
    new = kept + " " + " ".join(random.Random(seed).choices(TAIL_WORDS, k=words))
    assert equal_values(kept, new) == equal
    estimate = b_bit_estimate(equal)
    assert estimate < Fraction(7, 10)  # the estimate's bar refuses both
    own, other = len(five_grams(new)), len(five_grams(kept))
    contained = estimate * (own + other) / ((1 + estimate) * min(own, other))
    assert (contained >= Fraction(19, 20)) == duplicate
    assert abs(contained - Fraction(19, 20)) < Fraction(1, 200)  # each pair close to the bar
    match = decide(kept, new)
    assert (match is not None) == duplicate
    if match is not None:
        assert match.measure == "containment"
        assert match.score == pytest.approx(float(contained), abs=1e-6)
    else:
        lowered = dataclasses.replace(DEFAULT_POLICY, long_containment=0.94)
        match = decide(kept, new, lowered)
        assert match is not None and match.measure == "containment"  # only this bar refused it


def test_the_bars_are_the_documented_ones() -> None:
    # the pairs above sit at these values; a changed default needs new pairs, not a passing test
    policy = DEFAULT_POLICY
    assert isinstance(policy, MinHashVerification)
    assert (policy.short_length, policy.threshold, policy.containment) == (700, 0.55, 0.8)
    assert (policy.long_threshold, policy.cjk_long_threshold) == (0.70, 0.60)
    assert policy.long_containment == 0.95
