"""The hard cases of the quality benchmark (``benchmarks/quality/hard.py``) and the scoring of
``evaluate_policy.py``: labelling, splitting and table drawing on small real inputs.

No network and no store; a test that reads a Debian file skips, naming the file, when it is absent.
"""

from __future__ import annotations

import dataclasses
import os
import random
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import need_module
from tests.package.test_quality_benchmark import _load

build_dataset = _load("build_dataset")
hard = _load("hard")
evaluate_policy = _load("evaluate_policy")

TABLE = """    +---------------------+
    | package |popcon|size|
    |---------+------+----|
    |mc       |V:54, |1482|
    +---------------------+"""

STATUS = """Package: libfoo1
Status: install ok installed
Source: foo
Description: library for frobbing foos
 Foo frobs things quickly.
 .
 This package contains the shared library.

Package: libfoo-dev
Status: install ok installed
Source: foo (1.2-3)
Description: development files for frobbing foos
 Foo frobs things quickly.
 .
 This package contains the header files.

Package: bar
Status: install ok installed
Description: bar tool
 Bar does other things.
"""


def _required_in_ci(what: str) -> None:
    """Skip without ``what``, except in CI (``.ci/run`` installs it): there it is a failure."""
    if os.environ.get("SIMSTORE_REQUIRE_SERVERS") == "1":
        pytest.fail(f"{what} is required in CI (.ci/run installs it)")
    pytest.skip(f"{what} is not installed here")


def _real(path: str) -> Path:
    found = Path(path)
    if not found.exists():
        _required_in_ci(path)
    return found


# --- tables ------------------------------------------------------------------------------------


def test_box_drawing_keeps_the_cells_and_draws_the_frame() -> None:
    box = hard.to_box(TABLE)
    lines = box.split("\n")
    assert lines[0].strip() == "┌" + "─" * 21 + "┐"
    assert lines[2].strip().startswith("├─") and lines[2].strip().endswith("┤")
    assert "┼" in lines[2]
    assert lines[-1].strip() == "└" + "─" * 21 + "┘"
    assert not set("+|-") & set(box.replace("V:54,", ""))  # no ASCII frame left
    # the same content: removing either frame leaves the same cells
    frame = str.maketrans("", "", "+-|┌┐└┘├┤┬┴┼─│")
    assert box.translate(frame).split() == TABLE.translate(frame).split()


def test_ascii_tables_are_found_with_their_caption() -> None:
    text = f"intro\n\n    Table 1.1. Packages\n\n{TABLE}\n\nafter"
    assert hard.ascii_tables(text) == [("Table 1.1. Packages", TABLE)]


def test_real_reference_tables_are_box_ascii_duplicates_and_frame_negatives() -> None:
    for tag in ("en", "zh-cn"):  # hard.table_docs reads both (debian-reference-en, -zh-cn)
        _real(f"/usr/share/debian-reference/debian-reference.{tag}.txt.gz")
    docs = hard.table_docs()
    assert len(docs) > 50
    pairs = hard.table_pairs(random.Random(1), docs[:40], seed=6)
    dups = [p for p in pairs if p.kind == "table_box_ascii"]
    negatives = [p for p in pairs if p.kind == "table_frame"]
    assert dups and negatives
    assert all(p.label == 1 for p in dups) and all(p.label == 0 for p in negatives)
    assert all(("┌" in p.a) != ("┌" in p.b) for p in dups)  # one side each way
    assert all(p.a != p.b for p in negatives)


# --- copyright files, packages, man pages ------------------------------------------------------


def test_holders_ignore_years_and_tell_packages_apart() -> None:
    a = "Files: *\nCopyright: 2001-2006 Bart Massey, Jamey Sharp\nLicense: MIT\n"
    b = "Files: *\nCopyright: 2010, 2012 Bart Massey, Jamey Sharp\nLicense: MIT\n"
    c = "Files: *\nCopyright: 1999 Free Software Foundation, Inc.\nLicense: MIT\n"
    assert hard.holders(a) == hard.holders(b) == {"bart massey jamey sharp"}
    assert not hard.different_holders(a, b)
    assert hard.different_holders(a, c)


def test_real_copyright_negatives_are_other_sources_in_one_half() -> None:
    _real("/usr/share/doc/libc6/copyright")
    docs = hard.copyright_docs()
    assert len({d.owner for d in docs}) == len(docs)  # one document per source package
    pairs = hard.nearest_negatives(
        random.Random(2), docs[:80], "copyright", 6, 1, hard.different_holders
    )
    assert pairs
    by_text = {d.text: d for d in docs}
    for pair in pairs:
        left, right = by_text[pair.a], by_text[pair.b]
        assert pair.label == 0 and left.owner != right.owner
        assert hard.half(6, left.key) == hard.half(6, right.key)
        assert hard.different_holders(pair.a, pair.b)


def test_package_descriptions_keep_name_source_and_paragraphs(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text(STATUS)
    docs = {d.owner: d for d in hard.package_docs(status)}
    assert docs["libfoo-dev"].family == docs["libfoo1"].family == "foo"
    assert docs["bar"].family == "bar"
    assert docs["libfoo1"].text == (
        "libfoo1 - library for frobbing foos\n\nFoo frobs things quickly.\n\n"
        "This package contains the shared library."
    )
    pairs = hard.nearest_negatives(random.Random(0), list(docs.values()), "package_siblings", 6)
    assert all({p.a, p.b} != {docs["bar"].text} for p in pairs)
    for pair in pairs:  # siblings only, never a package with itself or another source
        assert {pair.a, pair.b} == {docs["libfoo1"].text, docs["libfoo-dev"].text}


def test_a_page_contained_in_another_is_no_negative() -> None:
    page = "NAME\n ls - list directory contents\nDESCRIPTION\n List information about files."
    docs = [
        hard.Doc("man:x:a", "a", "x", "en", page),
        hard.Doc("man:x:b", "b", "x", "en", page + "\nSEE ALSO\n dir(1)"),
    ]
    assert hard.containment(docs[0].text, docs[1].text, "en") == 1.0
    assert hard.nearest_negatives(random.Random(0), docs, "man_family", 6) == []


def test_render_man_reflows_one_page() -> None:
    if shutil.which("groff") is None:
        _required_in_ci("groff")
    source = b".TH T 1\n.SH NAME\nt \\- " + b"word " * 40 + b"\n"
    wide, narrow = hard.render_man(source, 80), hard.render_man(source, 40)
    assert "NAME" in wide and wide != narrow
    assert max(map(len, narrow.splitlines())) <= 40 < max(map(len, wide.splitlines()))
    assert "word word" in narrow


# --- halves ------------------------------------------------------------------------------------


def test_every_text_of_one_man_page_shares_its_half() -> None:
    key = build_dataset.split_key
    assert (
        key("manpages-zh:ls.1#long:3") == key("manpages-zh:ls.1:7") == key("man:manpages-zh:ls.1")
    )
    assert key("man:git:git-add.1") == "man:git:git-add.1"
    assert key("fortunes:art:3|fortunes:men:4") == "fortunes:art:3|fortunes:men:4"
    halves = {build_dataset.half_of(6, f"manpages:ls.1:{n}") for n in range(30)}
    assert len(halves) == 1
    assert {build_dataset.half_of(6, f"doc{n}") for n in range(30)} == {"tune", "test"}


def pair_half(pair: object) -> str:
    return str(build_dataset.assign_split([pair], 6)[0].split)


def test_footer_pairs_stay_in_one_half_and_within_their_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    Text = build_dataset.Text
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    rng = random.Random(3)
    pool = [
        Text("src", f"d{n}", n, "en", " ".join(rng.sample(words, 6)) + f" number {n} " * 3)
        for n in range(40)
    ]
    wrappers = [
        f"Disclaimer {n}: " + "no warranty of any kind is given here. " * 3 for n in range(8)
    ]
    monkeypatch.setattr(hard, "footers", lambda: {"en": wrappers, "zh": []})
    pairs = hard.footer_pairs(random.Random(0), {("en", "short"): pool}, seed=6, per_group=20)
    assert pairs
    where = {t.text: t for t in pool}
    for pair in pairs:
        first, second = pair.a.split("\n\n", 1), pair.b.split("\n\n", 1)
        assert first[1] == second[1] and first[0] != second[0]  # one footer, two texts
        left, right = where[first[0]], where[second[0]]
        assert pair.b_from == build_dataset.ident(right)  # b is the other text, with the footer
        half = hard.half(6, build_dataset.ident(left))
        assert hard.half(6, build_dataset.ident(right)) == half == pair_half(pair)
        for block in first[1].split("\n\n"):  # one block or several, each of the same half
            assert block in wrappers and hard.half(6, f"footer:{block}") == half
        shorter = min(len(first[0]), len(second[0]))
        assert 0.35 <= len(first[1]) / (len(first[1]) + shorter) <= 0.7


# --- look-alikes -------------------------------------------------------------------------------


def test_lookalikes_swap_at_least_two_slots_and_are_seeded() -> None:
    fillers = {"name": ["Boston", "Denver", "Austin"]}
    text = "The train from Paris to Lyon leaves at 9 and costs 40 euros."
    first = hard.lookalike(random.Random(5), text, "en", fillers)
    assert first == hard.lookalike(random.Random(5), text, "en", fillers)
    assert first is not None and first != text
    assert "40" not in first.split() or "9" not in first.split()
    assert hard.lookalike(random.Random(5), "nothing to swap here at all.", "en", fillers) is None


def test_chinese_lookalikes_use_nouns_of_the_pool() -> None:
    need_module("jieba", "zh")
    pool = [
        "这家酒店的房间很干净，服务员态度很好，早餐有10种。",
        "这款手机的屏幕很清楚，电池用了3天。",
    ]
    fillers = hard.slot_fillers(pool, "zh")
    assert any("酒店" in words or "手机" in words for words in fillers.values())
    other = hard.lookalike(random.Random(1), pool[0], "zh", fillers)
    assert other is not None and other != pool[0] and "10" not in other


# --- the stream's scoring ----------------------------------------------------------------------


def _item(key: str, text: str, cluster: str, hours: float) -> dict[str, object]:
    return {
        "key": key,
        "text": text,
        "cluster": cluster,
        "at": datetime(2026, 1, 5) + timedelta(hours=hours),
    }


def test_stream_scoring_counts_window_and_clusters() -> None:
    items = [
        _item("s0", "a", "A", 0),
        _item("s1", "a2", "A", 1),  # found: TP
        _item("s2", "b", "B", 2),
        _item("s3", "b2", "B", 3),  # missed: FN
        _item("s4", "c", "C", 4),  # wrongly merged into A, labelled negative: FP
        _item("s5", "a3", "A", 60),  # A's kept member is past the window: keeping is right
        _item("s6", "a4", "A", 61),  # duplicate of s5 (in the window): TP
        _item("s7", "a5", "A", 62),  # pointed at s0, past the window: FP and FN
    ]
    facts = {
        "groups": {i["text"]: "en-short" for i in items},
        "families": {i["text"]: {str(i["cluster"])} for i in items},
        "negatives": {frozenset(("c", "a"))},
    }
    targets = [None, "s0", None, None, "s0", None, "s5", "s0"]
    scored = evaluate_policy.score_stream(items, targets, facts)
    total = scored["total"]
    assert (total.tp, total.fp, total.fn) == (2, 2, 2)
    assert scored["past_window"] == 1


def test_stream_items_cover_three_days_in_time_order() -> None:
    Pair = build_dataset.Pair
    pairs = [
        Pair("en-short", "en", "short", 1, "typos", 1, "s", f"f{n}", f"text {n}", f"txet {n}")
        for n in range(50)
    ] + [Pair("en-short", "en", "short", 0, "random", 0, "s", "g", "text 1", "other")]
    items, facts = evaluate_policy.stream_items(pairs)
    assert len(items) == 101
    moments = [i["at"] for i in items]
    assert moments == sorted(moments)
    assert moments[-1] - moments[0] <= timedelta(hours=72)
    clusters = {i["text"]: i["cluster"] for i in items}
    assert clusters["text 3"] == clusters["txet 3"] != clusters["text 4"]
    assert clusters["other"] not in {clusters["text 1"]}
    assert frozenset(("text 1", "other")) in facts["negatives"]


def test_a_wrapped_copy_of_another_pairs_text_is_unlabelled_not_false() -> None:
    assert evaluate_policy.inside("Keep it short.", "HEADER keep it short! footer")
    assert not evaluate_policy.inside("Keep it short.", "Keep it long, footer")
    items = [_item("s0", "Keep it short.", "A", 0), _item("s1", "Hi: keep it short! bye", "B", 1)]
    facts = {
        "groups": {i["text"]: "en-short" for i in items},
        "families": {"Keep it short.": {"f1"}, "Hi: keep it short! bye": {"f2"}},
        "negatives": set(),
    }
    scored = evaluate_policy.score_stream(items, [None, "s0"], facts)
    assert scored["unlabelled"] == 1 and scored["total"].fp == 0
    facts["negatives"] = {frozenset(i["text"] for i in items)}  # labelled: a false duplicate
    assert evaluate_policy.score_stream(items, [None, "s0"], facts)["total"].fp == 1


def test_lookalike_pairs_swap_the_body_not_the_attribution() -> None:
    Text = build_dataset.Text
    quote = "Paris and Lyon have 3 bridges and 5 parks, said the mayor."
    item = Text("fortunes", "f", 0, "en", f"{quote}\n    -- Linus Torvalds", "-- Linus Torvalds")
    donors = [Text("fortunes", "f", n, "en", f"Then Boston, and Denver {n}.") for n in range(1, 4)]
    pairs = hard.lookalike_pairs(random.Random(0), {("en", "short"): [item, *donors]}, 5)
    made = [p for p in pairs if p.a == item.text]
    assert made and all(p.label == 0 and p.kind == "lookalike" for p in made)
    for pair in made:
        assert pair.b.endswith("\n    -- Linus Torvalds") and not pair.b.startswith(quote)


def test_a_negatives_second_text_is_related_to_the_text_it_was_made_from() -> None:
    # "y" has a typo'd copy (its own pair); a shared-footer negative wraps x and an edited y in
    # one footer. Merging that wrapped y into y's cluster relates two copies of one passage that
    # no label relates: unlabelled. Without b_from it is counted a false duplicate.
    Pair = build_dataset.Pair
    footer = " Sent from the office."
    y, wrapped = "Meet at noon, hall.", "Meet at noon, the hall." + footer
    pairs = [
        Pair("en-short", "en", "short", 1, "typos", 1, "s", "s:y:0", y, "Meet at nonn, hall."),
        Pair("en-short", "en", "short", 0, "shared_footer", 0, "s", "s:x:0", "Bring keys." + footer,
             wrapped, b_from="s:y:0"),
    ]  # fmt: skip

    def scored(pairs: list[Any]) -> tuple[int, int]:
        items, facts = evaluate_policy.stream_items(pairs)
        order = [i["text"] for i in items]
        first, later = sorted((order.index(y), order.index(wrapped)))
        targets: list[str | None] = [None] * len(items)
        targets[later] = items[first]["key"]  # the later of the two called the other's copy
        result = evaluate_policy.score_stream(items, targets, facts)
        return result["unlabelled"], result["total"].fp

    assert scored(pairs) == (1, 0)
    assert scored([dataclasses.replace(pair, b_from="") for pair in pairs]) == (0, 1)
