"""The lookup planner: the band plan and the pair plan find exactly what brute force finds."""

from __future__ import annotations

import random
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from simstore.policy.policies import SimHashOnly
from simstore.policy.probes import band_seeks, pair_radii, pair_seeks, prefers_pairs
from simstore.storage.schema import fingerprints
from simstore.store import SimStore
from simstore.text.encoding import bands, to_signed
from tests.conftest import StoreFactory

AT = datetime(2026, 1, 1, 12, 0, 0)


def _flip(value: int, rng: random.Random, count: int) -> int:
    for bit in rng.sample(range(64), count):
        value ^= 1 << bit
    return value


def _clustered(rng: random.Random, centers: int, per_center: int) -> list[int]:
    """Fingerprints in tight clusters (0..5 bits from a center), so every radius finds some."""
    values = []
    for _ in range(centers):
        center = rng.getrandbits(64)
        values += [_flip(center, rng, rng.randrange(0, 6)) for _ in range(per_center)]
    return values


def test_pair_radii_is_exact_for_every_split_of_the_flipped_bits() -> None:
    # r flipped bits split between the halves in every possible way: some probed half is within
    # its probe radius (multi-index hashing over two 32-bit substrings)
    for radius in range(4):
        for in_first_half in range(radius + 1):
            first, second = in_first_half, radius - in_first_half
            assert any(
                (first, second)[pair] <= pair_radius for pair, pair_radius in pair_radii(radius)
            ), (radius, first, second)


def test_cost_model_has_a_crossover() -> None:
    assert [pair_seeks(r) for r in range(4)] == [1, 2, 34, 66]  # 1 + 2*16 per half at radius 1
    assert [band_seeks(r) for r in range(4)] == [1, 2, 3, 4]  # pigeonhole: r + 1 bands
    for radius in (0, 1):  # as many seeks, fewer candidates: the pairs always win
        assert prefers_pairs(radius, 1) and prefers_pairs(radius, 10**8)
    for radius in (2, 3):
        assert not prefers_pairs(radius, 1000)
        assert prefers_pairs(radius, 10**8)
    assert not prefers_pairs(4, 10**9)  # the pair plan covers radii <= 3 only


@pytest.mark.parametrize("lookup", ["bands", "pairs", "auto"])
def test_every_lookup_finds_what_brute_force_finds(make_store: StoreFactory, lookup: str) -> None:
    rng = random.Random(7)
    stored = _clustered(rng, centers=60, per_center=12)
    store = make_store(lookup=lookup, policy=SimHashOnly())
    added = list(
        store.add_many(
            [{"key": f"k{i}", "fingerprint": fp} for i, fp in enumerate(stored)],
            max_distance=0,
            at=AT,
        )
    )
    kept = {d.key: d.fingerprint for d in added if d.inserted}
    probes = [_flip(rng.choice(stored), rng, rng.randrange(0, 5)) for _ in range(60)]
    probes += [rng.getrandbits(64) for _ in range(10)]
    for probe in probes:
        for radius in range(4):
            found = {m.key for m in store.query(fingerprint=probe, max_distance=radius, now=AT)}
            expected = {k for k, v in kept.items() if (v ^ probe).bit_count() <= radius}
            assert found == expected, (lookup, radius, hex(probe))


def test_batch_decisions_do_not_depend_on_the_lookup(make_store: StoreFactory) -> None:
    rng = random.Random(11)
    values = _clustered(rng, centers=80, per_center=6)
    first = [{"key": f"a{i}", "fingerprint": fp} for i, fp in enumerate(values[::2])]
    second = [{"key": f"b{i}", "fingerprint": fp} for i, fp in enumerate(values[1::2])]
    outcomes = []
    for lookup in ("bands", "pairs"):
        store = make_store(lookup=lookup, policy=SimHashOnly(), namespace=f"n-{lookup}")
        list(store.add_many(first, at=AT))
        decided = list(store.add_many(second, at=AT, batch_size=50))
        outcomes.append([(d.key, d.duplicate_of and d.duplicate_of.key) for d in decided])
    assert outcomes[0] == outcomes[1]
    assert any(match is not None for _key, match in outcomes[0])


def test_pairs_respect_the_window(make_store: StoreFactory) -> None:
    store = make_store(lookup="pairs", policy=SimHashOnly(), keep="1h", partition="1m")
    value = random.Random(3).getrandbits(64)
    store.add(fingerprint=value, key="old", at=AT)
    assert [m.key for m in store.query(fingerprint=value ^ 1, now=AT)] == ["old"]
    assert store.query(fingerprint=value ^ 1, now=AT + timedelta(hours=2)) == []


@pytest.mark.parametrize("lookup", ["bands", "pairs"])
def test_a_row_in_the_first_partition_of_the_window_is_found(
    make_store: StoreFactory, lookup: str
) -> None:
    # keep 1h, one-minute partitions: at 13:00 the window starts at 12:00:00 exactly, so its
    # first partition (the cutoff, part >= cutoff in SQL) is 12:00-12:01, which holds a row kept
    # at 12:00:30, inside the window; part > cutoff (mutmut's _prepared.pair_lookup__mutmut_19)
    # left that partition out
    store = make_store(lookup=lookup, policy=SimHashOnly(), keep="1h", partition="1m")
    value = random.Random(4).getrandbits(64)
    store.add(fingerprint=value, key="edge", at=AT + timedelta(seconds=30))
    now = AT + timedelta(hours=1)
    assert [m.key for m in store.query(fingerprint=value ^ 1, now=now)] == ["edge"]
    assert store.query(fingerprint=value ^ 1, now=now + timedelta(seconds=31)) == []
    store.close()


def test_auto_switches_to_pairs_on_a_large_id_span(make_store: StoreFactory) -> None:
    store = make_store(policy=SimHashOnly())
    value = random.Random(5).getrandbits(64)
    store.add(fingerprint=value, key="near", at=AT)
    assert store.lookup_plan(3) == "bands"  # a one-row table: the four bands
    with store.engine.begin() as conn:
        # a row with a far id stands for a table of 10^8 rows (the estimate is the id span)
        far = value ^ (1 << 63) ^ (1 << 40) ^ (1 << 20) ^ (1 << 5)
        conn.execute(
            sa.insert(fingerprints).values(
                id=10**8,
                ns_id=store.ns_id,
                key="far",
                fp=to_signed(far),
                **dict(zip(("b0", "b1", "b2", "b3"), bands(far), strict=True)),
                added_at=AT,
                part=0,
                text=None,
            )
        )
    assert store.lookup_plan(3, refresh=True) == "pairs"  # re-read now, not in a minute
    found = {m.key: m.distance for m in store.query(fingerprint=value, now=AT)}
    assert found == {"near": 0}  # "far" is 4 bits away
    assert {m.key for m in store.query(fingerprint=far ^ 1, now=AT)} == {"far"}


def test_a_lookup_asked_for_is_the_plan_whatever_the_table_size(make_store: StoreFactory) -> None:
    # pins the two forced lookups against the auto plan, which on a one-row table takes the pairs
    # at radii 0-1 and the bands at 2-3 (cost model above); the pair plan covers radii <= 3 only
    plans = {}
    for lookup in ("bands", "pairs"):
        # a name of its own: the server databases are shared by the tests running at once
        namespace = f"{lookup}-{uuid.uuid4().hex[:8]}"
        store = make_store(lookup=lookup, policy=SimHashOnly(), namespace=namespace)
        store.add(fingerprint=random.Random(9).getrandbits(64), key="one", at=AT)
        plans[lookup] = [store.lookup_plan(radius, refresh=True) for radius in range(5)]
    assert plans["bands"] == ["bands"] * 5
    assert plans["pairs"] == ["pairs"] * 4 + ["bands"]


def test_the_table_size_is_the_id_span_with_both_ends_counted(tmp_path: Path) -> None:
    # pins the finder's estimate (last id - first id + 1, an empty table 0) at the cost model's
    # edges, read off prefers_pairs itself: radius 1 turns to pairs at one row, radius 3 at
    # 1,016,064 rows; an estimate one or two rows off, or 1 for an empty table, flips a plan here
    # (SQLite file: the servers' tables are shared with the tests running at once)
    edge = 1_016_064
    assert not prefers_pairs(1, 0) and prefers_pairs(1, 1)
    assert not prefers_pairs(3, edge - 1) and prefers_pairs(3, edge)

    def add_row(store: SimStore, row_id: int, value: int) -> None:
        with store.engine.begin() as conn:
            conn.execute(
                sa.insert(fingerprints).values(
                    id=row_id,
                    ns_id=store.ns_id,
                    key=f"k{row_id}",
                    fp=to_signed(value),
                    **dict(zip(("b0", "b1", "b2", "b3"), bands(value), strict=True)),
                    added_at=AT,
                    part=0,
                    text=None,
                )
            )

    with SimStore(f"sqlite:///{tmp_path / 'store.db'}", policy=SimHashOnly()) as store:
        assert store.lookup_plan(1) == "bands"  # no row yet
        add_row(store, 1, 0x0123_4567_89AB_CDEF)
        assert store.lookup_plan(1, refresh=True) == "pairs"  # ids 1..1: one row
        add_row(store, edge - 1, 0x0FED_CBA9_8765_4321)
        assert store.lookup_plan(3, refresh=True) == "bands"  # ids 1..edge-1
        add_row(store, edge, 0x1111_2222_3333_4444)
        assert store.lookup_plan(3, refresh=True) == "pairs"  # ids 1..edge


def test_unknown_lookup_is_refused(tmp_path: object) -> None:
    from simstore.errors import InvalidInput

    with pytest.raises(
        InvalidInput, match="lookup must be one of auto, bands, pairs, got 'fastest'"
    ):
        SimStore("sqlite://", lookup="fastest")
