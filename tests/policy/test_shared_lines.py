"""Lines two short texts share at their edges (a footer, a disclaimer, a signature) are set aside,
and what remains decides: two messages under one footer are told apart, a copy of one is not.

INDEPENDENT: the 3-gram Jaccard similarities that show the whole texts clear the threshold (so
that it is the shared lines that decide) are recomputed here with a plain set comprehension over
text written in normal form by hand (lowercase words, single spaces), never with simstore's code.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path

import pytest

import simstore.policy._minhash_policy as minhash_policy
from simstore.errors import InvalidInput
from simstore.policy import batch
from simstore.policy._base import Item
from simstore.policy.policies import (
    POLICIES,
    MinHashVerification,
    policy_from_recipe,
    policy_with,
)
from simstore.store import SimStore
from simstore.text._algorithms import default_normalise_many, nfkc
from simstore.text.edges import LINE, flat, joined, shared_edges
from simstore.text.normalise import compare_normalise, compare_normalise_many
from tests.conftest import StoreFactory

FOOTER = (
    "\n-- \n"
    "This message and any attachments are confidential and intended solely for the addressee.\n"
    "If you received it in error, please delete it and notify the sender at once.\n"
)
MEETING = "Can we move the meeting to Thursday?"
BUILD = "The build is broken again on main."
# the meeting message edited inside its line (a word added): a copy
MEETING_EDITED = "Can we move the meeting to Thursday please?"
# normal form of the footer's lines, by hand
FOOTER_NORMAL = (
    "this message and any attachments are confidential and intended solely for the addressee "
    "if you received it in error please delete it and notify the sender at once"
)


def grams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(len(text) - 2)}


def jaccard(a: str, b: str) -> Fraction:
    left, right = grams(a), grams(b)
    return Fraction(len(left & right), len(left | right))


def test_the_whole_texts_clear_the_threshold() -> None:
    # the premise of the tests below: without the rule the footer makes them duplicates
    whole = jaccard(
        f"can we move the meeting to thursday {FOOTER_NORMAL}",
        f"the build is broken again on main {FOOTER_NORMAL}",
    )
    assert whole > Fraction(55, 100)


def test_two_messages_under_one_footer_are_told_apart() -> None:
    verdicts = batch.dedup([MEETING + FOOTER, BUILD + FOOTER, MEETING_EDITED + FOOTER])
    assert [v.kept for v in verdicts] == [True, True, False]
    assert verdicts[2].duplicate_of == "0"  # the edited copy still is one
    # the rule off (a namespace recorded before it): the footer merges them, as before
    before = batch.dedup(
        [MEETING + FOOTER, BUILD + FOOTER], policy=MinHashVerification(shared_lines_rest=None)
    )
    assert before[1].duplicate_of == "0"


def test_a_copy_cut_short_or_a_line_edited_is_still_a_duplicate() -> None:
    body = (
        "The mirror will be down for maintenance on Saturday.\n"
        "Downloads resume on Sunday morning.\n"
        "Sorry for the trouble."
    )
    cut = "The mirror will be down for maintenance on Saturday.\nDownloads resume on Sun"
    typo = body.replace("maintenance", "maintenence")
    verdicts = batch.dedup([body + FOOTER, cut + FOOTER, typo + FOOTER])
    assert [v.duplicate_of for v in verdicts] == [None, "0", "0"]


def test_a_copy_cut_short_and_edited_under_a_footer_is_held_by_containment() -> None:
    # what remains of the copy (its first line, with a typo: no substring of the other's) is
    # little of what remains of the longer (Jaccard under the 0.3 bar), yet nearly all in it
    # (containment over 0.8, both by hand in normal form): a copy, not another message
    body = (
        "The mirror will be down for maintenance on Saturday.\n"
        "Downloads resume on Sunday morning.\nSorry for the trouble.\n"
        "We will post updates on the status page and on the mailing list as the work goes on.\n"
        "Thank you for your patience."
    )
    cut = "The mirror will be down for maintenence on Saturday."
    own = "the mirror will be down for maintenence on saturday"
    other = (
        "the mirror will be down for maintenance on saturday downloads resume on sunday morning "
        "sorry for the trouble we will post updates on the status page and on the mailing list "
        "as the work goes on thank you for your patience"
    )
    assert jaccard(own, other) < Fraction(3, 10) and containment(own, other) > Fraction(8, 10)
    assert [v.duplicate_of for v in batch.dedup([body + FOOTER, cut + FOOTER])] == [None, "0"]


def test_a_copy_whose_rest_is_contained_exactly_at_the_bar_is_held() -> None:
    # the same, edited until what remains of the copy is contained in the other's exactly at
    # the containment bar (40 of its 50 3-grams, by hand in normal form; found by a search over
    # random typos): held at the bar, as the short texts' containment is
    body = (
        "The mirror will be down for maintenance on Saturday.\n"
        "Downloads resume on Sunday morning.\nSorry for the trouble.\n"
        "We will post updates on the status page and on the mailing list as the work goes on.\n"
        "Thank you for your patience."
    )
    cut = "The mirror will bve down for maitenjance on Saturdawy."
    own, other = compare_normalise(cut), compare_normalise(body.replace("\n", " "))
    assert len(grams(own)) == 50 and containment(own, other) == Fraction(8, 10)
    assert jaccard(own, other) < Fraction(3, 10) and own not in other
    assert [v.duplicate_of for v in batch.dedup([body + FOOTER, cut + FOOTER])] == [None, "0"]


def test_a_greeting_and_a_signature_are_set_aside_too() -> None:
    first = "Hi all,\nThe new release is out today.\nBest regards,\nAlice Example"
    other = "Hi all,\nThe printer on floor two is jammed.\nBest regards,\nAlice Example"
    assert [v.kept for v in batch.dedup([first, other])] == [True, True]


def test_shared_edges_finds_the_blocks_and_leaves_contained_texts_alone() -> None:
    a = joined(["hi", "one", "two", "bye"], "hi one two bye")
    b = joined(["hi", "three", "bye"], "hi three bye")
    edges = shared_edges(a, b)
    assert edges is not None
    assert (edges.leading, edges.trailing, edges.own, edges.other) == (1, 1, "one two", "three")
    # one text is only lines of the other's edges: a copy with lines added (containment's)
    assert shared_edges(joined(["hi", "bye"], "hi bye"), b) is None
    assert shared_edges("hi one", b) is None  # a text of one line shares no block
    # shared at the start only: a quotation under another attribution, a copy cut short
    quote, other_quote = (
        joined(["quote", "by a"], "quote by a"),
        joined(["quote", "by b"], "quote by b"),
    )
    assert shared_edges(quote, other_quote) is None
    assert flat(a) == "hi one two bye"
    # lines that do not make the normalised text are not kept apart
    assert joined(["a", "b"], "a c") == "a c"


def test_the_lines_survive_the_store_and_decide_after_reopening(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'lines.sqlite'}"
    with SimStore(url) as store:
        assert store.add(MEETING + FOOTER, key="meeting").inserted
    with SimStore(url) as store:
        assert store.add(BUILD + FOOTER, key="build").inserted
        [judged] = [j for j in store.near_misses("build") if j.key == "meeting"]
        assert not judged.matched
        # the footer's two lines of words ("-- " has none, so it is no line of the kept text)
        assert judged.reason == (
            "alike only in the lines both share: 0 leading and 2 trailing line(s) set aside, "
            "the rest differs"
        )
        copy = store.add(MEETING_EDITED + FOOTER, key="copy")
        assert copy.duplicate_of is not None and copy.duplicate_of.key == "meeting"


def test_every_dialect_decides_as_the_batch(make_store: StoreFactory) -> None:
    store = make_store()
    texts = [MEETING + FOOTER, BUILD + FOOTER, MEETING_EDITED + FOOTER, MEETING]
    added = [store.add(text, key=str(i)) for i, text in enumerate(texts)]
    expected = batch.dedup(texts)
    assert [a.inserted for a in added] == [v.kept for v in expected]
    assert [a.duplicate_of.key if a.duplicate_of else None for a in added] == [
        v.duplicate_of for v in expected
    ]


def test_a_recipe_without_the_option_decides_as_before() -> None:
    recorded = (
        MinHashVerification(shared_lines_rest=None)
        .recipe()
        .replace(',"shared_lines_rest":null', "")
    )
    assert "shared_lines_rest" not in recorded
    assert policy_from_recipe(recorded).shared_lines_rest is None  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", [-0.1, 1.5, "0.3"])
def test_a_bad_value_is_refused(value: object) -> None:
    with pytest.raises(InvalidInput, match="shared_lines_rest"):
        MinHashVerification(shared_lines_rest=value)  # type: ignore[arg-type]


def test_every_option_that_may_be_none_takes_none_from_the_command_line() -> None:
    # every policy field annotated "... | None" must parse "none" (a recipe may record null)
    for name, cls in POLICIES.items():
        for field in dataclasses.fields(cls):  # type: ignore[arg-type]
            if "None" in str(field.type):
                made = policy_with(name, {field.name: "none"})
                assert getattr(made, field.name) is None, (name, field.name)


# two remainders under one footer, found by a search over random word lists (a shared start, then
# five or more other words on each side: a passage rewritten, no identity swap); their 3-gram
# Jaccard is computed here, just at and just under the 0.3 bar
EDGE_FOOTER = (
    "\nthis message and any attachments are confidential and intended solely for the addressee"
    "\nif you received it in error please delete it and notify the sender at once"
)
AT_BAR = (
    "saddle basket walnut yellow pocket paper thunder bridge engine harbor quiet ribbon river",
    "saddle basket walnut yellow pocket silver candle window violet morning",
)
UNDER_BAR = (
    "ribbon letter market quiet morning walnut garden meadow violet pocket river silver bridge "
    "paper valley",
    "ribbon letter market quiet morning walnut engine basket forest yellow lantern window candle "
    "winter",
)


def containment(a: str, b: str) -> Fraction:
    left, right = grams(a), grams(b)
    return Fraction(len(left & right), len(min(left, right, key=len)))


@pytest.mark.parametrize(("pair", "merged"), [(AT_BAR, True), (UNDER_BAR, False)])
def test_what_remains_decides_at_the_bar(pair: tuple[str, str], merged: bool) -> None:
    own, other = pair
    assert jaccard(own, other) == (Fraction(3, 10) if merged else Fraction(41, 137))
    assert containment(own, other) < Fraction(8, 10)  # containment does not rescue it
    whole = jaccard(own + EDGE_FOOTER.replace("\n", " "), other + EDGE_FOOTER.replace("\n", " "))
    assert whole >= Fraction(55, 100)  # the whole texts clear the threshold
    verdicts = batch.dedup([own + EDGE_FOOTER, other + EDGE_FOOTER])
    assert (verdicts[1].duplicate_of == "0") is merged
    if not merged:  # it is this bar that refuses it
        lower = MinHashVerification(shared_lines_rest=0.29)
        assert (
            batch.dedup([own + EDGE_FOOTER, other + EDGE_FOOTER], policy=lower)[1].duplicate_of
            == "0"
        )


def test_the_policy_line_says_shared_footers_are_set_aside() -> None:
    line = MinHashVerification().describe(3)
    assert "(<= 1 other word(s) an edit), shared footers set aside (rest >= 0.3), lines of" in line
    # another bar makes another line (``whatif`` shows the change); without the rule, no word of it
    assert "(rest >= 0.5)" in MinHashVerification(shared_lines_rest=0.5).describe(3)
    assert "footers" not in MinHashVerification(shared_lines_rest=None).describe(3)
    # no line of its own among the report's thresholds: the bar is on what remains of two texts,
    # not on the score a decision records, which the report's lines stand on
    assert MinHashVerification().thresholds(3) == MinHashVerification(
        shared_lines_rest=None
    ).thresholds(3)


# texts whose line breaks stand next to what normalisation looks at: a word broken by a hyphen, a
# flag and a ".net" opening a line, "c++" and "c#" ending one, a combining accent opening one, a
# capital sigma (casefold), fullwidth forms and a Hangul filler at the edges, a NUL, and every
# break ``str.splitlines`` knows
EDGY = [
    "objec-\ntive-c and asp.\nnet\n--verbose -v\n.net core",
    "we use c++\r\nand c#\rwith g++\n\nc++11 -- ok\n",
    "cafe\n\u0301 naive\u2028re\u0301sume\x85\u03a3\u039f\u03a3\n\u03a3",
    "\uff21\uff22\uff23\u3000\n\u3164x\u3164\x0bnul\x00here\x0cform\x1cfs\x1dgs\x1ers\u2029end",
    "\u6f22\u5b57\n\u304b\u306a\n\ud55c\uae00\n123.45\n6",
]


@pytest.mark.parametrize("keep_symbols", [True, False])
def test_a_text_normalised_by_lines_is_the_whole_text_normalised(keep_symbols: bool) -> None:
    # reference: the whole prepared text normalised at once (``normalise``), as plan did before
    policy = MinHashVerification(keep_symbols=keep_symbols)
    items = [Item(str(i), 0, None, 3) for i in range(len(EDGY))]
    policy.plan_many(items, EDGY, 3)
    for item, text in zip(items, EDGY, strict=True):
        whole = policy.normalise(policy.prepare(text))
        assert item.normalised == whole
        assert item.text is not None and flat(item.text) == whole and LINE in item.text
        alone = Item("alone", 0, None, 3)
        policy.plan(alone, text, 3)
        assert (alone.text, alone.normalised) == (item.text, item.normalised)


def test_a_short_text_with_lines_is_normalised_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # the real normalisers, wrapped to count the characters handed to them
    handed: list[str] = []
    one, many = compare_normalise, compare_normalise_many

    def counted_one(text: str) -> str:
        handed.append(text)
        return one(text)

    def counted_many(texts: Sequence[str]) -> list[str]:
        handed.extend(texts)
        return many(texts)

    monkeypatch.setattr(minhash_policy, "compare_normalise", counted_one)
    monkeypatch.setattr(minhash_policy, "compare_normalise_many", counted_many)
    policy, text = MinHashVerification(), MEETING + FOOTER
    item = Item("0", 0, None, 3)
    policy.plan_many([item], [text], 3)
    assert item.text is not None and LINE in item.text  # kept as its lines
    assert sum(map(len, handed)) <= len(text)
    handed.clear()
    policy.plan(Item("1", 0, None, 3), text, 3)
    assert sum(map(len, handed)) <= len(text)


def test_no_normalisation_reaches_across_a_line_break() -> None:
    # what normalising a text line by line stands on: each break of ``str.splitlines`` is white
    # space to the token patterns (no token holds one, and the patterns' look-arounds see it as
    # they see a text's edge), NFKC and casefold leave it alone, and it composes with nothing
    breaks = [chr(c) for c in range(0x110000) if len(f"a{chr(c)}b".splitlines()) == 2]
    assert breaks == list("\n\x0b\x0c\r\x1c\x1d\x1e\x85\u2028\u2029")
    for brk in breaks:
        assert re.fullmatch(r"\s", brk) and nfkc(brk) == brk and brk.casefold() == brk
        assert unicodedata.combining(brk) == 0 and not unicodedata.decomposition(brk)
    holding = [
        hex(c)
        for c in range(0x110000)
        if not 0xD800 <= c <= 0xDFFF
        and any(brk in unicodedata.normalize("NFKD", chr(c)) for brk in breaks)
        and chr(c) not in breaks
    ]
    assert holding == []


@pytest.mark.slow  # every character on both sides of three breaks: ~20 s a normaliser
@pytest.mark.parametrize("many", [default_normalise_many, compare_normalise_many])
def test_every_character_by_a_break_normalises_as_in_the_whole_text(
    many: Callable[[Sequence[str]], list[str]],
) -> None:
    """Normalised as the policy normalises a text kept as its lines: in batches, by the ``_many``
    form of its normaliser (``MinHashVerification._normal_forms``); each distinct line once."""
    differ = []
    for first in range(0, 0x110000, 4096):
        chars = [chr(p) for p in range(first, first + 4096) if not 0xD800 <= p <= 0xDFFF]
        # the three kinds of break in one text (a line feed, NEL, a paragraph separator), each
        # with the character on both sides, then between '#' and '-'
        texts = [
            "".join(f"a{c}{brk}{c}b#{brk}-{c}" for brk in ("\n", "\x85", "\u2029")) for c in chars
        ]
        split = [text.splitlines() for text in texts]
        distinct = list(dict.fromkeys(line for lines in split for line in lines))
        normal = dict(zip(distinct, many(distinct), strict=True))
        for text, whole, lines in zip(texts, many(texts), split, strict=True):
            if whole != " ".join(form for line in lines if (form := normal[line])):
                differ.append(text)
    assert differ == []
