"""The lookup planner: the band plan and the pair plan find exactly what brute force finds."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

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


def test_unknown_lookup_is_refused(tmp_path: object) -> None:
    from simstore.errors import InvalidInput

    with pytest.raises(InvalidInput, match="lookup"):
        SimStore("sqlite://", lookup="fastest")
