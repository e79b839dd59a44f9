"""``simstore.io.ingest.ingest``: a bad record costs only itself, outcomes come in input order."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simstore.errors import DatabaseUnavailable, InvalidInput
from simstore.io.ingest import Rejected, ingest
from simstore.io.records import InputOptions, Record, read_records
from simstore.results import Decision
from simstore.store import SimStore

FERRY = (
    "The harbour ferry timetable changes on Monday: boats leave every twenty minutes from the "
    "north pier between six and nine in the morning, and every half hour for the rest of the day."
)
FERRY_EDITED = FERRY.replace("boats leave", "the boats will leave")  # an edit, not a new date
LIBRARY = (
    "The city library opens a reading room on the third floor with forty desks, long opening "
    "hours on weekdays and a quiet corner for children's homework after school."
)
MARKET = (
    "The farmers' market moves to the old railway yard for the summer, with stalls of cheese, "
    "bread, honey and vegetables every Saturday from eight until two in the afternoon."
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SimStore]:
    with SimStore(f"sqlite:///{tmp_path / 'store.db'}") as made:
        yield made


def summary(outcomes: list[Decision | Rejected]) -> list[tuple[str | None, str]]:
    """(key, kept / duplicate of X / rejected) per outcome."""
    shown: list[tuple[str | None, str]] = []
    for outcome in outcomes:
        if isinstance(outcome, Rejected):
            shown.append((outcome.key, "rejected"))
        elif outcome.inserted:
            shown.append((outcome.key, "kept"))
        else:
            match = outcome.duplicate_of
            shown.append((outcome.key, f"duplicate of {match.key if match else None}"))
    return shown


def test_a_bad_record_in_a_batch_is_rejected_alone_and_the_rest_decided_in_order(
    store: SimStore,
) -> None:
    records: list[tuple[str, Any]] = [
        ("ferry", FERRY),
        ("empty", None),  # no text (and no fingerprint): InvalidInput
        ("ferry2", FERRY_EDITED),
        ("library", LIBRARY),
        ("ferry", MARKET),  # the key is taken by another text: a KeyConflict
        ("market", MARKET),
    ]
    outcomes = list(ingest(store, records, batch_size=10))
    assert summary(outcomes) == [
        ("ferry", "kept"),
        ("empty", "rejected"),
        ("ferry2", "duplicate of ferry"),
        ("library", "kept"),
        ("ferry", "rejected"),
        ("market", "kept"),
    ]
    empty, conflict = (outcome for outcome in outcomes if isinstance(outcome, Rejected))
    assert "text" in empty.reason and str(empty).startswith("'empty': ")
    assert "added before" in conflict.reason
    assert store.get("empty") is None
    assert [store.get(key) is not None for key in ("ferry2", "library", "market")] == [True] * 3


def test_batches_after_a_failed_one_go_on_as_batches(store: SimStore) -> None:
    records: list[tuple[str, Any]] = [
        (f"k{i}", f"{LIBRARY} number {i} of the series {i * 7919}") for i in range(7)
    ]
    records[3] = ("k3", None)
    outcomes = list(ingest(store, records, batch_size=2))
    assert [outcome.key for outcome in outcomes] == [f"k{i}" for i in range(7)]
    assert [isinstance(outcome, Rejected) for outcome in outcomes] == [i == 3 for i in range(7)]
    assert store.stats().decisions == 6


def test_strict_stops_at_the_first_bad_record_and_keeps_the_ones_before(
    store: SimStore,
) -> None:
    records: list[tuple[str, Any]] = [
        ("ferry", FERRY),
        ("library", LIBRARY),
        ("empty", None),
        ("market", MARKET),
    ]
    outcomes = list(ingest(store, records, batch_size=10, strict=True))
    assert summary(outcomes) == [("ferry", "kept"), ("library", "kept"), ("empty", "rejected")]
    assert store.get("library") is not None
    assert store.get("market") is None


def test_a_readers_rejected_record_is_passed_through_in_its_place(
    store: SimStore, tmp_path: Path
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(
        f'{{"id": "ferry", "text": "{FERRY}"}}\nnot json\n{{"id": "market", "text": "{MARKET}"}}\n',
        encoding="utf-8",
    )
    options = InputOptions("jsonl", "text", "id", strict=False, batch_size=10, max_distance=None)
    outcomes = list(ingest(store, read_records([str(path)], options)))
    assert summary(outcomes) == [("ferry", "kept"), (None, "rejected"), ("market", "kept")]
    rejected = outcomes[1]
    assert isinstance(rejected, Rejected)
    assert str(rejected).startswith(f"{path}:2: invalid JSON")


def test_store_rejections_name_the_records_source_and_line(store: SimStore) -> None:
    record = Record("in.jsonl", 7, "ferry", MARKET, {})  # the key is taken by another text
    outcomes = list(ingest(store, [("ferry", FERRY), record]))
    assert isinstance(outcomes[1], Rejected)
    assert outcomes[1].where == "in.jsonl:7" and outcomes[1].key == "ferry"
    assert str(outcomes[1]).startswith("in.jsonl:7: key 'ferry' was added before")


def test_an_error_while_reading_adds_what_was_read_then_is_raised(store: SimStore) -> None:
    def records() -> Iterator[tuple[str, str]]:
        yield "ferry", FERRY
        yield "library", LIBRARY
        raise InvalidInput("the rest of the file cannot be read")

    seen: list[Decision | Rejected] = []
    with pytest.raises(InvalidInput, match="cannot be read"):
        seen.extend(ingest(store, records(), batch_size=10))
    assert summary(seen) == [("ferry", "kept"), ("library", "kept")]
    assert store.get("library") is not None


def test_a_failing_database_is_raised_not_counted_as_bad_records(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with SimStore(f"sqlite:///{path}") as store:
        store.add(FERRY, key="ferry")
        connection = sqlite3.connect(path)
        connection.execute("DROP TABLE simstore_decisions")
        connection.commit()
        connection.close()
        seen: list[Decision | Rejected] = []
        with pytest.raises(DatabaseUnavailable):
            seen.extend(ingest(store, [("library", LIBRARY), ("market", MARKET)]))
        assert seen == []


def test_with_worker_processes_bad_records_cost_the_same_and_outcomes_keep_their_order(
    tmp_path: Path,
) -> None:
    # the workers plan batches ahead of the one being written; a batch that fails is retried
    # record by record, so the records read ahead must come out as they would without workers
    texts = [FERRY, LIBRARY, MARKET]
    records: list[tuple[str, Any]] = []
    for n in range(30):
        records.append((f"r{n}", f"{texts[n % 3]} Notice {n * 7919} of {n * 104729}."))
        if n % 7 == 3:
            records.append((f"bad{n}", None))
    outcomes = {}
    for workers in (0, 1, 2):
        with SimStore(f"sqlite:///{tmp_path / f'w{workers}.db'}") as target:
            outcomes[workers] = summary(
                list(ingest(target, records, batch_size=4, workers=workers))
            )
    assert outcomes[2] == outcomes[1] == outcomes[0]
    assert sum(shown == "rejected" for _key, shown in outcomes[2]) == 4  # n = 3, 10, 17, 24
    assert len(outcomes[2]) == len(records)


def test_a_negative_worker_count_is_refused(store: SimStore) -> None:
    with pytest.raises(InvalidInput, match="workers"):
        ingest(store, [("a", FERRY)], workers=-1)
