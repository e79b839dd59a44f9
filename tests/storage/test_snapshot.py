"""``simstore.storage.snapshot``: what a batch engine reads of a store, on every dialect, and on
PostgreSQL the SQL text Spark's JDBC source runs (run here by the driver itself, no Spark)."""

from __future__ import annotations

import calendar
from datetime import datetime, timedelta

from simstore.storage import snapshot
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
