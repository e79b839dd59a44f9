"""The DB-free batch API reproduces the store: replay over every candidate pair of a real corpus
gives exactly ``SimStore.add_many``'s decisions (the store is the independent reference here)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest

from simstore.errors import InvalidInput
from simstore.policy import batch
from simstore.policy.policies import MinHashVerification, Policy, SimHashOnly, SimHashVerification
from simstore.text import minhash
from simstore.text.presets import get_preset
from tests._workers import stored_band_keys
from tests.conftest import StoreFactory

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "corpus.jsonl"
AT = datetime(2026, 1, 5, tzinfo=timezone.utc)
POLICIES = {
    "minhash": MinHashVerification(),
    "minhash-1-band": MinHashVerification(min_bands=1),
    "simhash-verified": SimHashVerification(),
    "simhash": SimHashOnly(),
}


def corpus_slice(count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` records of the sample corpus, keeping its clusters together (real text)."""
    records = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    groups = sorted({record["group"] for record in records})
    chosen = set(random.Random(seed).sample(groups, len(groups) // 4))
    picked = [(r["id"], r["text"]) for r in records if r["group"] in chosen]
    return picked[:count]


def all_candidate_pairs(items: list[batch.Item], policy: Policy) -> list[tuple[int, int]]:
    """Every (new, old) pair the policy's candidate rule admits, by brute force."""
    keys = [set(item.band_keys) for item in items]
    return [
        (new, old)
        for new in range(len(items))
        for old in range(new)
        if policy.is_candidate(items[new], items[old], len(keys[new] & keys[old]))
    ]


@pytest.mark.parametrize("name", list(POLICIES))
def test_replay_over_all_pairs_equals_add_many(make_store: StoreFactory, name: str) -> None:
    policy = POLICIES[name]
    records = corpus_slice(500, seed=3)
    store = make_store(policy=policy)
    decisions = list(store.add_many(records, batch_size=128, at=AT))

    items = batch.sign([t for _k, t in records], keys=[k for k, _t in records], policy=policy)
    batch.remember_boilerplate(items, policy=policy)  # (the default's memory, in input order)
    pairs = all_candidate_pairs(items, policy)
    assert sorted(batch.candidates(items, policy=policy)) == sorted(pairs)
    edges = batch.confirm(items, pairs, policy=policy)
    verdicts = batch.replay([item.key for item in items], edges)

    duplicates = [d for d in decisions if not d.inserted]
    assert len(duplicates) > 20  # the slice holds real near-duplicates
    for decision, verdict in zip(decisions, verdicts, strict=True):
        match = decision.duplicate_of
        assert (verdict.key, verdict.kept) == (decision.key, decision.inserted)
        assert verdict.duplicate_of == (match.key if match else None), verdict
        if match is not None:
            assert (verdict.distance, verdict.measure, verdict.score) == (
                match.distance,
                match.measure,
                match.score,
            )


def test_dedup_never_points_at_a_duplicate_in_a_chain() -> None:
    # A ~ B and B ~ C but A and C are not near: C is compared with kept texts only (A), so it
    # is kept, where "one per connected component" would drop it.
    base = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    words = base.split()
    a = base
    b = " ".join([*words[:6], "x1", "x2", "x3", "x4"])
    c = " ".join([*words[:2], "x1", "x2", "x3", "x4", "y1", "y2", "y3", "y4"])
    policy = SimHashVerification(short_radius=64, threshold=0.3)
    verdicts = batch.dedup([a, b, c], policy=policy)
    assert verdicts[1].duplicate_of == "0"
    items = batch.sign([a, b, c], policy=policy)
    confirmed = {(e.new, e.old) for e in batch.confirm(items, [(2, 1), (2, 0)], policy=policy)}
    assert confirmed == {(2, 1)}  # C is near B only
    assert verdicts[2].kept  # B was a duplicate, so C has nothing kept to match


def test_replay_breaks_ties_by_moment_then_key() -> None:
    edges = [batch.Edge(2, 0, 1, None, None), batch.Edge(2, 1, 1, None, None)]
    assert batch.replay(["b", "a", "c"], edges)[2].duplicate_of == "a"  # same moment: key
    moments = [AT.replace(day=1), AT.replace(day=2), AT.replace(day=3)]
    assert batch.replay(["b", "a", "c"], edges, moments=moments)[2].duplicate_of == "b"


def test_bad_batch_input_is_refused() -> None:
    with pytest.raises(InvalidInput):
        batch.sign(["a", "b"], keys=["k", "k"])
    with pytest.raises(InvalidInput):
        batch.sign("one text")
    with pytest.raises(InvalidInput):
        batch.replay(["a", "b"], [batch.Edge(0, 1, 0, None, None)])
    with pytest.raises(InvalidInput):
        batch.sign(["a"], max_distance=99)


def test_a_batch_result_loads_into_a_store_and_its_texts_replay(make_store: StoreFactory) -> None:
    from simstore.io.handover import LoadRow

    records = corpus_slice(150, seed=7)
    texts, keys = [t for _k, t in records], [k for k, _t in records]
    items = batch.sign(texts, keys=keys)
    verdicts = batch.dedup(texts, keys=keys)
    rows = [
        LoadRow(
            v.key,
            v.kept,
            item.fingerprint,
            item.text,
            item.signature,
            None,
            v.duplicate_of,
            v.distance,
            v.measure,
            v.score,
        )
        for item, v in zip(items, verdicts, strict=True)
    ]
    store = make_store()
    report = store.load(rows, at=AT)
    assert (report.kept, report.duplicates) == (
        sum(v.kept for v in verdicts),
        sum(not v.kept for v in verdicts),
    )
    # every kept text's band keys were written (a key's replay needs none: only they let a new
    # near-duplicate of a loaded text be found by its band keys)
    expected = sorted(k for item, v in zip(items, verdicts, strict=True) if v.kept
                      for k in item.band_keys)  # fmt: skip
    with store.engine.connect() as conn:
        assert stored_band_keys(conn, namespace=store.namespace) == expected
    first_kept = next(k for k, v in zip(keys, verdicts, strict=True) if v.kept)
    copy = store.add(texts[keys.index(first_kept)] + " Again.", key="copy", at=AT)
    assert copy.duplicate_of is not None and copy.duplicate_of.key == first_kept
    again = list(store.add_many(records, at=AT))  # the corpus once more: every decision replays
    assert [(d.key, d.inserted) for d in again] == [(v.key, v.kept) for v in verdicts]
    assert store.stats().kept == report.kept


def test_a_load_refuses_band_keys_that_are_not_its_signatures(make_store: StoreFactory) -> None:
    from simstore.io.handover import LoadRow

    item = batch.sign(["a text that is kept with its own signature"])[0]
    store = make_store()
    wrong = LoadRow("k", True, item.fingerprint, item.text, item.signature, (1, 2, 3))
    with pytest.raises(InvalidInput, match="band_keys"):
        store.load([wrong], at=AT)
    assert store.get("k") is None  # nothing written
    right = LoadRow("k", True, item.fingerprint, item.text, item.signature, item.band_keys)
    assert store.load([right], at=AT).kept == 1


def test_a_load_refuses_a_signature_whose_opening_is_unreadable(make_store: StoreFactory) -> None:
    from simstore.io.handover import LoadRow

    text = " ".join(f"Section {i} of the licence says who may copy the work." for i in range(20))
    item = batch.sign([text])[0]
    assert item.signature is not None and minhash.opening_of(item.signature) is not None
    store = make_store()
    sized = item.signature[: minhash.SIZED_BYTES]
    broken = LoadRow("k", True, item.fingerprint, None, sized + b"no zlib", item.band_keys)
    with pytest.raises(InvalidInput, match="opening"):
        store.load([broken], at=AT)
    assert store.get("k") is None  # nothing written
    whole = LoadRow("k", True, item.fingerprint, None, item.signature, item.band_keys)
    assert store.load([whole], at=AT).kept == 1


def test_bad_batch_input_is_refused_with_messages_that_say_what_is_wrong() -> None:
    # mutmut left every message of sign and replay free to change (None, upper case, "XX...XX"):
    # the messages are what a caller reads, so they are pinned whole
    def refused(call: Callable[[], object]) -> str:
        with pytest.raises(InvalidInput) as error:
            call()
        return str(error.value)

    assert refused(lambda: batch.sign("one text")) == (
        "sign takes a sequence of texts, not a single text"
    )
    assert refused(lambda: batch.sign(["a", "b"], keys=["k"])) == "1 keys for 2 texts"
    assert refused(lambda: batch.sign(["a", "b"], keys=["k", "k"])) == "keys must be unique"
    edge = batch.Edge(1, 0, 0, None, None)
    assert refused(lambda: batch.replay(["a", "b"], [edge], moments=[AT])) == (
        "1 moments for 2 keys"
    )
    assert refused(lambda: batch.replay(["a", "b"], [batch.Edge(0, 1, 0, None, None)])) == (
        "edge 0 -> 1 does not point to an earlier input"
    )


@pytest.mark.parametrize("new, old", [(1, 1), (2, 0), (2, 1)], ids=str)
def test_replay_refuses_an_edge_to_itself_or_past_the_last_input(new: int, old: int) -> None:
    # an edge names two inputs, the later one first: mutmut's "old <= new" and "new <= len"
    # let an input be its own duplicate and an edge point past the two inputs
    with pytest.raises(InvalidInput, match=f"edge {new} -> {old} does not point"):
        batch.replay(["a", "b"], [batch.Edge(new, old, 0, None, None)])


# Two texts whose SimHash fingerprints (default preset) are 4 bits apart: one over the store's
# default radius of 3 (bin(a ^ b).count("1") == 4 checked in the tests)
FOUR_APART = [
    "The council approved the new budget for the city library after a long debate on Monday "
    "evening",
    "The council approved the new budget for the city library after a long debate on Monday "
    "evening now",
]


def test_dedup_decides_by_distance_at_the_radius_given_and_three_by_default(
    make_store: StoreFactory,
) -> None:
    # mutmut's default radius 4 and a radius dropped between sign and the rule survived: the
    # reference is the store itself (SimHashOnly, its default radius 3, then max_distance=4)
    policy = SimHashOnly()
    items = batch.sign(FOUR_APART, policy=policy)
    assert bin(items[0].fingerprint ^ items[1].fingerprint).count("1") == 4
    default = make_store(policy=policy)
    wide = make_store(namespace=f"{default.namespace}-4", policy=policy, max_distance=4)
    records = [("0", FOUR_APART[0]), ("1", FOUR_APART[1])]
    for store, verdicts in (
        (default, batch.dedup(FOUR_APART, policy=policy)),
        (wide, batch.dedup(FOUR_APART, policy=policy, max_distance=4)),
    ):
        decided = list(store.add_many(records, at=AT))
        store.close()
        assert [v.kept for v in verdicts] == [d.inserted for d in decided]
        match = decided[1].duplicate_of
        assert verdicts[1].distance == (None if match is None else match.distance)
    assert [d.kept for d in batch.dedup(FOUR_APART, policy=policy, max_distance=4)] == [True, False]
    assert all(d.kept for d in batch.dedup(FOUR_APART, policy=policy))


def test_confirm_holds_a_text_against_a_bare_fingerprint_by_the_radius_given(
    make_store: StoreFactory,
) -> None:
    # a short text under SimHashVerification met a row kept without text (added as a bare
    # fingerprint): only the distance can decide, at the store's radius (3 by default), which
    # confirm's max_distance stands for; mutmut's default 4 and a radius of None survived. The
    # reference is the store deciding the same two inputs.
    policy = SimHashVerification()
    short = "The council approved the budget"
    near = batch.sign([short], policy=policy)[0].fingerprint ^ 0b1111  # 4 bits apart
    raw = [("old", None, near), ("new", short, None)]
    items = batch.plan_items(raw, preset=get_preset("default"), policy=policy, max_distance=3)
    assert batch.confirm(items, [(1, 0)], policy=policy) == []
    assert batch.confirm(items, [(1, 0)], policy=policy, max_distance=4) == [
        batch.Edge(1, 0, 4, None, None)
    ]
    default = make_store(policy=policy)
    wide = make_store(namespace=f"{default.namespace}-4", policy=policy, max_distance=4)
    for store, duplicate in ((default, False), (wide, True)):
        store.add(fingerprint=near, key="old", at=AT)
        added = store.add(short, key="new", at=AT)
        store.close()
        assert (added.duplicate_of is not None) == duplicate


# an article of 319 characters, and the same with its last three words cut (299): one over
# SimHashVerification's short_length of 300, kept without its text, one under it, 4 bits apart
ARTICLE = (
    "The council approved the new budget for the city library after a long debate on Monday "
    "evening. The library will open longer on weekends and buy more books for children and "
    "students. Members said the plan was paid for by savings elsewhere in the city budget this "
    "year, and more. A vote on the museum follows next month."
)


def test_dedup_holds_a_short_text_against_a_long_kept_one_by_the_radius_given(
    make_store: StoreFactory,
) -> None:
    # the long text keeps no comparison text, so the short one is held against it by distance
    # at the store's radius, the rule's max_distance: mutmut's Rule(policy, None) in dedup
    # survived. The reference is the store deciding the same two texts at radius 3 and 4.
    policy = SimHashVerification()
    texts = [ARTICLE, " ".join(ARTICLE.split()[:-3])]
    items = batch.sign(texts, policy=policy)
    assert (items[0].text, items[1].threshold) == (None, policy.threshold)
    assert bin(items[0].fingerprint ^ items[1].fingerprint).count("1") == 4
    default = make_store(policy=policy)
    wide = make_store(namespace=f"{default.namespace}-4", policy=policy, max_distance=4)
    records = [("0", texts[0]), ("1", texts[1])]
    for store, radius, duplicate in ((default, 3, False), (wide, 4, True)):
        decided = list(store.add_many(records, at=AT))
        store.close()
        assert [d.inserted for d in decided] == [True, not duplicate]
        verdicts = batch.dedup(texts, policy=policy, max_distance=radius)
        assert [(v.kept, v.distance) for v in verdicts] == [
            (True, None),
            (not duplicate, 4 if duplicate else None),
        ]
