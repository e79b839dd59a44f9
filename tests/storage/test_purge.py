"""Purge at the window's edge: only partitions wholly older than ``now - keep`` go, and a dry run
counts exactly what the purge then deletes, per table, writing nothing; on every dialect.

Expected counts are worked out by hand: one-hour partitions, keep two hours, now 12:30, so the
window starts at 10:30, inside the 10:00 partition, which stays whole; rows of 09:59:59 go.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from simstore.errors import InvalidType
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
    make_store: StoreFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="simstore")
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
    # what a purge reports besides its counts: the window, the partition length, no partition
    # dropped (none of these databases is partitioned)
    assert (dry.keep, dry.partition_seconds, dry.partition_rows) == (timedelta(hours=2), 3600, 0)
    assert len(_keys(store)) == 7 and _band_keys(store) == every_key  # nothing was written

    done = store.purge_counts(now=NOW)
    assert done is not None and done.dry_run is False
    assert (done.fingerprints, done.decisions, done.band_keys) == (2, 1, text_keys)
    assert (done.keep, done.before, done.partition_seconds, done.partition_rows) == (
        timedelta(hours=2),
        EDGE,
        3600,
        0,
    )
    # the log names the rows, the window's start (12:30 - 2h, naive UTC) and the namespace
    said = f"purged 3 rows older than 2026-03-01 10:30:00 from {store.namespace}"
    assert said in caplog.messages
    assert _keys(store) == ["edge", "edge-dup", "edge-text", "new"]
    assert _band_keys(store) == every_key - text_keys
    again = store.purge_counts(now=NOW, dry_run=True)
    assert again is not None and (again.fingerprints, again.decisions, again.band_keys) == (0, 0, 0)


def test_a_purge_leaves_other_namespaces_rows_and_decisions(make_store: StoreFactory) -> None:
    # the rows and decisions a purge deletes are its own namespace's: another namespace with the
    # same rows in the same old partition keeps them all
    store = make_store(keep="2h", partition="1h")
    other = make_store(keep="2h", partition="1h", namespace=f"other-{uuid.uuid4().hex[:8]}")
    before = EDGE - timedelta(minutes=30)  # 09:30, past the window at 12:30
    for each in (store, other):
        each.add(key="old", fingerprint=A, at=before)
        each.add(key="old-dup", fingerprint=A ^ 1, at=before)
    purged = store.purge_counts(now=NOW)
    assert purged is not None and (purged.fingerprints, purged.decisions) == (1, 1)
    assert store.get("old") is None and store.get("old-dup") is None
    assert other.get("old") is not None and other.get("old-dup") is not None
    assert (other.stats().kept, other.stats().decisions) == (1, 2)
    other.close()
    store.close()


def test_a_dry_run_flag_that_is_not_a_bool_is_refused(make_store: StoreFactory) -> None:
    store = make_store(keep="2h", partition="1h")
    with pytest.raises(InvalidType, match=r"^dry_run must be a bool, not str$"):
        store.purge_counts(now=NOW, dry_run="yes")  # type: ignore[arg-type]
    store.close()
