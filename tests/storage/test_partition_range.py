"""Times whose partition number does not fit the INT ``part`` columns (one-minute partitions after
6053-01-23) are refused with InvalidInput on every dialect before anything is written: SQLite
stored them while PostgreSQL and MariaDB failed with "integer out of range"."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from simstore.errors import BatchFailed, InvalidInput
from simstore.storage.retention import EPOCH, MAX_PART, partition_of
from tests.conftest import StoreFactory

TEXT = "The harbour ferry timetable changes on Monday: boats leave every twenty minutes."
LAST = EPOCH + timedelta(minutes=MAX_PART + 1) - timedelta(seconds=1)  # 6053-01-23 02:07:59
TOO_LATE = LAST + timedelta(seconds=1)


def test_the_edge_of_the_partition_numbers() -> None:
    assert partition_of(LAST, 60) == MAX_PART
    with pytest.raises(InvalidInput, match="past the last one this store's 1m partitions"):
        partition_of(TOO_LATE, 60)
    assert partition_of(TOO_LATE, 3600) < MAX_PART  # hour partitions reach the year 9999


def test_one_minute_partitions_refuse_later_times_on_every_dialect(
    make_store: StoreFactory,
) -> None:
    with make_store(partition="1m") as store:
        assert store.add(TEXT, key="last", at=LAST).inserted
        with pytest.raises(InvalidInput, match="use a longer partition"):
            store.add("a different text about the weather in the mountains", key="x", at=TOO_LATE)
        items = [{"key": "y", "text": "another text of its own words", "at": TOO_LATE}]
        with pytest.raises(BatchFailed) as failure:
            list(store.add_many(items))
        assert isinstance(failure.value.__cause__, InvalidInput)
        with pytest.raises(BatchFailed, match="partitions can number"):
            list(store.add_many([("z", "and one more text here")], at=datetime(9000, 1, 1)))
        rejected = list(store.ingest(items))
        assert [type(result).__name__ for result in rejected] == ["Rejected"]
        assert store.stats().kept == 1
        assert [match.key for match in store.query(TEXT, now=LAST)] == ["last"]
