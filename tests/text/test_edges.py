"""The lines of a kept text (``simstore.text.edges``): how they are kept apart, and the lines two
texts share at their edges."""

from __future__ import annotations

from simstore.text.edges import LINE, joined, shared_edges


def test_a_text_of_two_lines_keeps_them_apart() -> None:
    # a message and its one-line signature: the fewest lines a text keeps apart
    assert joined(["see you at noon", "the team"], "see you at noon the team") == (
        "see you at noon" + LINE + "the team"
    )
    assert joined(["see you at noon", ""], "see you at noon") == "see you at noon"


def test_texts_that_share_lines_only_at_their_start_share_no_edges() -> None:
    # three lines each, the first shared and the last not: a header alone is no footer
    assert shared_edges("hi all\none\ntwo", "hi all\nthree\nfour") is None
    # nor do texts without any shared line
    assert shared_edges("one\ntwo\nthree", "four\nfive\nsix") is None


def test_what_remains_between_the_edges_is_each_text_s_lines_joined_by_spaces() -> None:
    edges = shared_edges("hi all\none two\nthree\nbest, bob", "hi all\nfour\nfive six\nbest, bob")
    assert edges is not None
    assert (edges.leading, edges.trailing, edges.own, edges.other) == (
        1,
        1,
        "one two three",
        "four five six",
    )
