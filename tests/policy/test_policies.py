"""The policies: on their own, without a database, each owns its plan, candidates and confirmation;
then through a store on every dialect, where short texts are decided by an exact measure over
candidates the SimHash radius alone misses.

Expected values are worked out by hand from each policy's documented rule (thresholds, radii)
and from ``simstore.text.similarity`` / ``simstore.text.minhash`` directly, never from the policy
itself.
"""

from __future__ import annotations

import json
import random
import re
import string
from dataclasses import replace
from datetime import datetime, timezone

import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine

from simstore import fingerprint, hamming
from simstore.errors import InvalidInput, InvalidType, PolicyMismatch
from simstore.policy import batch
from simstore.policy._minhash_policy import _cjk_characters
from simstore.policy.decide import CandidateIndex
from simstore.policy.policies import (
    _OPTIONAL,
    DEFAULT_POLICY,
    POLICY_NAMES,
    Item,
    Kept,
    MinHashVerification,
    Policy,
    SimHashOnly,
    SimHashVerification,
    check_policy,
    policy_from,
    policy_from_recipe,
    policy_options,
    policy_with,
    recipe_summary,
    strip_markup,
)
from simstore.storage import _finder
from simstore.storage.schema import ROWS, metadata
from simstore.text import minhash, similarity
from simstore.text._algorithms import default_normalise
from simstore.text.normalise import compare_normalise
from tests.conftest import StoreFactory

AT = datetime(2026, 1, 1, tzinfo=timezone.utc)
TEXT = "Just tried the new hiking boots from Pelham. Looks nice, stopped working after a week!"
EDITED = (
    "Just tried the new hiking boots from Pelham! Looks nice, but stopped working after a week."
)
OTHER = "The quarterly report shows revenue growth in every region except the north."
# 40 sentences (~1,130 normalised characters): longer than short_length (1000), so not kept
ZH_LONG = "".join(
    f"第{i}段：今天天气很好，我们一起去公园散步，顺便看看湖边新开的花。" for i in range(40)
)


def planned(policy: Policy, key: str, text: str, max_distance: int = 3) -> Item:
    item = Item(key, fingerprint(text), 10, max_distance)
    policy.plan_many([item], [text], max_distance)
    return item


def kept_of(item: Item) -> Kept:
    return Kept(item.key, item.fingerprint, AT, item.text, item.signature)


def test_minhash_plans_the_comparison_text_signature_and_band_keys() -> None:
    item = planned(MinHashVerification(), "a", TEXT)
    normalised = default_normalise(TEXT)
    assert item.planned and item.radius == 3
    assert item.text == normalised  # short: kept for the exact measure
    expected = minhash.signatures([normalised])
    # the values, then the text's distinct 5-grams as Python's sets count them
    size = len(similarity.char_ngrams(normalised, minhash.NGRAM))
    sized = minhash.to_bytes(expected[0]) + size.to_bytes(4, "little")
    assert item.signature is not None and item.signature[: len(sized)] == sized
    # then the names the identity rule reads ("Pelham", capitalised inside a sentence)
    assert minhash.sketch_of(item.signature) == ("/", "/", "pelham")
    assert item.band_keys == tuple(sorted(set(minhash.band_keys(expected, "24x3")[0].tolist())))


def test_minhash_keeps_no_text_of_a_long_one() -> None:
    long_text = " ".join([TEXT, OTHER] * 7)
    item = planned(MinHashVerification(), "a", long_text)
    assert len(default_normalise(long_text)) >= 1000 and item.text is None
    assert item.signature is not None


def test_minhash_confirms_short_texts_by_exact_jaccard() -> None:
    policy = MinHashVerification()
    a, b = planned(policy, "a", TEXT), planned(policy, "b", EDITED)
    expected = similarity.jaccard(default_normalise(EDITED), default_normalise(TEXT), n=3)
    match = policy.confirm(b, kept_of(a), 3)
    assert expected >= 0.55 and match is not None
    assert (match.key, match.measure, match.score) == ("a", "jaccard", round(expected, 6))
    # EDITED holds nearly all of TEXT's 3-grams: containment (a rule of its own) off here
    strict = MinHashVerification(threshold=0.99, containment=None)
    kept = kept_of(planned(strict, "a", TEXT))
    assert strict.confirm(planned(strict, "b", EDITED), kept, 3) is None


def test_minhash_confirms_long_texts_by_the_estimate() -> None:
    policy = MinHashVerification()
    base = " ".join(f"Sentence number {i} tells of the harbour and the ships." for i in range(20))
    a, b = planned(policy, "a", base), planned(policy, "b", base + " One more line at the end.")
    assert a.signature is not None and b.signature is not None
    estimate = minhash.estimate(a.signature, b.signature)
    match = policy.confirm(b, kept_of(a), 3)
    assert estimate >= 0.55 and match is not None
    assert (match.measure, match.score) == ("minhash", round(estimate, 6))


def test_confirm_many_equals_confirm_pair_by_pair() -> None:
    policy = MinHashVerification()
    texts = [TEXT, EDITED, OTHER, OTHER + " Indeed.", TEXT.upper()]
    items = [planned(policy, str(i), text) for i, text in enumerate(texts)]
    news = [items[i] for i in range(len(items)) for _ in range(len(items))]
    olds = [kept_of(items[j]) for _ in range(len(items)) for j in range(len(items))]
    one_by_one = [policy.confirm(a, b, 3) for a, b in zip(news, olds, strict=True)]
    assert policy.confirm_many(news, olds, 3) == one_by_one
    assert sum(match is not None for match in one_by_one) > len(items)  # not all None


def _sharing(signature: bytes, equal: int) -> bytes:
    """A signature that agrees with ``signature`` on exactly its first ``equal`` values, of a
    text twice as big (the widest size ratio the default containment rule accepts)."""
    values = signature[: minhash.VALUES]
    changed = values[:equal] + bytes((value + 1) % 256 for value in values[equal:])
    size = minhash.size_of(signature)
    if size is None:
        return changed
    return changed + (2 * size).to_bytes(minhash.SIZE_BYTES, "little")


@pytest.mark.parametrize(
    "policy",
    [
        MinHashVerification(),
        MinHashVerification(prefilter=0.8, long_threshold=0.6, cjk_long_threshold=None),
        MinHashVerification(prefilter=0.7, long_threshold=0.9, cjk_long_threshold=0.5),
        # containment accepts the lowest estimates here
        MinHashVerification(prefilter=0.8, long_threshold=0.9, long_containment=0.9),
    ],
)
def test_no_rule_matches_below_the_least_equal_values(policy: MinHashVerification) -> None:
    short = planned(policy, "a", TEXT)  # an identical short text: only the estimate refuses it
    # 24 sentences (~1,300 normalised characters): longer than short_length (1000), so not kept
    long_text = " ".join(
        f"Sentence number {i} tells of the harbour and the ships." for i in range(24)
    )
    long = planned(policy, "b", long_text)
    chinese = planned(policy, "c", ZH_LONG)
    assert short.text is not None and long.text is None and chinese.text is None
    assert chinese.mostly_cjk
    least = policy.least_equal_values()
    assert 0 < least < minhash.VALUES
    for equal, expect_some in ((least - 1, False), (least, True)):
        decided = []
        for item in (short, long, chinese):
            assert item.signature is not None
            kept = kept_of(item)._replace(signature=_sharing(item.signature, equal))
            decided.append(policy.confirm(item, kept, 3))
            assert policy.confirm_many([item], [kept], 3) == decided[-1:]
        # below the bar every kind of pair is refused; at it, the rule with the lowest bar matches
        assert any(match is not None for match in decided) is expect_some, (equal, decided)


def test_an_unplanned_item_is_decided_by_distance_under_every_policy() -> None:
    value = fingerprint(TEXT)
    kept = Kept("k", value ^ 0b111, AT, None, None)  # 3 bits away
    for policy in (MinHashVerification(), SimHashVerification(), SimHashOnly()):
        assert policy.confirm(Item("q", value, None, 3), kept, 3) is not None
        assert policy.confirm(Item("q", value, None, 2), kept, 3) is None


def test_simhash_only_matches_near_empty_texts_only_at_distance_zero() -> None:
    policy = SimHashOnly(min_features=3)
    near_empty = Item("a", 1, 2, 3)
    policy.plan_many([near_empty], ["ok"], 3)
    assert near_empty.radius == 0
    full = Item("b", 1, 3, 3)
    policy.plan_many([full], ["ok ok ok"], 3)
    assert full.radius == 3


def test_simhash_verification_widens_the_radius_of_short_texts_only() -> None:
    policy = SimHashVerification(short_radius=7, threshold=0.8)
    short = planned(policy, "a", TEXT)
    assert (short.radius, short.threshold, short.text) == (7, 0.8, default_normalise(TEXT))
    long_item = planned(policy, "b", " ".join([TEXT] * 10))
    assert (long_item.radius, long_item.threshold, long_item.text) == (3, None, None)


def test_candidates_by_band_keys_or_by_radius() -> None:
    policy = MinHashVerification(min_bands=2, short_min_bands=1)
    a, b = planned(policy, "a", TEXT), planned(policy, "b", OTHER)  # both short
    assert policy.is_candidate(b, a, 1)  # one shared key makes a short text's candidate
    assert not policy.is_candidate(b, a, 0) or (a.fingerprint ^ b.fingerprint).bit_count() <= 3
    long_a = planned(policy, "la", " ".join([TEXT, OTHER] * 7))
    long_b = planned(policy, "lb", " ".join([OTHER, TEXT] * 7))
    assert long_b.text is None and policy.min_shared(long_b) == 2
    assert policy.is_candidate(long_b, long_a, 2)
    far = (long_a.fingerprint ^ long_b.fingerprint).bit_count() > 3
    assert not far or not policy.is_candidate(long_b, long_a, 1)  # a long text needs two
    unsigned = Item("u", b.fingerprint ^ 1, None, 3)  # a bare fingerprint, one bit away
    bare = Item("v", b.fingerprint ^ 2, None, 3)  # a row kept from a fingerprint
    assert policy.is_candidate(unsigned, bare, 0)  # two unsigned: the SimHash radius
    assert policy.is_candidate(b, bare, 0)  # a text meets an unsigned row by radius too
    # a signed row is found by its band keys only (not in the SimHash band indexes): a bare
    # fingerprint, which has none, never meets it, however near
    assert not policy.is_candidate(unsigned, b, 0)


def _as_given(value: object) -> str:
    """An option's value as a command line or an environment variable writes it."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def test_every_option_is_read_from_the_string_a_command_line_gives() -> None:
    # the reference: each default written out as a string reads back as itself, of its own type;
    # an option that may be None (its declared type in _OPTIONAL) reads "none" and "null" in any
    # case as None, and a number written out as a number of that type
    for name in POLICY_NAMES:
        for option, default in policy_options(name).items():
            if default is not None:
                made = getattr(policy_with(name, {option: _as_given(default)}), option)
                assert (made, type(made)) == (default, type(default)), (name, option)
            if option in _OPTIONAL:
                for written in ("none", "null", " NULL "):
                    assert getattr(policy_with(name, {option: written}), option) is None
                value = _OPTIONAL[option]("1" if _OPTIONAL[option] is int else "0.5")
                made = getattr(policy_with(name, {option: _as_given(value)}), option)
                assert (made, type(made)) == (value, type(value)), (name, option)


def test_a_bad_option_is_refused_with_what_to_give_instead() -> None:
    listed = ", ".join(f"{option}={value}" for option, value in policy_options("minhash").items())
    with pytest.raises(InvalidInput) as refused:
        policy_with("minhash", {"size": 1, "colour": "red"})
    assert (
        str(refused.value)
        == f"the minhash policy has no option colour, size; its options: {listed}"
    )
    with pytest.raises(InvalidInput) as refused:
        policy_with("simhash", {"threshold": 0.5})
    assert str(refused.value) == (
        "the simhash policy has no option threshold (it decides by distance: give max_distance);"
        " its options: min_features=3, expire_by_last_seen=False"
    )
    with pytest.raises(InvalidInput) as refused:
        policy_with("minhash", {"min_bands": "2.5"})
    assert str(refused.value) == "policy option min_bands of minhash takes int, not '2.5'"
    with pytest.raises(InvalidInput) as refused:
        policy_with("minhash", {"threshold": [1]})
    assert str(refused.value) == (
        "bad options for the minhash policy: threshold must be a number, not list"
    )
    with pytest.raises(InvalidInput) as refused:
        policy_with("lsh")
    assert (
        str(refused.value) == "policy must be one of minhash, simhash-verified, simhash, not 'lsh'"
    )


def test_a_recipe_this_simstore_cannot_make_is_refused_with_what_to_do() -> None:
    recipe = json.loads(MinHashVerification().recipe())
    with pytest.raises(PolicyMismatch, match=r"^unreadable policy recipe '\{'$"):
        policy_from_recipe("{")
    for unknown in ({**recipe, "recipe": 99}, {**recipe, "policy": "lsh"}):
        written = json.dumps(unknown)
        with pytest.raises(PolicyMismatch) as refused:
            policy_from_recipe(written)
        assert str(refused.value) == (
            f"the namespace records policy {written}, which this simstore cannot make: upgrade "
            "simstore, or pass the policy explicitly"
        )


# each count of the default policy with the least it takes (docs/policies.md's options): one under
# it is refused by name, the least itself is taken
_LEAST = {
    "short_length": 0,
    "min_bands": 1,
    "short_min_bands": 1,
    "max_replaced": 0,
    "opening_length": 1,
    "max_opening_replaced": 0,
    "boilerplate_texts": 1,
    "cjk_replaced": 0,
}


@pytest.mark.parametrize(("option", "least"), sorted(_LEAST.items()))
def test_each_count_is_refused_by_name_under_its_least(option: str, least: int) -> None:
    kind = "a non-negative int" if least == 0 else "a positive int"
    with pytest.raises(InvalidInput, match=rf"^{option} must be {kind}, got {least - 1}$"):
        MinHashVerification(**{option: least - 1})  # type: ignore[arg-type]
    assert getattr(MinHashVerification(**{option: least}), option) == least  # type: ignore[arg-type]
    with pytest.raises(InvalidType, match=rf"^{option} must be an int, not str$"):
        MinHashVerification(**{option: "2"})  # type: ignore[arg-type]


def test_an_unknown_band_layout_is_refused_with_the_layouts_there_are() -> None:
    with pytest.raises(InvalidInput, match=r"^minhash_bands: .*16x4, 20x3, 24x3, 32x3, not '5x5'$"):
        MinHashVerification(minhash_bands="5x5")


def test_a_recipe_in_a_few_words_names_what_differs_from_the_defaults() -> None:
    assert recipe_summary(None) == "-"  # a namespace that recorded none
    assert recipe_summary(MinHashVerification().recipe()) == "minhash"
    assert recipe_summary(MinHashVerification(max_replaced=None).recipe()) == (
        "minhash max_replaced=null"
    )
    # an option this simstore does not know is shown, whatever its value
    recipe = json.loads(SimHashOnly().recipe())
    recipe["params"]["colour"] = None
    assert recipe_summary(json.dumps(recipe)) == "simhash colour=null"
    assert recipe_summary("{not json") == "{not json"  # shown as it is


class _SignedByRadiusToo(MinHashVerification):
    """A caller's own candidate rule: a signed kept text within the radius is a candidate too."""

    @staticmethod
    def by_radius(item: Item, signature: bytes | None) -> bool:
        return True


def test_a_batch_shows_a_policy_with_its_own_candidate_rule_every_text_within_the_radius() -> None:
    # the batch's index keeps signed texts out of its SimHash bands only for the base rule
    # (keeps_base_candidate_rule); a rule of its own must see every text within the radius, as
    # is_candidate itself says
    for policy in (MinHashVerification(), _SignedByRadiusToo()):
        a = planned(policy, "a", TEXT)
        b = replace(planned(policy, "b", OTHER), fingerprint=a.fingerprint ^ 0b101)
        assert a.signature and b.signature and not set(a.band_keys) & set(b.band_keys)
        index = CandidateIndex(policy)
        index.add(0, a)
        assert index.candidates(b) == ([0] if policy.is_candidate(b, a, 0) else [])
        assert policy.is_candidate(b, a, 0) is isinstance(policy, _SignedByRadiusToo)


def test_invalid_policy_options_are_refused_with_simstore_errors() -> None:
    with pytest.raises(InvalidInput):
        MinHashVerification(min_bands=0)
    with pytest.raises(InvalidInput):
        SimHashOnly(min_features=-1)
    with pytest.raises(InvalidType):
        SimHashVerification(short_radius="7")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        SimHashVerification(threshold=1.5)
    with pytest.raises(InvalidType, match=r"^policy must be .*MinHashVerification.*not int$"):
        check_policy(3)
    assert check_policy(DEFAULT_POLICY) is DEFAULT_POLICY


def test_a_threshold_by_name_is_checked_as_a_fraction_before_the_policy_is_made() -> None:
    # the threshold's own message, whichever policy is named (simhash takes none, and would
    # otherwise say only that)
    with pytest.raises(InvalidType, match=r"^threshold must be a number, not str$"):
        policy_from("minhash", threshold="0.9")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match=r"^threshold must lie in \[0, 1\], got 5$"):
        policy_from("simhash", threshold=5)


def test_every_policy_describes_itself() -> None:
    for policy in (MinHashVerification(), SimHashVerification(), SimHashOnly()):
        assert policy.describe(3).startswith(policy.name)


# The policy line as ingest, whatif and the report print it, for the default and for options
# switched off one family at a time. The reference is each option's documented clause
# (docs/policies.md and the option's comment): a rule that is off has no words in the line.
_EVERY_RULE_OFF = {
    "identity_rule": False,
    "max_replaced": None,
    "opening_length": None,
    "containment": None,
    "long_containment": None,
    "cjk_long_threshold": None,
    "shared_lines_rest": None,
    "boilerplate_texts": None,
}
_SHORT_RULES = "jaccard >= 0.55 or containment >= 0.8"
_LINES = ", shared footers set aside (rest >= 0.3), lines of >= 3 earlier texts set aside"
_LONG_RULES = "estimate >= 0.7 (0.6 in CJK) or containment >= 0.95"
_BANDS = "minhash (>= 2 shared band keys, 1 for short texts; short texts: "


@pytest.mark.parametrize(
    ("options", "line"),
    [
        (
            {},  # the default, as the README's quick start shows it
            f"{_BANDS}{_SHORT_RULES}, identity swaps apart, Chinese nouns by jieba (<= 1 other "
            f"word(s) an edit){_LINES}; long: {_LONG_RULES}, identity swaps apart)",
        ),
        (
            {"cjk_replaced": None},
            f"{_BANDS}{_SHORT_RULES}, identity swaps apart{_LINES}; "
            f"long: {_LONG_RULES}, identity swaps apart)",
        ),
        (
            {"identity_rule": False},  # simstore 0.4's count of replaced words
            f"{_BANDS}{_SHORT_RULES}, look-alikes apart{_LINES}; "
            f"long: {_LONG_RULES}, look-alike openings apart)",
        ),
        (
            {"merge_identity_swaps": True},
            f"{_BANDS}{_SHORT_RULES}{_LINES}; long: {_LONG_RULES})",
        ),
        (
            {"merge_identity_swaps": True, "cjk_replaced": None},
            f"{_BANDS}{_SHORT_RULES}{_LINES}; long: {_LONG_RULES})",
        ),
        (_EVERY_RULE_OFF, f"{_BANDS}jaccard >= 0.55; long: estimate >= 0.7)"),
    ],
)
def test_the_policy_line_names_the_rules_that_are_on_and_no_other(
    options: dict[str, object], line: str
) -> None:
    assert MinHashVerification(**options).describe(3) == line  # type: ignore[arg-type]


def test_named_rows_equal_their_tables_columns() -> None:
    for table_name, row in ROWS.items():
        columns = [c.name for c in metadata.tables[table_name].c if c.name != "id"]
        assert list(row._fields) == columns


def test_policies_by_name_carry_the_threshold() -> None:
    from simstore.policy.policies import policy_from

    minhash_policy = policy_from("minhash", threshold=0.8)
    assert isinstance(minhash_policy, MinHashVerification)
    # the threshold is the short texts' measure, as the CLI's --threshold; long texts keep theirs
    assert (minhash_policy.threshold, minhash_policy.long_threshold) == (0.8, 0.70)
    verified = policy_from("simhash-verified", threshold=0.9)
    assert isinstance(verified, SimHashVerification) and verified.threshold == 0.9
    assert policy_from("simhash") == SimHashOnly()
    assert check_policy("simhash") == SimHashOnly()
    with pytest.raises(InvalidInput, match="distance"):
        policy_from("simhash", threshold=0.5)
    with pytest.raises(InvalidInput, match="one of"):
        policy_from("lsh")


def test_a_radius_with_a_text_is_refused_where_similarity_decides() -> None:
    from simstore.policy import batch
    from simstore.text.presets import get_preset

    raw = [("k", TEXT, None)]
    preset = get_preset("default")
    with pytest.raises(InvalidInput, match="max_distance has no meaning"):
        batch.plan_items(
            raw, preset=preset, policy=MinHashVerification(), max_distance=3, explicit=5
        )
    items = batch.plan_items(raw, preset=preset, policy=SimHashOnly(), max_distance=3, explicit=5)
    assert items[0].radius == 5 and not items[0].planned
    by_fingerprint = [("k", None, 7)]  # a fingerprint takes a radius under every policy
    items = batch.plan_items(
        by_fingerprint, preset=preset, policy=MinHashVerification(), max_distance=3, explicit=5
    )
    assert items[0].radius == 5


def test_short_look_alikes_of_one_template_are_not_duplicates() -> None:
    # the README's explain example: a review of other goods from the same template (Jaccard of
    # character 3-grams above the threshold, so the measure alone would merge them)
    policy = MinHashVerification()
    boots = planned(policy, "a", TEXT)
    vacuum = planned(policy, "b", TEXT.replace("hiking boots", "robot vacuum"))
    assert similarity.jaccard(TEXT, TEXT.replace("hiking boots", "robot vacuum")) >= 0.55
    assert policy.confirm(vacuum, kept_of(boots), 3) is None
    # recipe 1's count rule without its limits, and the identity rule with identity swaps merged
    for lenient in (
        MinHashVerification(identity_rule=False, max_replaced=None, numbers_matter=False),
        MinHashVerification(merge_identity_swaps=True),
    ):
        assert lenient.confirm(
            planned(lenient, "b", vacuum_text()), kept_of(planned(lenient, "a", TEXT)), 3
        )
    score = "Glenmoor Giants beat Ashford Arrows 4-0 on Saturday; Castillo scored twice."
    other = planned(policy, "c", score.replace("4-0", "3-0"))
    assert policy.confirm(other, kept_of(planned(policy, "d", score)), 3) is None
    typo = planned(policy, "e", TEXT.replace("stopped", "stoped"))  # a typo is an edit
    assert policy.confirm(typo, kept_of(boots), 3) is not None


def test_typos_are_not_replacements() -> None:
    # issue 36: three typos made a look-alike. Three characters put for others in a Chinese text
    # and three misspelt short English words: no word stands in for another (replacements = 0,
    # counted by hand), and the 3-gram Jaccard clears the threshold, so both merge
    policy = MinHashVerification()
    zh = "今天天气很好，我们一起去公园散步，看到很多人在湖边跑步和跳舞，非常热闹。"
    zh_typos = zh.replace("气", "汽").replace("们", "门").replace("闹", "脑")
    en = "We met at the old mill by the river and we had tea for an hour or so."
    en_typos = en.replace("the old", "teh old").replace("had", "hda").replace("so.", "os.")
    for text, edited in ((zh, zh_typos), (en, en_typos)):
        norm, norm_edited = default_normalise(text), default_normalise(edited)
        assert similarity.replacements(norm, norm_edited) == (0, False)
        assert similarity.jaccard(norm, norm_edited, normalise=False) >= policy.threshold
        match = policy.confirm(planned(policy, "b", edited), kept_of(planned(policy, "a", text)), 3)
        assert match is not None and match.measure == "jaccard"
    # recipe 1's rule (identity_rule=False): two words put for others (more than
    # max_replaced = 1) make a look-alike; the identity rule calls two ordinary words replaced
    # once each an edit (tests/policy/test_identity_rule.py)
    counted = MinHashVerification(identity_rule=False)
    swapped = planned(counted, "c", en.replace("mill", "barn").replace("tea", "gin"))
    assert counted.confirm(swapped, kept_of(planned(counted, "a", en)), 3) is None


BODY = "The council meets on Sunday to vote on the new bridge over the river Ash."
HEADER, FOOTER = "UPDATE: ", " Share this post with your friends and family today."


def test_a_short_text_contained_in_another_is_a_duplicate() -> None:
    # a header and footer added: every 3-gram of the body is in the wrapped text (the body is a
    # run of it), so containment is 1.0 by construction while Jaccard falls under the threshold
    policy = MinHashVerification()
    wrapped = HEADER + BODY + FOOTER
    norm, norm_wrapped = default_normalise(BODY), default_normalise(wrapped)
    assert similarity.jaccard(norm, norm_wrapped, normalise=False) < policy.threshold
    a, b = planned(policy, "a", BODY), planned(policy, "b", wrapped)
    match = policy.confirm(b, kept_of(a), 3)
    assert match is not None and (match.measure, match.score) == ("containment", 1.0)
    assert policy.confirm(a, kept_of(b), 3) is not None  # either way round
    off = MinHashVerification(containment=None)
    assert off.confirm(planned(off, "b", wrapped), kept_of(planned(off, "a", BODY)), 3) is None


def test_containment_keeps_its_guards() -> None:
    policy = MinHashVerification()
    # a few words found in a long text: the smaller has under half the bigger's 3-grams
    tiny, big = "the new bridge", BODY + FOOTER
    assert len(similarity.char_ngrams(default_normalise(tiny))) < 0.5 * len(
        similarity.char_ngrams(default_normalise(big))
    )
    assert policy.confirm(planned(policy, "b", big), kept_of(planned(policy, "a", tiny)), 3) is None
    # contained, but a number replaced: the look-alike rule still applies
    dated = "The council meets on Sunday 14 to vote on the new bridge over the river Ash."
    redated = HEADER + dated.replace("14", "21") + FOOTER
    a, b = planned(policy, "a", dated), planned(policy, "b", redated)
    assert policy.confirm(b, kept_of(a), 3) is None
    # two texts that share only a footer are not contained in each other
    other = "Road works close the east gate of the market until the end of March."
    c, d = planned(policy, "c", BODY + FOOTER), planned(policy, "d", other + FOOTER)
    assert policy.confirm(d, kept_of(c), 3) is None


def vacuum_text() -> str:
    return TEXT.replace("hiking boots", "robot vacuum")


def test_markup_is_not_compared() -> None:
    # two man page sources that share only roff's comment preamble and requests
    preamble = "'\\\" Copyright (c) 1994 Sun Microsystems, Inc.\n'\\\" See the file license.terms\n"
    a = (
        preamble
        + ".TH raise n\n.SH NAME\nraise \\- change a window's position in the stacking order"
    )
    b = (
        preamble
        + ".TH bindtags n\n.SH NAME\nbindtags \\- determine which bindings apply to a window"
    )
    policy = MinHashVerification()
    assert "Copyright" not in policy.prepare(a) and "\\-" not in policy.prepare(a)
    assert "stacking order" in policy.prepare(a)
    plain = MinHashVerification(strip_markup=False)
    assert plain.prepare(a) == a
    stripped = similarity.jaccard(policy.prepare(a), policy.prepare(b))
    assert stripped < similarity.jaccard(plain.prepare(a), plain.prepare(b))
    html = "<p>The <b>quick</b> fox &amp; the dog</p>"
    assert default_normalise(policy.prepare(html)) == "the quick fox the dog"


@settings(max_examples=200, deadline=None)
@given(
    st.text(
        st.one_of(
            st.characters(min_codepoint=0x3000, max_codepoint=0xA000),  # kana, the ideographs
            st.characters(min_codepoint=0xF800, max_codepoint=0xFB10),  # compatibility ones
            st.characters(codec="utf-8"),
        ),
        max_size=600,  # both sides of the numpy count's length
    )
)
def test_counting_chinese_and_japanese_characters(text: str) -> None:
    # the reference: a character class of the same ranges, written out here
    expected = len(re.findall(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]", text))
    assert _cjk_characters(text) == expected


@pytest.mark.parametrize(
    ("text", "chinese"),
    [
        ("中文ab", False),  # by hand: 2 Chinese characters of 4, half is not most
        ("中文a", True),  # 2 of 3
        ("中文 a", True),  # 2 of 3: a space is no character of the text's
        ("中 文 a b", False),  # 2 of 4
    ],
)
def test_a_text_is_chinese_when_more_than_half_its_characters_are(text: str, chinese: bool) -> None:
    assert planned(MinHashVerification(), "k", text).mostly_cjk is chinese


def test_a_long_text_mostly_in_chinese_has_its_own_threshold() -> None:
    # 27 copies (~1,030 normalised characters): longer than short_length (1000), so not kept
    zh = "今天天气很好，我们一起去公园散步，顺便看看湖边新开的花。明天可能下雨，出门记得带伞。" * 27
    items = {
        name: planned(MinHashVerification(), name, text)
        for name, text in (("zh", zh), ("en", " ".join([TEXT, OTHER] * 7)))
    }
    assert items["zh"].mostly_cjk and not items["en"].mostly_cjk
    edited = zh.replace("公园", "湖边", 3) + "这是新加的一句话，和原文无关。"
    policy = MinHashVerification(long_threshold=0.99, cjk_long_threshold=0.5)
    a, b = planned(policy, "a", zh), planned(policy, "b", edited)
    assert a.signature is not None and b.signature is not None
    estimate = minhash.estimate(a.signature, b.signature)
    assert 0.5 <= estimate < 0.99  # between the two thresholds: the CJK one decides
    assert policy.confirm(b, kept_of(a), 3) is not None
    assert (
        MinHashVerification(long_threshold=0.99, cjk_long_threshold=None).confirm(b, kept_of(a), 3)
        is None
    )


@pytest.mark.parametrize(
    "policy", [MinHashVerification(), MinHashVerification(strip_social=True)], ids=repr
)
def test_a_batch_is_planned_as_each_text_is_alone(policy: MinHashVerification) -> None:
    # plan_many normalises a batch in one pass; plan(), one text at a time, is the reference
    texts = [
        TEXT,
        EDITED,
        "<p>tags only</p>",
        "<br/>",  # stripped to nothing: compared whole
        "https://example.org/a @someone",
        ".TH LS 1\n.SH NAME\nls \\- list directory contents",
        "这是一个测试，全角标点。ＡＢＣ",
        "nul\x00inside",
        "",
        "x" * 400,
    ]
    alone = [Item(str(j), 1, None, 3) for j in range(len(texts))]
    for item, text in zip(alone, texts, strict=True):
        policy.plan(item, text, 3)
    policy.sign(alone)
    batch = [Item(str(j), 1, None, 3) for j in range(len(texts))]
    policy.plan_many(batch, texts, 3)
    for one, many in zip(alone, batch, strict=True):
        assert (one.normalised, one.text, one.mostly_cjk) == (
            many.normalised,
            many.text,
            many.mostly_cjk,
        )
        assert (one.signature, one.band_keys) == (many.signature, many.band_keys)
        assert many.planned


# The markup pattern of simstore 0.3 as one alternation: the reference strip_markup's four
# passes must agree with (after normalisation, which is all a policy compares).
_ONE_PATTERN = re.compile(
    r"^[.'][ \t]*\\\".*$"
    r"|^\.[A-Za-z]{1,3}\b"
    r"|\\f(?:[BIRP1-4]|\([A-Z]{2}|\[[A-Z]*\])|\\[(][^\s]{2}|\\[-&e|^~0]"
    r"|</?[A-Za-z][^<>]{0,200}>"
    r"|&(?:[A-Za-z]{2,8}|#\d{1,6}|#x[0-9A-Fa-f]{1,6});",
    re.MULTILINE,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(
    [".", "'", "\\", '"', "f", "B", "(", "[", "]", "<", ">", "/", "&", ";", "#", "x", "1", "a",
     "SH", "TH", "amp", "lt", " ", "\t", "\n", "-", "e", "~", "0", "é", "中"]
), max_size=40).map("".join))  # fmt: skip
def test_markup_is_stripped_as_the_single_pattern_strips_it(text: str) -> None:
    expected = default_normalise(_ONE_PATTERN.sub(" ", text))
    assert default_normalise(strip_markup(text)) == expected


def test_markup_stripping_removes_what_it_names() -> None:
    text = '.\\" generated by a tool\n.TH LS 1\n\\fBls\\fR lists <b>files</b> &amp; folders'
    # the comment line goes whole; a request goes, its arguments (LS 1) stay
    assert default_normalise(strip_markup(text)) == "ls 1 ls lists files folders"


def test_the_look_alike_rule_allows_exactly_max_replaced_words() -> None:
    # the boundary of the rule: as many replaced words as max_replaced is still a duplicate, one
    # more is a look-alike (a '>=' for the '>' failed no test before this one). Counted by hand:
    # "mill" -> "barn" is one word put for another, "tea" -> "gin" a second, "hour" -> "week" a
    # third; the sentence is long enough for the 3-gram Jaccard to clear 0.55 after each swap
    en = (
        "We met at the old mill by the river and we had tea for an hour or so, then walked back "
        "along the towpath to the station before the last train of the evening left."
    )
    swaps = [("mill", "barn"), ("tea", "gin"), ("hour", "week")]
    for limit in (1, 2):  # recipe 1's rule (the identity rule counts no words)
        policy = MinHashVerification(max_replaced=limit, identity_rule=False)
        kept = kept_of(planned(policy, "a", en))
        for count in (limit, limit + 1):
            edited = en
            for old, new in swaps[:count]:
                edited = edited.replace(old, new)
            norm, norm_edited = default_normalise(en), default_normalise(edited)
            assert similarity.replacements(norm, norm_edited) == (count, False)
            assert similarity.jaccard(norm, norm_edited, normalise=False) >= policy.threshold
            match = policy.confirm(planned(policy, "b", edited), kept, 3)
            assert (match is not None) is (count == limit), (limit, count)


def test_judge_reports_confirms_containment_for_long_texts() -> None:
    # a long text (not kept) and the same text with as much again added: the estimate (~.5) is
    # under long_threshold, yet the bigger holds all of the smaller's 5-grams
    policy = MinHashVerification()
    body = " ".join(f"Paragraph {i} says where the ferry to the islands stops." for i in range(16))
    added = " ".join(
        f"Reader {i} asks about the timetable for the winter months." for i in range(12)
    )
    a, b = planned(policy, "a", body), planned(policy, "b", body + " " + added)
    assert a.text is None and b.text is None  # decided by their signatures
    match = policy.confirm(b, kept_of(a), 3)
    assert match is not None and match.measure == "containment"
    judged = policy.judge(b, kept_of(a), 3)
    assert judged.matched and judged.reason == "duplicate"
    assert (judged.measure, judged.score) == ("containment", match.score)
    assert judged.threshold == policy.long_containment


def test_judge_reports_containment_for_short_texts_at_its_bar() -> None:
    # a short text and the same with a sentence added: 3-gram Jaccard under the threshold, but
    # the longer holds every 3-gram of the shorter (containment 1.0, by definition), which
    # reaches the bar (the greater of containment and threshold, as the policy's comment says)
    short = "We met at the old mill by the river and we had tea for an hour or so."
    longer = short + " Then we walked back to town along the canal and had a long dinner there."
    norm, norm_longer = compare_normalise(short), compare_normalise(longer)
    assert similarity.jaccard(norm, norm_longer, normalise=False) < 0.55  # 0.536
    for threshold, bar in ((0.55, 0.8), (0.85, 0.85)):
        policy = MinHashVerification(threshold=threshold)
        a, b = planned(policy, "a", short), planned(policy, "b", longer)
        assert a.text is not None and b.text is not None  # both short: the exact measures
        judged = policy.judge(b, kept_of(a), 3)
        assert (judged.measure, judged.score, judged.threshold) == ("containment", 1.0, bar)
        assert (judged.matched, judged.reason) == (True, "duplicate")
        assert judged.distance == (a.fingerprint ^ b.fingerprint).bit_count()


# Through a store: short texts decided by an exact measure

ORIGINAL = "Just tried the new hiking boots from Pelham. Looks nice, stopped working after a week!"
REPOST = "RT @sam: " + ORIGINAL
ZH = "今天天气很好，我们一起去公园散步，顺便看看湖边新开的花。明天可能下雨，出门记得带伞。"
ZH_REPOST = "转发：" + ZH


@pytest.mark.parametrize(("original", "repost"), [(ORIGINAL, REPOST), (ZH, ZH_REPOST)])
def test_a_short_repost_beyond_k3_is_confirmed_by_the_measure(
    make_store: StoreFactory, original: str, repost: str
) -> None:
    distance = hamming(fingerprint(original), fingerprint(repost))
    assert 3 < distance <= SimHashVerification().short_radius  # plain k = 3 would miss it
    store = make_store()
    assert store.add(original, key="a").inserted
    decision = store.add(repost, key="b")
    assert not decision.inserted and decision.duplicate_of is not None
    assert decision.duplicate_of.key == "a" and decision.duplicate_of.distance == distance
    assert decision.duplicate_of.measure == "jaccard"
    assert decision.duplicate_of.score is not None and decision.duplicate_of.score > 0.9
    assert [m.key for m in store.query(repost)] == ["a"]


def test_the_measure_is_recorded_for_auditors(make_store: StoreFactory, engine: Engine) -> None:
    store = make_store()
    store.add(ORIGINAL, key="a")
    store.add(REPOST, key="b")
    with engine.connect() as connection:
        row = connection.execute(
            sa.text(
                "SELECT d.duplicate_of, d.measure, d.score FROM simstore_decisions d "
                "JOIN simstore_namespaces n ON n.id = d.ns_id WHERE n.name = :ns AND d.key = 'b'"
            ),
            {"ns": store.namespace},
        ).one()
    assert row[0] == "a" and row[1] == "jaccard" and row[2] > 0.9


def test_without_verification_plain_k3_misses_the_repost(make_store: StoreFactory) -> None:
    store = make_store(policy=SimHashOnly())
    store.add(ORIGINAL, key="a")
    assert store.add(REPOST, key="b").inserted


def test_an_explicit_radius_means_plain_simhash_where_distance_decides_texts(
    make_store: StoreFactory,
) -> None:
    store = make_store(policy=SimHashVerification())
    store.add(ORIGINAL, key="a")
    assert not store.add(REPOST, key="b").inserted  # verified at the short texts' radius
    assert store.add(REPOST, key="c", max_distance=3).inserted  # plain k = 3 misses it


def test_a_radius_with_a_text_is_refused_under_minhash(make_store: StoreFactory) -> None:
    store = make_store()  # MinHashVerification decides texts by similarity, not distance
    store.add(ORIGINAL, key="a")
    with pytest.raises(InvalidInput, match="max_distance has no meaning"):
        store.add(REPOST, key="b", max_distance=3)
    with pytest.raises(InvalidInput, match="max_distance has no meaning"):
        store.query(REPOST, max_distance=3)
    assert store.get("b") is None  # nothing written
    assert [m.key for m in store.query(REPOST)] == ["a"]


def test_the_threshold_decides(make_store: StoreFactory) -> None:
    strict = make_store(policy=SimHashVerification(threshold=0.99))
    strict.add(ORIGINAL, key="a")
    assert strict.add(REPOST, key="b").inserted  # a candidate, but its score is below 0.99


def test_in_batch_items_are_verified_too(make_store: StoreFactory) -> None:
    store = make_store()
    decisions = list(store.add_many([("a", ORIGINAL), ("b", REPOST), ("c", "Something else.")]))
    assert [d.inserted for d in decisions] == [True, False, True]
    duplicate = decisions[1].duplicate_of
    assert duplicate is not None and duplicate.key == "a" and duplicate.measure == "jaccard"


def test_long_texts_keep_the_plain_radius_under_simhash_verification(
    make_store: StoreFactory,
) -> None:
    long_text = " ".join(
        f"sentence number {i} about storage engines and indexes." for i in range(20)
    )
    store = make_store(policy=SimHashVerification())
    first = store.add(long_text, key="long")
    assert first.inserted
    again = store.add(long_text + " One more.", key="long2")
    assert not again.inserted and again.duplicate_of is not None
    assert again.duplicate_of.measure is None  # decided by distance alone


@pytest.mark.parametrize(
    "options",
    [{"measure": "dice"}, {"threshold": 1.5}, {"short_radius": -1}, {"long_threshold": -0.1}],
)
def test_bad_policies_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        SimHashVerification(**options)  # type: ignore[arg-type]


@pytest.mark.parametrize("many", [1, _finder.MANY_CANDIDATES])
def test_candidates_under_the_bar_are_passed_over_without_changing_a_match(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch, many: int
) -> None:
    monkeypatch.setattr(_finder, "MANY_CANDIDATES", many)  # 1: every query's rows are filtered
    rng = random.Random(5)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(3000)]
    notice = "Please read the notice about the library opening hours."

    def tail(count: int) -> str:
        return " ".join(rng.choices(words, k=count))

    def with_words_inserted(text: str, count: int) -> str:
        tokens = text.split()
        for _ in range(count):
            tokens.insert(rng.randrange(len(tokens) + 1), rng.choice(words))
        return " ".join(tokens)

    kept = [f"{notice} {tail(12)}" for _ in range(300)]
    # one shared sentence with a short tail (band keys shared with many kept texts, little else),
    # and kept texts with nine words inserted: near-duplicates by the exact measure whose
    # signatures share a little more than the bar (34): 41 to 67 of 96 values, so that a bar
    # 8 values too high changes answers (checked)
    queries = [f"{notice} {tail(3)}" for _ in range(30)]
    queries += [with_words_inserted(text, 9) for text in kept[:30]]
    signed_kept, signed_queries = batch.sign(kept), batch.sign(queries)
    least = MinHashVerification().least_equal_values()
    under_the_bar = sum(
        minhash.matches(query.signature or b"", other.signature or b"") < least
        for query in signed_queries
        for other in signed_kept
        if set(query.band_keys) & set(other.band_keys)
    )
    assert under_the_bar > 100  # candidates the bar passes over

    store = make_store()
    assert all(d.inserted for d in store.add_many([(f"k{i}", t) for i, t in enumerate(kept)]))
    answers = [store.query(text) for text in queries]
    # the same store with the rule's bar taken away (the namespace refuses another policy)
    monkeypatch.setattr(MinHashVerification, "least_equal_values", lambda _self: 0)
    assert answers == [store.query(text) for text in queries]
    assert sum(bool(found) for found in answers) >= 10
