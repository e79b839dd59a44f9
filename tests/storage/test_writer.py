"""The writer: a batch decided and written in input order, a key added again replays its recorded
decision, and a key added again with another fingerprint is a ``KeyConflict``; on every dialect.

Expected decisions are worked out by hand from Hamming distances of fingerprints chosen here (the
store's radius is 3); what was written is read back from the tables.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest
import sqlalchemy as sa

from simstore import fingerprint
from simstore.errors import BatchFailed, InvalidInput, KeyConflict
from simstore.results import Decision
from simstore.storage.schema import decisions, fingerprints
from simstore.store import SimStore
from tests.conftest import StoreFactory

A = 0x0123_4567_89AB_CDEF
C = 0xFEDC_BA98_7654_3210  # 64 bits from A
B = A ^ 0b101  # 2 bits from A
D = C ^ (1 << 63)  # 1 bit from C, above 2**63: the signed BIGINT's sign bit
E = A ^ 0b1110  # 3 bits from A, 3 from B: A is nearer in time order only
AT = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)


def written(store: SimStore) -> tuple[dict[str, int], dict[str, str]]:
    """(kept key -> fingerprint, duplicate key -> the kept key it was recorded against)."""
    with store.engine.connect() as conn:
        ns = store.ns_id
        kept = conn.execute(
            sa.select(fingerprints.c.key, fingerprints.c.fp).where(fingerprints.c.ns_id == ns)
        ).all()
        duplicates = conn.execute(
            sa.select(decisions.c.key, decisions.c.duplicate_of).where(
                decisions.c.ns_id == ns, decisions.c.inserted.is_(False)
            )
        ).all()
    return {k: int(fp) % (1 << 64) for k, fp in kept}, {k: of for k, of in duplicates}


def outcome(decisions: list[Decision]) -> list[tuple[str, bool, str | None]]:
    return [(d.key, d.inserted, d.duplicate_of.key if d.duplicate_of else None) for d in decisions]


def test_a_batch_is_decided_and_written_in_input_order(make_store: StoreFactory) -> None:
    store = make_store()
    items = [
        {"key": "b", "fingerprint": B},
        {"key": "c", "fingerprint": C},
        {"key": "a", "fingerprint": A},
        {"key": "d", "fingerprint": D},
        {"key": "e", "fingerprint": E},
    ]
    decisions = list(store.add_many(items, at=AT))
    # b comes first: a (2 bits away) and e (3 bits) are its duplicates, not the other way round
    assert outcome(decisions) == [
        ("b", True, None),
        ("c", True, None),
        ("a", False, "b"),
        ("d", False, "c"),
        ("e", False, "b"),
    ]
    assert written(store) == ({"b": B, "c": C}, {"a": "b", "d": "c", "e": "b"})


def test_one_batch_decides_as_adds_one_at_a_time(make_store: StoreFactory) -> None:
    items = [("a", A), ("e", E), ("b", B), ("c", C), ("d", D)]
    run = uuid.uuid4().hex[:8]  # the server databases are shared by the tests running at once
    batched = make_store(namespace=f"batched-{run}")
    one_by_one = make_store(namespace=f"one-by-one-{run}")
    many = list(batched.add_many([{"key": k, "fingerprint": f} for k, f in items], at=AT))
    single = [one_by_one.add(key=k, fingerprint=f, at=AT) for k, f in items]
    assert outcome(many) == outcome(single)
    assert outcome(many)[:3] == [("a", True, None), ("e", False, "a"), ("b", False, "a")]
    assert written(batched) == written(one_by_one)


def test_a_key_added_again_replays_its_decision_and_writes_nothing(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    assert store.add(key="a", fingerprint=A, at=AT).inserted
    first = store.add(key="b", fingerprint=B, at=AT)
    before = written(store)

    again = store.add(key="b", fingerprint=B)
    assert again.replayed and not first.replayed
    assert (again.inserted, again.recorded_as) == (False, "a")
    assert again.duplicate_of is not None and again.duplicate_of.key == "a"
    assert again.duplicate_of.distance == 2
    kept_again = store.add(key="a", fingerprint=A)
    assert kept_again.replayed and kept_again.inserted
    # in a batch too, and a key twice in one batch: the second is its first's decision
    batch = list(store.add_many([{"key": "b", "fingerprint": B}] * 2))
    assert [(d.replayed, d.inserted, d.recorded_as) for d in batch] == [(True, False, "a")] * 2
    fresh = list(store.add_many([{"key": "n", "fingerprint": C}, {"key": "n", "fingerprint": C}]))
    assert [(d.inserted, d.replayed) for d in fresh] == [(True, False), (True, True)]
    assert written(store) == ({**before[0], "n": C}, before[1])


def test_a_batch_of_keys_added_before_replays_every_ones_decision(
    make_store: StoreFactory,
) -> None:
    # a batch reads its keys' decisions with one IN list: two keys (a list of exactly two) and
    # three (padded to four); a read of the list's first key only (mutmut
    # _prepared.decisions_by_key__mutmut_6, _9; _10 for lists of two) decided "b" again
    store = make_store()
    items = [{"key": "a", "fingerprint": A}, {"key": "b", "fingerprint": B}]
    first = outcome(list(store.add_many(items, at=AT)))
    assert first == [("a", True, None), ("b", False, "a")]
    store.add(key="c", fingerprint=C, at=AT)
    before = written(store)
    for batch in (items, [*items, {"key": "c", "fingerprint": C}]):
        again = list(store.add_many(batch))
        assert [d.replayed for d in again] == [True] * len(batch)
        assert outcome(again) == [*first, ("c", True, None)][: len(batch)]
    assert written(store) == before
    store.close()


def test_a_key_added_again_with_another_fingerprint_is_a_key_conflict(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    store.add(key="a", fingerprint=A, at=AT)
    store.add(key="b", fingerprint=B, at=AT)
    before = written(store)
    with pytest.raises(KeyConflict, match="'a'"):
        store.add(key="a", fingerprint=C)
    with pytest.raises(KeyConflict, match="'b'"):
        store.add(key="b", fingerprint=A)
    # a batch holding a conflict is written not at all, the items before it included
    with pytest.raises(BatchFailed) as failed:
        list(store.add_many([{"key": "new", "fingerprint": D}, {"key": "a", "fingerprint": C}]))
    assert isinstance(failed.value.__cause__, KeyConflict)
    with pytest.raises(BatchFailed) as twice:
        list(store.add_many([{"key": "x", "fingerprint": D}, {"key": "x", "fingerprint": C}]))
    assert isinstance(twice.value.__cause__, KeyConflict)
    # D and C in hex, written out by hand: the first value given, then the second
    assert str(twice.value.__cause__) == (
        "key 'x' appears twice with different fingerprints (7edcba9876543210 and fedcba9876543210)"
    )
    assert written(store) == before


def test_a_load_skips_a_known_key_and_refuses_one_with_another_fingerprint(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    store.add(key="a", fingerprint=A, at=AT)
    rows = [
        {"key": "a", "fingerprint": A, "kept": True},
        {"key": "c", "fingerprint": C, "kept": True},
        {"key": "d", "fingerprint": D, "kept": False, "duplicate_of": "c", "distance": 1},
    ]
    report = store.load(rows, at=AT)
    assert (report.kept, report.duplicates, report.skipped) == (1, 1, 1)
    assert written(store) == ({"a": A, "c": C}, {"d": "c"})
    with pytest.raises(KeyConflict, match="'c'"):
        store.load([{"key": "c", "fingerprint": A, "kept": True}], at=AT)
    assert written(store) == ({"a": A, "c": C}, {"d": "c"})


def test_a_load_that_gives_a_key_twice_is_refused_and_writes_nothing(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    rows = [
        {"key": "c", "fingerprint": C, "kept": True},
        {"key": "e", "fingerprint": E, "kept": True},
        {"key": "e", "fingerprint": E, "kept": True},
    ]
    with pytest.raises(InvalidInput) as refused:
        store.load(rows, at=AT)
    assert str(refused.value) == "key 'e' appears twice in the load"
    assert written(store) == ({}, {})


def test_a_loaded_duplicate_keeps_the_distance_measure_and_score_it_was_decided_with(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    rows = [
        {"key": "c", "fingerprint": C, "kept": True},
        {"key": "d", "fingerprint": D, "kept": False, "duplicate_of": "c", "distance": 1,
         "measure": "jaccard", "score": 0.75},
    ]  # fmt: skip
    assert store.load(rows, at=AT).duplicates == 1
    with store.engine.connect() as conn:
        recorded = conn.execute(
            sa.select(
                decisions.c.duplicate_of,
                decisions.c.distance,
                decisions.c.measure,
                decisions.c.score,
            ).where(decisions.c.ns_id == store.ns_id, decisions.c.key == "d")
        ).one()
    assert tuple(recorded) == ("c", 1, "jaccard", 0.75)  # 0.75: exact in binary floating point


def test_texts_added_after_a_load_of_bare_fingerprints_are_their_duplicates(
    make_store: StoreFactory,
) -> None:
    # a kept row loaded without a signature is found by its SimHash bands only: the load must
    # mark the namespace as holding such rows, or a signed text skips those lookups
    text = "the harbour ferry leaves at noon on sundays and at nine on weekdays"
    store = make_store()
    store.load([{"key": "bare", "fingerprint": fingerprint(text), "kept": True}], at=AT)
    again = store.add(text, key="text")
    assert again.duplicate_of is not None and again.duplicate_of.key == "bare"
    assert (again.inserted, again.duplicate_of.distance) == (False, 0)
    assert [m.key for m in make_store().query(text)] == ["bare"]  # a store opened afterwards


def test_a_replay_and_get_answer_the_decision_first_made_in_their_own_namespace(
    make_store: StoreFactory,
) -> None:
    text = "the harbour ferry leaves at noon on sundays"
    run = uuid.uuid4().hex[:8]
    # another namespace of the same database holds a kept "a" too, written first
    make_store(namespace=f"other-{run}").add(key="a", fingerprint=C, at=AT)
    store = make_store(namespace=f"own-{run}")
    store.add(key="0", fingerprint=D, at=AT)  # a kept row of the namespace before "a"
    kept = store.add(text, key="a", at=AT)
    first = store.add(text + "!", key="b", at=AT)
    match = first.duplicate_of
    assert match is not None and match.key == "a" and match.fingerprint == kept.fingerprint
    assert match.measure is not None and match.score is not None  # a short text's measure
    for replay in (store.add(text + "!", key="b"), store.get("b")):
        assert replay is not None and replay.replayed and replay.matches == (replay.duplicate_of,)
        again = replay.duplicate_of
        assert again is not None
        assert (again.key, again.fingerprint, again.distance, again.added_at, again.measure) == (
            match.key,
            match.fingerprint,
            match.distance,
            match.added_at,
            match.measure,
        )
        assert again.score == pytest.approx(match.score, rel=1e-6)  # MySQL's FLOAT: 4 bytes
    assert store.get("a") == Decision("a", kept.fingerprint, True, replayed=True)
    assert store.remove("a")  # a duplicate of a removed text: recorded against it, no match
    assert store.get("b") == Decision("b", first.fingerprint, False, None, (), True, "a")


def test_a_batch_s_texts_get_band_keys_of_their_own_namespace_s_rows(
    make_store: StoreFactory,
) -> None:
    # a batch reads its new rows' ids back by key to write their MinHash band keys: a key
    # kept in another namespace too must not lend that namespace's id (the read names the
    # namespace; without it, mutmut's _prepared.ids_by_key__mutmut_6 gave this namespace's
    # band keys to the other row, and the batch's text was never found again)
    text = "the harbour ferry leaves at noon on sundays from the old stone pier"
    other = "the night bus to the airport runs every forty minutes after midnight"
    run = uuid.uuid4().hex[:8]
    store = make_store(namespace=f"own-{run}")  # created first: the lower namespace id
    store.add(key="0", fingerprint=D, at=AT)
    elsewhere = make_store(namespace=f"other-{run}")
    elsewhere.add(other, key="a", at=AT)
    decided = list(store.add_many([("a", text), ("c", other)], at=AT))
    assert [d.inserted for d in decided] == [True, True]
    assert [m.key for m in store.query(text + "!")] == ["a"]
    assert [m.key for m in elsewhere.query(text + "!")] == []
    store.close()
    elsewhere.close()


def test_an_add_near_two_kept_fingerprints_names_both_matches_nearest_first(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    far = A ^ 0b11111  # 5 bits from A: kept
    near = A ^ 0b11  # 2 bits from A, 3 from far: both within the radius of 3
    store.add(key="a", fingerprint=A, at=AT)
    store.add(key="far", fingerprint=far, at=AT)
    for decision in (
        store.add(key="n", fingerprint=near, at=AT),
        next(iter(store.add_many([{"key": "m", "fingerprint": near}], at=AT))),
    ):
        assert [(m.key, m.distance) for m in decision.matches] == [("a", 2), ("far", 3)]
        assert decision.duplicate_of == decision.matches[0]


def test_a_full_batch_of_a_thousand_items_is_written_whole(make_store: StoreFactory) -> None:
    # add_many's default batch is 1,000 items: the size from which PostgreSQL's statistics may
    # be refreshed after the commit (a no-op elsewhere), so every dialect goes through that step
    store = make_store()
    items = [
        {"key": f"k{i}", "fingerprint": (i * 0x9E37_79B9_7F4A_7C15) % (1 << 64)}
        for i in range(1000)
    ]
    decisions = list(store.add_many(items, at=AT))
    assert [d.key for d in decisions] == [f"k{i}" for i in range(1000)]
    kept, duplicates = written(store)
    assert len(kept) + len(duplicates) == 1000
    assert len(kept) == sum(d.inserted for d in decisions)
