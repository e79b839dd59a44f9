"""Short texts are decided by an exact measure over candidates the SimHash radius alone misses."""

from __future__ import annotations

import random
import string

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from simstore import fingerprint, hamming
from simstore.errors import InvalidInput
from simstore.policy import batch
from simstore.policy.policies import MinHashVerification, SimHashOnly, SimHashVerification
from simstore.storage import _finder
from simstore.text import minhash
from tests.conftest import StoreFactory

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
