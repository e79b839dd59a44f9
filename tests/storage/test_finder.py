"""The finder: kept rows found by their SimHash bands (fingerprints) and by their MinHash band keys
(texts under the default policy), and nothing found outside the retention window; on every dialect.

Expected values: distances are the bits flipped here; which 16-bit bands two fingerprints share and
how many MinHash band keys two texts share are read off ``fingerprint`` and
``simstore.text.minhash`` directly, not from the finder.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from simstore import fingerprint, hamming
from simstore.errors import InvalidInput
from simstore.policy.policies import SimHashVerification
from simstore.text import minhash
from tests.conftest import StoreFactory

AT = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
BASE = 0x0123_4567_89AB_CDEF
POST = (
    "Night market on Harbour Street reopens Friday with forty stalls, live music and late "
    "buses home."
)
EDITED = POST.replace("Friday", "on Friday night")  # one edit: 9 SimHash bits, no band in common


def bands(value: int) -> list[int]:
    return [(value >> shift) & 0xFFFF for shift in (48, 32, 16, 0)]


def band_keys(text: str) -> set[int]:
    return set(minhash.band_keys(minhash.signatures([text]))[0].tolist())


def flipped(value: int, *bits: int) -> int:
    for bit in bits:
        value ^= 1 << bit
    return value


@pytest.mark.parametrize("band", [0, 1, 2, 3])
def test_a_fingerprint_within_the_radius_is_found_by_the_band_it_shares(
    make_store: StoreFactory, band: int
) -> None:
    # three bits flipped in the three other bands: only band ``band`` is left equal
    others = [b for b in range(4) if b != band]
    near = flipped(BASE, *(16 * (3 - b) + 5 for b in others))
    assert hamming(BASE, near) == 3
    assert [x == y for x, y in zip(bands(BASE), bands(near), strict=True)] == [
        b == band for b in range(4)
    ]
    four_away = flipped(near, 16 * (3 - band) + 7)  # now no band is equal, 4 bits away
    store = make_store()
    store.add(key="kept", fingerprint=BASE, at=AT)
    assert [(m.key, m.distance) for m in store.query(fingerprint=near)] == [("kept", 3)]
    assert store.query(fingerprint=four_away) == []


def test_a_larger_radius_probes_the_bands_and_finds_exactly_what_is_within_it(
    make_store: StoreFactory,
) -> None:
    store = make_store(max_distance=8)
    # 8 bits away, 2 in each band: no band is equal, only probing finds it; 9 bits is outside
    eight = flipped(BASE, 1, 2, 17, 18, 33, 34, 49, 50)
    nine = flipped(eight, 60)
    store.add(key="kept", fingerprint=BASE, at=AT)
    assert not set(bands(BASE)) & set(bands(eight))
    assert [(m.key, m.distance) for m in store.query(fingerprint=eight)] == [("kept", 8)]
    assert store.query(fingerprint=nine) == []
    # a batch of two goes through the finder's batch join, which must keep the same edge
    assert [[(m.key, m.distance) for m in found] for found in store.query_many([eight, nine])] == [
        [("kept", 8)],
        [],
    ]
    assert not store.add(key="eight", fingerprint=eight, at=AT).inserted
    assert store.add(key="nine", fingerprint=nine, at=AT).inserted


def test_a_batch_of_two_finds_each_ones_kept_row(make_store: StoreFactory) -> None:
    # a batch's band lookup asks each band for both items' values at once (an IN list of two):
    # every band of LOW is below HIGH's, so a lookup that read only a list's first value (mutmut
    # _prepared.candidate_lookup__mutmut_17, for lists of exactly two) lost HIGH's row
    low, high = 0x1111_2222_3333_4444, 0xEEEE_DDDD_CCCC_BBBB
    assert all(x < y for x, y in zip(bands(low), bands(high), strict=True))
    with make_store(lookup="bands") as store:
        store.add(key="low", fingerprint=low, at=AT)
        store.add(key="high", fingerprint=high, at=AT)
        found = store.query_many([flipped(low, 0), flipped(high, 0)])  # 1 bit from each
        assert [[(m.key, m.distance) for m in one] for one in found] == [
            [("low", 1)],
            [("high", 1)],
        ]


def test_a_short_edit_with_no_band_in_common_is_found_by_its_minhash_band_keys(
    make_store: StoreFactory,
) -> None:
    assert hamming(fingerprint(POST), fingerprint(EDITED)) > 3
    assert not [
        x
        for x, y in zip(bands(fingerprint(POST)), bands(fingerprint(EDITED)), strict=True)
        if x == y
    ]
    assert len(band_keys(POST) & band_keys(EDITED)) >= 2  # what the default policy needs
    store = make_store()  # the default policy
    assert store.add(POST, key="post", at=AT).inserted
    found = store.query(EDITED, now=AT)
    assert [(m.key, m.measure) for m in found] == [("post", "jaccard")]
    decision = store.add(EDITED, key="edited", at=AT)
    assert decision.duplicate_of is not None and decision.duplicate_of.key == "post"
    # the same pair under SimHash alone: no shared band, no band keys, nothing found
    # a name of its own: the server databases are shared by the tests running at once
    plain = make_store(namespace=f"plain-{uuid.uuid4().hex[:8]}", policy="simhash")
    plain.add(POST, key="post", at=AT)
    assert plain.query(EDITED, now=AT) == []


@pytest.mark.parametrize("path", ["bands", "band keys"])
def test_nothing_is_found_outside_the_window_even_before_a_purge(
    make_store: StoreFactory, path: str
) -> None:
    store = make_store(keep="1h", partition="1m")
    ask: dict[str, Any]
    if path == "bands":
        store.add(key="kept", fingerprint=BASE, at=AT)
        ask = {"fingerprint": flipped(BASE, 3)}
    else:
        store.add(POST, key="kept", at=AT)
        ask = {"text": EDITED}
    edge = AT + timedelta(hours=1)  # the row is exactly as old as the window: still inside
    assert [m.key for m in store.query(now=edge, **ask)] == ["kept"]
    past = edge + timedelta(seconds=1)
    assert store.query(now=past, **ask) == []
    later = store.add(key="later", at=past, **ask)
    assert later.inserted
    again = store.add(key="edge", at=edge, **ask)
    assert not again.inserted


@pytest.mark.parametrize("keep", ["0s", "0m", 0, timedelta(0)])
def test_an_empty_window_is_refused(make_store: StoreFactory, keep: object) -> None:
    # a zero-length window would make every row too old to match the moment it was written
    with pytest.raises(InvalidInput, match="positive"):
        make_store(keep=keep)


def test_the_shortest_window_still_finds_a_copy_added_at_the_same_moment(
    make_store: StoreFactory,
) -> None:
    store = make_store(keep="1s", partition="1m")
    assert store.add(POST, key="a", at=AT).inserted
    assert not store.add(POST, key="b", at=AT).inserted
    assert store.add(POST, key="c", at=AT + timedelta(seconds=2)).inserted


@pytest.mark.parametrize("batch", [False, True], ids=["add", "add_many"])
def test_a_copy_exactly_one_window_later_is_inside_it_and_a_microsecond_more_is_not(
    make_store: StoreFactory, batch: bool
) -> None:
    # the window holds what was kept at its start (retention.window_start: "the oldest time
    # still inside"), in the database's lookup and in a batch's own
    edge = AT + timedelta(hours=1)
    for later, inside in ((edge, True), (edge + timedelta(microseconds=1), False)):
        store = make_store(keep="1h", namespace=f"edge-{inside}")
        if batch:
            items = [{"key": "a", "text": POST, "at": AT}, {"key": "b", "text": POST, "at": later}]
            decisions = list(store.add_many(items))
        else:
            decisions = [store.add(POST, key="a", at=AT), store.add(POST, key="b", at=later)]
        assert decisions[0].inserted
        assert decisions[1].inserted is not inside, (later, batch)


def test_a_text_finds_a_bare_fingerprint_another_store_kept(make_store: StoreFactory) -> None:
    # the rows kept without a signature are found by SimHash bands only, which a text's add
    # searches when its lock statement reads that the namespace holds such a row: a store that
    # has not written one itself must take that answer (Finder._has_unsigned_rows)
    make_store().add(key="bare", fingerprint=fingerprint(POST), at=AT)
    decision = make_store().add(POST, key="text", at=AT)
    assert decision.duplicate_of is not None
    assert (decision.duplicate_of.key, decision.duplicate_of.distance) == ("bare", 0)


def test_a_short_text_is_decided_against_a_bare_fingerprint_at_the_stores_radius(
    make_store: StoreFactory,
) -> None:
    # SimHashVerification looks at a short text's candidates within short_radius (7 bits), but
    # one kept without a text has nothing to compare with: the store's max_distance (2) decides,
    # which the finder hands to the policy with the candidates (Finder._matches)
    store = make_store(policy=SimHashVerification(), max_distance=2)
    value = fingerprint(POST)
    store.add(key="three", fingerprint=flipped(value, 1, 2, 3), at=AT)
    assert store.query(POST, now=AT) == []
    store.add(key="two", fingerprint=flipped(value, 10, 20), at=AT)  # 5 bits from "three"
    assert [(m.key, m.distance) for m in store.query(POST, now=AT)] == [("two", 2)]
