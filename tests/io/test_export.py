"""The export's rows (``simstore.io.export``): every cluster, the last one included, and the
decisions in the order they were made, on every dialect.

Expected values are worked out by hand from fingerprints chosen here (radius 3): what is kept and
what is a duplicate of what follows from their Hamming distances alone.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from simstore.io import export
from tests.conftest import StoreFactory

AT = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
A = 0x0123_4567_89AB_CDEF
B = 0xFEDC_BA98_7654_3210  # far from A
C = 0x0F0F_0F0F_F0F0_F0F0  # far from both


def test_every_cluster_is_exported_the_last_one_too(make_store: StoreFactory) -> None:
    store = make_store()
    items = [
        {"key": "a", "fingerprint": A},
        {"key": "a2", "fingerprint": A ^ 1},
        {"key": "lonely", "fingerprint": C},  # kept, no duplicate: no cluster
        {"key": "z", "fingerprint": B},
        {"key": "z3", "fingerprint": B ^ 0b100},
        {"key": "z2", "fingerprint": B ^ 0b10},
    ]
    list(store.add_many(items, at=AT))
    assert list(export.clusters(store.scope)) == [
        {"cluster": "a", "size": 2, "keys": ["a", "a2"]},
        {"cluster": "z", "size": 3, "keys": ["z", "z2", "z3"]},  # the last cluster, by key
    ]


def test_a_single_cluster_is_exported(make_store: StoreFactory) -> None:
    store = make_store()
    list(store.add_many([{"key": "k", "fingerprint": A}, {"key": "d", "fingerprint": A ^ 1}]))
    assert list(export.clusters(store.scope)) == [{"cluster": "k", "size": 2, "keys": ["k", "d"]}]


def test_decisions_of_one_moment_come_kept_first_then_duplicates_in_written_order(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    # one batch, one moment: a, c (dup of a), b, d (dup of b) are written in that order
    first = [
        {"key": "a", "fingerprint": A},
        {"key": "c", "fingerprint": A ^ 1},
        {"key": "b", "fingerprint": B},
        {"key": "d", "fingerprint": B ^ 1},
    ]
    list(store.add_many(first, at=AT))
    # a later moment: its decisions come after every decision of the first
    later = [{"key": "e", "fingerprint": A ^ 2}, {"key": "f", "fingerprint": C}]
    list(store.add_many(later, at=AT + timedelta(minutes=1)))
    rows = list(export.decisions(store.scope))
    assert [(r["key"], r["inserted"], r["duplicate_of"]) for r in rows] == [
        ("a", True, None),
        ("b", True, None),
        ("c", False, "a"),
        ("d", False, "b"),
        ("f", True, None),
        ("e", False, "a"),
    ]
    assert [r["decided_at"] for r in rows] == [AT.isoformat()] * 4 + [
        (AT + timedelta(minutes=1)).isoformat()
    ] * 2


def test_kept_rows_of_one_moment_come_in_written_order_not_key_order(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    # written z, then y (dup of z), then a, then b (dup of a): the kept z before the kept a and
    # the duplicates y before b, though the keys sort the other way
    first = [
        {"key": "z", "fingerprint": A},
        {"key": "y", "fingerprint": A ^ 1},
        {"key": "a", "fingerprint": B},
        {"key": "b", "fingerprint": B ^ 1},
    ]
    list(store.add_many(first, at=AT))
    rows = list(export.decisions(store.scope))
    assert [(r["key"], r["duplicate_of"]) for r in rows] == [
        ("z", None),
        ("a", None),
        ("y", "z"),
        ("b", "a"),
    ]
