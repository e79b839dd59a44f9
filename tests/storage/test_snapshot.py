"""``simstore.storage.snapshot``: what a batch engine reads of a store, on every dialect, and on
PostgreSQL the SQL text Spark's JDBC source runs (run here by the driver itself, no Spark)."""

from __future__ import annotations

import calendar
import zlib
from datetime import datetime, timedelta

from simstore.storage import snapshot
from simstore.text import minhash
from tests.conftest import StoreFactory

START = datetime(2030, 1, 1)
OLD = "the harbour ferry timetable changes on monday with boats every twenty minutes"
NEW = "a completely different notice about the library opening hours over the holidays"


def test_kept_rows_in_the_window_and_every_decided_key(make_store: StoreFactory) -> None:
    store = make_store(keep="2d")
    added = START + timedelta(days=3)
    store.add(OLD, key="old", at=START)
    store.add(NEW, key="new", at=added)
    assert not store.add(NEW, key="copy", at=added).inserted
    at = added + timedelta(hours=1)

    rows = snapshot.kept_rows(store.scope, at)
    assert [row[1] for row in rows] == ["new"]  # "old" lies outside the 2-day window
    assert sorted(snapshot.decided_keys(store.scope)) == ["copy", "new", "old"]
    assert snapshot.kept_rows(store.scope, added + timedelta(days=2, seconds=1)) == []

    if store.scope.dialect != "postgresql":
        return
    query = snapshot.kept_query(store.scope, at)
    assert (query.low, query.high, query.rows) == (rows[0][0], rows[0][0], 1)
    with store.engine.connect() as conn:
        read = conn.exec_driver_sql(f"SELECT * FROM ({query.sql}) AS kept").mappings().all()
        keys = conn.exec_driver_sql(snapshot.decided_keys_query(store.scope)).scalars().all()
    [row] = read
    assert (row["rank"], row["key"], row["fp"]) == rows[0][:3]
    # the moment in microseconds since the epoch, from the time given to add (UTC)
    assert row["moment"] == calendar.timegm(added.timetuple()) * 1_000_000
    assert sorted(keys) == ["copy", "new", "old"]


def test_the_window_keeps_a_row_exactly_keep_old_and_the_rest_of_its_partition(
    make_store: StoreFactory,
) -> None:
    """The rows a batch engine reads are those store.query finds at the same time: one exactly
    ``keep`` old is inside, one a second older is not, and both share the window's first one-hour
    partition with a later row that is inside (the partition cutoff alone keeps all three)."""
    store = make_store(keep="2d", partition="1h")
    at = datetime(2030, 1, 10, 12, 30)
    start = at - timedelta(days=2)  # 2030-01-08 12:30, in the partition of 12:00 to 13:00
    texts = {
        "before": OLD,
        "edge": NEW,
        "later": "the swimming pool closes early on friday for a school gala in the evening",
    }
    times = {
        "before": start - timedelta(seconds=1),
        "edge": start,
        "later": start.replace(minute=50),
    }
    assert {moment.hour for moment in times.values()} == {12}  # one partition
    for key, text in texts.items():
        assert store.add(text, key=key, at=times[key]).inserted

    rows = sorted(snapshot.kept_rows(store.scope, at))  # by rank, the row's id: no order is read
    assert [row[1] for row in rows] == ["edge", "later"]
    # the store's own window at the same time agrees
    found = {key: [m.key for m in store.query(text, now=at)] for key, text in texts.items()}
    assert found == {"before": [], "edge": ["edge"], "later": ["later"]}

    if store.scope.dialect != "postgresql":
        return
    query = snapshot.kept_query(store.scope, at)
    assert (query.low, query.high, query.rows) == (rows[0][0], rows[1][0], 2)
    empty = snapshot.kept_query(store.scope, at + timedelta(days=3))  # every row out of the window
    assert (empty.low, empty.high, empty.rows) == (None, None, 0)
    with store.engine.connect() as conn:
        read = conn.exec_driver_sql(
            f"SELECT rank, key, fp, text, signature, packed_text FROM ({query.sql}) AS kept "
            "ORDER BY rank"
        ).all()
        # the same rows, each column as kept_rows reads it through SQLAlchemy
        assert [
            (rank, key, fp, text, None if sig is None else bytes(sig), bytes(packed))
            for rank, key, fp, text, sig, packed in read
        ] == [(row[0], row[1], row[2], row[3], row[4], row[6]) for row in rows]
        assert conn.exec_driver_sql(f"SELECT * FROM ({empty.sql}) AS kept").all() == []


def test_a_kept_row_is_read_with_its_signature_and_text_as_stored(
    make_store: StoreFactory,
) -> None:
    """A kept text's row carries its MinHash signature and its packed text (which unpacks to the
    text the store keeps); a bare fingerprint's row has neither, and its value as the store
    reports it (signed, as the column holds it)."""
    store = make_store()  # the default policy signs every text it keeps and keeps short texts
    store.add(OLD, key="text", at=START)
    value = 0xFEDC_BA98_7654_3210  # >= 2**63: stored as a negative BIGINT
    store.add(fingerprint=value, key="bare", at=START)

    rows = {row[1]: row for row in snapshot.kept_rows(store.scope, START)}
    assert set(rows) == {"text", "bare"}
    _, _, fp, text, signature, added_at, packed = rows["text"]
    assert added_at == START and text is None  # the text column is for rows before 0014 only
    assert isinstance(signature, bytes) and len(signature) >= minhash.SIGNATURE_BYTES
    assert packed is not None and zlib.decompress(packed).decode("utf-8") == store.kept_text("text")
    _, _, fp, text, signature, added_at, packed = rows["bare"]
    assert fp == value - 2**64  # two's complement of the unsigned value
    assert (text, signature, packed, added_at) == (None, None, None, START)
