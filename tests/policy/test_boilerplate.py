"""The memory of boilerplate without a store: lines many earlier texts carried set aside."""

from __future__ import annotations

import pytest

from simstore.errors import InvalidInput
from simstore.policy import batch
from simstore.policy.boilerplate import LineCounts, set_aside
from simstore.policy.policies import MinHashVerification, policy_from_recipe
from simstore.text.edges import (
    MARK,
    SEGMENT_LENGTH,
    marked,
    segment_key,
    segments,
    unmarked,
    without_lines,
)

FOOTER = (
    "This message and its attachments are confidential and meant for the addressee only.\n"
    "If you received it by mistake, please delete it and tell the sender."
)
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
MESSAGES = [
    f"The meeting about project {word} moved to room {number} on Thursday afternoon"
    for number, word in enumerate(WORDS, start=11)
]


def _verdicts(texts: list[str], least: int | None) -> list[tuple[bool, str | None]]:
    policy = MinHashVerification(boilerplate_texts=least)
    return [(v.kept, v.duplicate_of) for v in batch.dedup(texts, policy=policy)]


def test_a_message_re_sent_without_a_recurring_footer_finds_its_copy_under_it() -> None:
    # five messages under one footer, then the fifth message alone: with a memory of 3 the
    # footer is boilerplate from the fourth text on, so the fifth was kept as its message, and
    # the bare message (the same words) is its duplicate; the first, kept before the footer was
    # boilerplate, keeps its footer and is not found (its message is half its 3-grams)
    texts = [message + "\n\n" + FOOTER for message in MESSAGES[:5]] + [MESSAGES[4], MESSAGES[0]]
    assert _verdicts(texts, 3)[5:] == [(False, "4"), (True, None)]
    assert _verdicts(texts, None)[5:] == [(True, None), (True, None)]  # no memory: missed


def test_a_kept_text_from_before_loses_the_lines_that_are_boilerplate_for_the_new_one() -> None:
    # the first text is kept with its footer; the fifth carries the first's message under the
    # same footer, now boilerplate for it: its message alone is compared with the first's
    # message alone (the kept text loses the same lines), and they are the same
    texts = [message + "\n\n" + FOOTER for message in MESSAGES[:4]]
    texts.append(MESSAGES[0] + " today\n\n" + FOOTER)
    found = _verdicts(texts, 3)[4]
    assert found == (False, "0")


def test_messages_under_one_footer_stay_apart_with_the_memory() -> None:
    texts = [message + "\n\n" + FOOTER for message in MESSAGES]
    assert all(kept for kept, _of in _verdicts(texts, 3))


def test_the_count_a_text_sees_is_of_the_texts_before_it_whatever_was_decided() -> None:
    # a duplicate counts too: three copies of one text make its lines boilerplate for a fourth
    counts = LineCounts(3)
    keys = (1, 2)
    assert [counts.see(keys) for _ in range(4)] == [frozenset()] * 3 + [frozenset(keys)]
    assert counts.added[0, 1] == 4
    # a query sees without counting
    assert counts.common(keys) == frozenset(keys)
    assert counts.counts[1] == 4


def test_setting_aside_again_gives_what_setting_aside_once_gives() -> None:
    # a transaction tried again sets its items aside again, maybe with other counts
    policy = MinHashVerification(boilerplate_texts=1)
    text = MESSAGES[0] + "\n\n" + FOOTER
    # the footer's lines only (every line common would leave nothing: the text stays whole)
    footer = [segment_key(policy.normalise(line)) for line in FOOTER.split("\n")]
    (once,) = batch.sign([text], policy=policy)
    (twice,) = batch.sign([text], policy=policy)
    set_aside(policy, [once], LineCounts(1, dict.fromkeys(footer, 1)))
    assert once.whole is not None and once.boilerplate == frozenset(footer)
    set_aside(policy, [twice], LineCounts(1))  # nothing common: stays whole
    assert twice.whole is None and twice.boilerplate == frozenset()
    set_aside(policy, [twice], LineCounts(1, dict.fromkeys(footer, 5)))
    set_aside(policy, [twice], LineCounts(1, dict.fromkeys(footer, 5)))
    assert (twice.text, twice.signature, twice.band_keys) == (
        once.text,
        once.signature,
        once.band_keys,
    )
    set_aside(policy, [twice], LineCounts(1))  # then nothing common: whole again
    (whole,) = batch.sign([text], policy=policy)
    assert (twice.text, twice.signature, twice.band_keys, twice.whole) == (
        whole.text,
        whole.signature,
        whole.band_keys,
        None,
    )


def test_segments_are_the_lines_of_a_text_of_several_lines_long_enough_to_say_something() -> None:
    text = "hello there, friend\n--\nsigned by the whole team"
    assert segments(text) == tuple(
        sorted({segment_key("hello there, friend"), segment_key("signed by the whole team")})
    )
    assert segments("one line only, however long it is") == ()
    assert segments(None) == ()
    assert len("--") < SEGMENT_LENGTH


def test_without_lines_keeps_a_text_that_would_be_left_with_less_than_a_segment() -> None:
    text = "a message of some words\nthe footer line here"
    assert without_lines(text, {segment_key("the footer line here")}) == "a message of some words"
    every = {segment_key(line) for line in text.split("\n")}
    assert without_lines(text, every) == text
    assert without_lines("hi\nthe footer line here", {segment_key("the footer line here")}) == (
        "hi\nthe footer line here"
    )


def test_the_option_is_checked_and_recorded_and_recipes_from_before_keep_none() -> None:
    with pytest.raises(InvalidInput, match="boilerplate_texts"):
        MinHashVerification(boilerplate_texts=0)
    policy = MinHashVerification(boilerplate_texts=5)
    assert '"boilerplate_texts":5' in policy.recipe()
    assert policy_from_recipe(policy.recipe()) == policy
    older = policy.recipe().replace('"boilerplate_texts":5,', "")
    assert policy_from_recipe(older).boilerplate_least is None
    assert "lines of >= 5 earlier texts set aside" in policy.describe(3)


def test_a_line_set_aside_still_tells_two_versions_apart() -> None:
    # three pages end in one signature line naming version 2.73 (boilerplate from then on); a
    # fourth page ends in it too and is kept without it, then a copy of that page names 2.76:
    # what remains of the two is alike, but the whole texts differ by a version (a number)
    signature = "-- Osamu Aoki, Debian Reference (version 2.73)"
    pages = [f"{message}\n{signature}" for message in MESSAGES[:4]]
    bumped = MESSAGES[3] + "\n" + signature.replace("2.73", "2.76")
    verdicts = _verdicts([*pages, bumped], 3)
    assert verdicts[4] == (True, None)
    # the same copy with the same version is a duplicate
    assert _verdicts([*pages, pages[3] + " "], 3)[4] == (False, "3")


def test_a_line_set_aside_from_the_new_text_still_tells_two_versions_apart() -> None:
    # the other way round: a page naming 2.76 is kept first, then three pages end in the 2.73
    # line (boilerplate from then on), then the first page's message under 2.73 comes, set
    # aside to its message alone: its whole text still differs from the kept one by a version
    signature = "-- Osamu Aoki, Debian Reference (version 2.73)"
    pages = [f"{message}\n{signature}" for message in MESSAGES[:3]]
    first = MESSAGES[3] + "\n" + signature.replace("2.73", "2.76")
    again = MESSAGES[3] + "\n" + signature
    assert _verdicts([first, *pages, again], 3)[4] == (True, None)
    # under the same version it is a duplicate
    assert _verdicts([again, *pages, again + " "], 3)[4] == (False, "0")


def test_a_segment_is_a_line_of_eight_characters_or_more() -> None:
    # SEGMENT_LENGTH's edge: a line of 7 characters says nothing, one of 8 is counted
    seven, eight = "abcdefg", "abcdefgh"
    assert segments(f"{seven}\n{eight}") == (segment_key(eight),)
    assert len(eight) == SEGMENT_LENGTH


def test_a_line_is_boilerplate_once_exactly_least_earlier_texts_carried_it() -> None:
    # a line never seen is no boilerplate, even with a memory of one text
    once = LineCounts(1)
    assert once.common((7,)) == frozenset()
    assert [once.see((7,)) for _ in range(2)] == [frozenset(), frozenset({7})]
    # ``least`` earlier texts are enough, for a query as for an add
    three = LineCounts(3, {1: 3, 2: 2})
    assert three.common((1, 2)) == frozenset({1})
    assert three.see((1, 2)) == frozenset({1})


def test_a_line_of_eight_characters_is_set_aside_and_marked_and_enough_to_compare() -> None:
    # SEGMENT_LENGTH's edge in without_lines and marked, both sides
    eight, footer = "abcdefgh", "the footer line here"
    assert len(eight) == SEGMENT_LENGTH
    assert without_lines(f"a message of words\n{eight}", {segment_key(eight)}) == (
        "a message of words"
    )
    # what remains may be a single line of eight characters, not of seven
    assert without_lines(f"{eight}\n{footer}", {segment_key(footer)}) == eight
    assert without_lines(f"{eight[:7]}\n{footer}", {segment_key(footer)}) == (
        f"{eight[:7]}\n{footer}"
    )
    stored = marked(f"{eight}\na message of words", {segment_key(eight)})
    assert stored == f"{MARK}{eight}\na message of words"
    assert unmarked(stored) == (
        "a message of words",
        f"{eight}\na message of words",
        frozenset({segment_key(eight)}),
    )


def test_a_text_set_aside_is_planned_as_the_lines_left_and_only_once() -> None:
    # a short Chinese message under a longer English footer: whole, most of its characters are
    # Latin; its message alone is Chinese, and the rules for Chinese text must apply to it (the
    # reference: the message planned on its own)
    policy = MinHashVerification(boilerplate_texts=1)
    message = "今天下午三点在二楼会议室开会，请大家准时参加并带上上周的报告。"
    footer = frozenset(segment_key(policy.normalise(line)) for line in FOOTER.split("\n"))
    (item,) = batch.sign([message + "\n\n" + FOOTER], policy=policy)
    (alone,) = batch.sign([message], policy=policy)
    assert (item.mostly_cjk, alone.mostly_cjk) == (False, True)
    assert policy.set_aside(item, footer) is True
    planned = (item.text, item.normalised, item.mostly_cjk)
    assert planned == (alone.text, alone.normalised, alone.mostly_cjk)
    assert policy.set_aside(item, footer) is False  # set aside again: the same, nothing to sign
    # a long text has no lines to set aside, and says so
    (long_item,) = batch.sign([" ".join(MESSAGES * 3) + "\n\n" + FOOTER], policy=policy)
    assert long_item.text is None
    assert policy.set_aside(long_item, footer) is False
