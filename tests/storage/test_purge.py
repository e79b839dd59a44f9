"""Purge at the window's edge: only partitions wholly older than ``now - keep`` go, and a dry run
counts exactly what the purge then deletes, per table, writing nothing; on every dialect.

Expected counts are worked out by hand: one-hour partitions, keep two hours, now 12:30, so the
window starts at 10:30, inside the 10:00 partition, which stays whole; rows of 09:59:59 go.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from simstore.store import SimStore
from tests._workers import stored_band_keys
from tests.conftest import StoreFactory

NOW = datetime(2026, 3, 1, 12, 30, tzinfo=timezone.utc)
EDGE = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)  # the partition the window starts in
A = 0x0123_4567_89AB_CDEF
B = 0xFEDC_BA98_7654_3210
C = 0x0F0F_0F0F_F0F0_F0F0
TEXT = "The ferry to the islands leaves at seven every morning from the north pier."
OTHER_TEXT = "Quarterly figures show the bakery sold more rye bread than ever before."


def _keys(store: SimStore) -> list[str]:
    decided = [
        store.get(key)
        for key in ("old", "old-dup", "old-text", "edge", "edge-dup", "edge-text", "new")
    ]
    return [d.key for d in decided if d is not None]


def _band_keys(store: SimStore) -> int:
    with store.engine.connect() as conn:
        return len(stored_band_keys(conn, namespace=store.namespace))


def test_a_dry_run_counts_what_the_purge_deletes_at_the_partition_edge(
    make_store: StoreFactory,
) -> None:
    store = make_store(keep="2h", partition="1h")
    before = EDGE - timedelta(seconds=1)  # the last second of the 09:00 partition
    store.add(key="old", fingerprint=A, at=before)
    store.add(key="old-dup", fingerprint=A ^ 1, at=before)
    store.add(TEXT, key="old-text", at=before - timedelta(minutes=30))
    store.add(key="edge", fingerprint=B, at=EDGE)  # older than the window, in its partition
    store.add(key="edge-dup", fingerprint=B ^ 1, at=EDGE)
    text_keys = _band_keys(store)
    assert text_keys > 0  # the text's band keys, stored with it
    store.add(OTHER_TEXT, key="edge-text", at=EDGE)  # its band keys stay
    store.add(key="new", fingerprint=C, at=NOW - timedelta(minutes=30))
    every_key = _band_keys(store)
    assert every_key > text_keys

    dry = store.purge_counts(now=NOW, dry_run=True)
    assert dry is not None and dry.dry_run
    assert (dry.fingerprints, dry.decisions, dry.band_keys) == (2, 1, text_keys)
    assert dry.before == EDGE
    assert len(_keys(store)) == 7 and _band_keys(store) == every_key  # nothing was written

    done = store.purge_counts(now=NOW)
    assert done is not None and not done.dry_run
    assert (done.fingerprints, done.decisions, done.band_keys) == (2, 1, text_keys)
    assert _keys(store) == ["edge", "edge-dup", "edge-text", "new"]
    assert _band_keys(store) == every_key - text_keys
    again = store.purge_counts(now=NOW, dry_run=True)
    assert again is not None and (again.fingerprints, again.decisions, again.band_keys) == (0, 0, 0)
