"""Lines two short texts share at their edges (a footer, a disclaimer, a signature) are set aside,
and what remains decides: two messages under one footer are told apart, a copy of one is not.

INDEPENDENT: the 3-gram Jaccard similarities that show the whole texts clear the threshold (so
that it is the shared lines that decide) are recomputed here with a plain set comprehension over
text written in normal form by hand (lowercase words, single spaces), never with simstore's code.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path

import pytest

from simstore.errors import InvalidInput
from simstore.policy import batch
from simstore.policy.policies import (
    POLICIES,
    MinHashVerification,
    policy_from_recipe,
    policy_with,
)
from simstore.store import SimStore
from simstore.text.edges import flat, joined, shared_edges
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
    assert "identity swaps apart, shared footers set aside (rest >= 0.3); long:" in line
    # another bar makes another line (``whatif`` shows the change); without the rule, no word of it
    assert "(rest >= 0.5)" in MinHashVerification(shared_lines_rest=0.5).describe(3)
    assert "footers" not in MinHashVerification(shared_lines_rest=None).describe(3)
    # no line of its own among the report's thresholds: the bar is on what remains of two texts,
    # not on the score a decision records, which the report's lines stand on
    assert MinHashVerification().thresholds(3) == MinHashVerification(
        shared_lines_rest=None
    ).thresholds(3)
