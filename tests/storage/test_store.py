"""SimStore behaviour on every dialect: adds, queries at every radius, retention, bad input."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import random
import signal
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine

from simstore import fingerprint
from simstore.errors import (
    DatabaseUnavailable,
    InvalidInput,
    KeyConflict,
    PresetMismatch,
    SchemaOutOfDate,
)
from simstore.policy import _planning as planning
from simstore.policy.policies import SimHashOnly
from simstore.results import Stats
from simstore.storage import migrate
from simstore.storage.schema import fingerprints, namespaces
from simstore.store import BatchFailed, SimStore
from simstore.text.presets import get_preset
from tests.conftest import HANG, StoreFactory

LONG_ZH = "今天天气很好，我们一起去公园散步，顺便看看湖边新开的花。明天可能下雨，出门记得带伞。"
LONG_ZH_EDIT = "今天天气很好，我们一起去公园散步，顺便看看湖边新开的花！明天可能下雨，出门记得带伞"
OTHER = "The quarterly report shows revenue growth in every region except the north-east."


def flip(value: int, bits: list[int]) -> int:
    for bit in bits:
        value ^= 1 << bit
    return value


def test_add_keeps_first_and_names_it_for_near_duplicates(make_store: StoreFactory) -> None:
    store = make_store()
    first = store.add(LONG_ZH, key="a")
    second = store.add(LONG_ZH_EDIT, key="b")
    third = store.add(OTHER, key="c")
    assert first.inserted and third.inserted
    assert not second.inserted
    assert second.duplicate_of is not None and second.duplicate_of.key == "a"
    assert second.duplicate_of.distance == (first.fingerprint ^ second.fingerprint).bit_count()
    assert store.stats().kept == 2 and store.stats().duplicates == 1


def test_readding_a_key_replays_its_decision_and_conflicts_on_new_text(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    store.add(LONG_ZH, key="a")
    store.add(LONG_ZH_EDIT, key="b")
    again = store.add(LONG_ZH_EDIT, key="b")
    assert not again.inserted and again.duplicate_of is not None
    assert again.duplicate_of.key == "a"
    assert store.add(LONG_ZH, key="a").inserted
    assert store.stats().decisions == 2
    with pytest.raises(KeyConflict):
        store.add(OTHER, key="a")


@pytest.mark.parametrize("radius", range(0, 17))
def test_query_equals_brute_force_at_every_radius(make_store: StoreFactory, radius: int) -> None:
    rng = random.Random(radius)
    store = make_store(max_distance=radius)
    center = rng.getrandbits(64)
    planted: dict[str, int] = {}
    for distance in range(0, 21):
        for copy in range(1 if distance == 0 else 2):
            value = flip(center, rng.sample(range(64), distance))
            planted[f"d{distance}-{copy}"] = value
    for index in range(60):  # unrelated fingerprints: about 32 bits away
        planted[f"far{index}"] = rng.getrandbits(64)
    decisions = list(
        store.add_many(
            [{"key": key, "fingerprint": value} for key, value in planted.items()],
            max_distance=0,
        )
    )
    assert all(decision.inserted for decision in decisions)
    expected = sorted(
        (key for key, value in planted.items() if (value ^ center).bit_count() <= radius)
    )
    found = store.query(fingerprint=center)
    assert sorted(match.key for match in found) == expected
    assert [m.distance for m in found] == sorted(m.distance for m in found)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=8, unique=True))
def test_unsigned_values_round_trip(make_store: StoreFactory, values: list[int]) -> None:
    store = make_store(max_distance=0)
    values = [*values, 2**63, 2**64 - 1, 0]
    offset = uuid.uuid4().hex  # hypothesis reseeds `random`, and the namespace is shared
    for index, value in enumerate(dict.fromkeys(values)):
        key = f"v{offset}-{index}"
        store.add(key=key, fingerprint=value)
        got = store.get(key)
        assert got is not None and got.fingerprint == value
        assert any(match.fingerprint == value for match in store.query(fingerprint=value))


def test_near_empty_texts_only_match_identical_content(make_store: StoreFactory) -> None:
    store = make_store(max_distance=16)
    assert store.add("ok", key="a").inserted
    assert store.add("no", key="b").inserted
    assert not store.add("OK!", key="c").inserted  # same normalised content as "ok"


def test_rows_outside_the_window_never_match_and_purge_removes_them(
    make_store: StoreFactory,
) -> None:
    store = make_store(keep="2d")
    now = datetime(2030, 1, 10, 12, 0)
    store.add(LONG_ZH, key="old", at=now - timedelta(days=3))
    assert store.query(LONG_ZH, now=now) == []
    fresh = store.add(LONG_ZH_EDIT, key="new", at=now)
    assert fresh.inserted  # the old near-duplicate is out of the window
    assert [m.key for m in store.query(LONG_ZH, now=now)] == ["new"]
    assert store.purge(now=now) == 1  # the old kept row, the record of its decision too
    assert store.get("old") is None and store.get("new") is not None
    assert store.purge(now=now) == 0


@pytest.mark.parametrize("policy", ["minhash", "simhash"])
def test_the_window_edge_is_exact_inside_one_partition(
    make_store: StoreFactory, policy: str
) -> None:
    """Rows 2 days 10 minutes and 1 day 23 h 50 minutes old under keep="2d" share one 1-hour
    partition, so the SQL partition cutoff returns both: only the exact time check can tell
    them apart (the one just outside must never match, the one just inside must)."""
    options: dict[str, Any] = {"keep": "2d", "partition": "1h"}
    options["policy"] = SimHashOnly() if policy == "simhash" else None
    store = make_store(**options)
    now = datetime(2030, 1, 10, 12, 30)
    outside, inside = now - timedelta(days=2, minutes=10), now - timedelta(days=2, minutes=-10)
    assert outside.hour == inside.hour == 12  # one partition: 12:00 to 13:00 two days before
    store.add(LONG_ZH, key="outside", at=outside)
    assert store.query(LONG_ZH, now=now) == []
    assert store.add(LONG_ZH_EDIT, key="new", at=now).inserted
    store.add(OTHER, key="inside", at=inside)
    assert [m.key for m in store.query(OTHER, now=now)] == ["inside"]
    again = store.add(OTHER + " ", key="again", at=now)
    assert again.duplicate_of is not None and again.duplicate_of.key == "inside"
    # the same edge between the items of one add_many batch, in a namespace of its own
    options["namespace"] = f"batch-{uuid.uuid4().hex[:8]}"
    batch = [
        {"key": "b-outside", "text": LONG_ZH, "at": outside},
        {"key": "b-new", "text": LONG_ZH_EDIT, "at": now},
        {"key": "b-inside", "text": OTHER, "at": inside},
        {"key": "b-again", "text": OTHER + " ", "at": now},
    ]
    decided = list(make_store(**options).add_many(batch))
    assert [d.inserted for d in decided] == [True, True, True, False]


def test_add_many_resolves_duplicates_inside_a_batch_in_input_order(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    items = [("a", LONG_ZH), ("b", OTHER), ("c", LONG_ZH_EDIT), ("d", OTHER + " ")]
    decisions = list(store.add_many(items, batch_size=10))
    assert [d.inserted for d in decisions] == [True, True, False, False]
    assert [d.duplicate_of.key for d in decisions[2:] if d.duplicate_of] == ["a", "b"]


def test_a_failed_batch_is_not_written_and_reports_committed_items(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    items: list[tuple[str, str]] = [(f"k{i}", f"document number {i} " * 5) for i in range(4)]
    items.append(("", "a bad key"))
    with pytest.raises(BatchFailed) as failure:
        list(store.add_many(items, batch_size=3))
    assert failure.value.committed == 3
    assert store.stats().decisions == 3
    assert store.get("k3") is None


def test_preset_is_recorded_and_a_different_one_is_refused(make_store: StoreFactory) -> None:
    store = make_store(preset="pypi-simhash")
    assert store.preset.name == "pypi-simhash"
    assert make_store().preset.name == "pypi-simhash"  # None adopts the recorded preset
    with pytest.raises(PresetMismatch, match="pypi-simhash"):
        make_store(preset="char4-pre")


def test_a_preset_with_changed_parameters_is_adopted_whole(make_store: StoreFactory) -> None:
    wide = get_preset("pypi-simhash").with_params(width=6)
    assert make_store(preset=wide).add(OTHER, key="a").inserted
    adopted = make_store()  # no preset: the recorded one, its parameters included
    assert adopted.preset == wide and adopted.preset.params["width"] == 6
    assert [match.key for match in adopted.query(OTHER)] == ["a"]
    with pytest.raises(
        PresetMismatch, match=r'refusing fingerprints made with pypi-simhash@.*"width":4'
    ):
        make_store(preset="pypi-simhash")  # its default width, 4


@pytest.mark.parametrize(
    ("column", "value", "error", "message"),
    [
        ("preset_name", "gone", PresetMismatch, r"namespace '\S+' uses preset gone@\d+ \{.*\}, "
         r"unknown to simstore \S+$"),
        ("band_layout", "8x8", SchemaOutOfDate, r"^namespace uses band layout 8x8$"),
        ("minhash_scheme", "minhash-old", PresetMismatch, r"namespace '\S+' in \S+ holds MinHash "
         r"signatures of scheme minhash-old; simstore \S+ makes minhash-\S+, whose band keys"),
    ],
)  # fmt: skip
def test_a_namespace_of_another_recipe_is_refused_with_what_it_holds(
    make_store: StoreFactory, engine: Engine, column: str, value: str,
    error: type[Exception], message: str,
) -> None:  # fmt: skip
    namespace = make_store().namespace
    with engine.begin() as conn:
        conn.execute(
            sa.update(namespaces).where(namespaces.c.name == namespace).values({column: value})
        )
    with pytest.raises(error, match=message):
        make_store()


def test_a_preset_mismatch_names_the_namespace_the_database_and_both_presets(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    SimStore(url, namespace="posts", preset="pypi-simhash").close()
    with pytest.raises(PresetMismatch) as refused:
        SimStore(url, namespace="posts", preset="char4-pre")
    message = str(refused.value)
    assert message.startswith(f"namespace 'posts' in {url} was made with preset pypi-simhash@")
    assert "; refusing fingerprints made with char4-pre@" in message


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"key": ""}, "key"),
        ({"key": "x" * 256}, "key"),
        ({"key": "k", "fingerprint": -1}, "unsigned"),
        ({"key": "k", "fingerprint": 2**64}, "unsigned"),
        ({"key": "k", "fingerprint": 5, "text": "both"}, "exactly one"),
        ({"key": "k"}, "exactly one"),
        ({"key": "k", "text": b"bytes"}, "str"),
        ({"key": "k", "text": "t", "max_distance": 99}, "max_distance"),
    ],
)
def test_bad_input_is_refused_and_writes_nothing(
    make_store: StoreFactory, kwargs: dict[str, object], message: str
) -> None:
    store = make_store()
    with pytest.raises(InvalidInput, match=message):
        store.add(**kwargs)  # type: ignore[arg-type]
    assert store.stats().decisions == 0


def test_a_caller_transaction_is_used_with_savepoints_and_never_committed(
    engine: Engine, dialect: str
) -> None:
    migrate.upgrade(engine)  # schema first: pysqlite would autocommit DDL inside a transaction
    with engine.connect() as connection:
        transaction = connection.begin()
        store = SimStore(connection, namespace="caller-tx", auto_upgrade=True)
        store.add(LONG_ZH, key="a")
        assert store.get("a") is not None
        transaction.rollback()
    fresh = SimStore(engine, namespace="caller-tx", auto_upgrade=True)
    assert fresh.get("a") is None


def test_a_callers_connection_outside_a_transaction_gets_the_stores_own_commits(
    engine: Engine, tmp_path: Path
) -> None:
    # Outside a transaction of the caller's, the store's writes are its own and committed: the
    # connection is left as it came after opening (reading the schema's revision, creating it
    # where none is there) and after an add, and another connection sees the row.
    fresh_file = sa.create_engine(f"sqlite:///{tmp_path}/fresh.db")  # no schema yet
    try:
        for each in (engine, fresh_file):
            with (
                each.connect() as connection,
                SimStore(connection, namespace="caller-conn", auto_upgrade=True) as store,
            ):
                assert not connection.in_transaction()
                assert store.add(LONG_ZH, key="a").inserted
                assert not connection.in_transaction()
            with SimStore(each, namespace="caller-conn") as other:
                assert other.get("a") is not None, each.url
    finally:
        fresh_file.dispose()


def test_remove_forgets_a_key(make_store: StoreFactory) -> None:
    store = make_store()
    store.add(LONG_ZH, key="a")
    assert store.remove("a") and not store.remove("a")
    assert store.add(LONG_ZH_EDIT, key="b").inserted


def test_remove_forgets_a_key_of_its_own_namespace_only(make_store: StoreFactory) -> None:
    # a kept key and a duplicate's key (a decision alone) are removed, each True, from this
    # namespace; another namespace's rows of the same keys stay
    store = make_store()
    other = make_store(namespace=f"other-{uuid.uuid4().hex[:8]}")
    for each in (store, other):
        each.add(LONG_ZH, key="a")
        assert not each.add(LONG_ZH_EDIT, key="a-dup").inserted
    assert store.remove("a-dup") and store.get("a-dup") is None
    assert store.remove("a") and store.get("a") is None
    assert not store.remove("a") and not store.remove("missing")
    assert other.get("a") is not None and other.get("a-dup") is not None
    assert other.add(LONG_ZH_EDIT, key="again").duplicate_of is not None  # its band keys stay
    assert (other.stats().kept, other.stats().decisions) == (1, 3)
    other.close()
    store.close()


def test_unreachable_database_is_a_clear_error_without_password() -> None:
    url = "postgresql+psycopg://user:s3cret@127.0.0.1:1/nowhere"
    with pytest.raises(DatabaseUnavailable) as failure:
        SimStore(url)
    assert "s3cret" not in str(failure.value) and "127.0.0.1:1" in str(failure.value)


@pytest.mark.parametrize("name", ["{folder}/x.db", "file:{folder}/x.db?uri=true"])
def test_missing_sqlite_folder_is_a_clear_error(tmp_path: Path, name: str) -> None:
    # a plain path and SQLite's URI filename; a space in the folder's name, which the URI keeps
    folder = tmp_path / "no such" / "folder"
    with pytest.raises(DatabaseUnavailable) as failure:
        SimStore("sqlite:///" + name.format(folder=folder))
    assert str(failure.value).endswith(f": folder {folder} does not exist")


def test_a_sqlite_file_simstore_opens_is_in_wal_mode(tmp_path: Path) -> None:
    # SQLite's write-ahead log, which simstore sets on every file it opens: readers do not wait
    # for a writer, and a commit does not wait for the disk (docs: "WAL, synchronous=NORMAL")
    path = tmp_path / "wal.db"
    with SimStore(f"sqlite:///{path}") as store:
        store.add(key="a", fingerprint=1)
    with contextlib.closing(sqlite3.connect(path)) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_query_accepts_text_and_matches_fingerprint_path(make_store: StoreFactory) -> None:
    store = make_store(policy="simhash")
    store.add(LONG_ZH, key="a")
    by_text = store.query(LONG_ZH_EDIT)
    by_value = store.query(fingerprint=fingerprint(LONG_ZH_EDIT))
    assert [m.key for m in by_text] == [m.key for m in by_value] == ["a"]
    assert store.query(OTHER) == []


def test_a_signed_row_is_found_by_its_text_and_a_fingerprint_row_by_its_value(
    make_store: StoreFactory, engine: Engine
) -> None:
    store = make_store()  # the default policy signs every text it keeps
    store.add(LONG_ZH, key="signed")
    store.add(fingerprint=0x0123_4567_89AB_CDEF, key="bare")
    assert [m.key for m in store.query(LONG_ZH_EDIT)] == ["signed"]
    # band keys find a signed row; a bare fingerprint has none, and the SimHash band indexes
    # hold only the rows kept without a signature
    assert store.query(fingerprint=fingerprint(LONG_ZH_EDIT)) == []
    assert [m.key for m in store.query(fingerprint=0x0123_4567_89AB_CDEE)] == ["bare"]
    with engine.connect() as connection:
        flags = connection.execute(
            sa.select(fingerprints.c.key, fingerprints.c.simhash_indexed).where(
                fingerprints.c.ns_id == store.ns_id
            )
        ).all()
    assert sorted((key, bool(flag)) for key, flag in flags) == [("bare", True), ("signed", False)]


def test_stats_counts_match_the_tables(make_store: StoreFactory, engine: Engine) -> None:
    store = make_store()
    topics = ["cats and dogs sleep all day", "trains leave at nine", "rain is due on Sunday"]
    list(store.add_many([(f"k{i}", f"{topics[i // 3]}. " * 3) for i in range(9)]))
    stats = store.stats()
    with engine.connect() as connection:
        kept = connection.execute(
            sa.text(
                "SELECT COUNT(*) FROM simstore_fingerprints f JOIN simstore_namespaces n "
                "ON n.id = f.ns_id WHERE n.name = :ns"
            ),
            {"ns": store.namespace},
        ).scalar_one()
    assert stats.kept == kept == 3 and stats.duplicates == 6 and stats.decisions == 9


def test_stats_names_the_namespace_its_time_span_partitions_and_cap(
    make_store: StoreFactory,
) -> None:
    # hourly partitions (the default): kept at 10:00, 10:30 and 12:15 span two hours' partitions,
    # 10:00 to 12:15; a copy (1 bit from the first) logged at 15:00 is a decision, not a kept text
    t0 = datetime(2026, 3, 1, 10, tzinfo=timezone.utc)
    first = 0x0123_4567_89AB_CDEF
    values = [first, first ^ 0xFFFF_FFFF_0000_0000, first ^ 0xFFFF_FFFF_FFFF_FFFF]  # 32+ bits apart
    moments = [t0, t0 + timedelta(minutes=30), t0 + timedelta(hours=2, minutes=15)]
    with make_store() as store:
        for i, (value, moment) in enumerate(zip(values, moments, strict=True)):
            assert store.add(fingerprint=value, key=f"k{i}", at=moment).inserted
        assert store.stats().duplicates == 0  # no decision is logged yet: the sum of none
        copy = store.add(fingerprint=first ^ 1, key="copy", at=t0 + timedelta(hours=5))
        assert copy.duplicate_of is not None and copy.duplicate_of.key == "k0"
        store.set_max_kept(7)
        stats = store.stats()
        expected = Stats(store.namespace, store.preset.label, 3, 4, 1, t0, moments[2], 2, 7)
    assert stats == expected


def test_many_threads_query_an_owned_sqlite_store_while_it_grows(tmp_path: object) -> None:
    """Each querying thread keeps a connection of its own (SimStore.scope.connections): they
    all see rows committed after they first queried, and more threads than the pool's size never
    starve a writer."""
    from concurrent.futures import ThreadPoolExecutor

    store = SimStore(f"sqlite:///{tmp_path}/threads.db")
    rng = random.Random(9)
    values = [rng.getrandbits(64) for _ in range(60)]

    barrier = threading.Barrier(20)

    def reader(start: int) -> list[int]:
        barrier.wait(timeout=HANG)  # 20 distinct threads, each holding a connection
        seen = []
        for value in values[start::20]:
            seen.append(len(store.query(fingerprint=value, max_distance=0)))
        return seen

    with ThreadPoolExecutor(max_workers=20) as pool:
        assert all(count == 0 for counts in pool.map(reader, range(20)) for count in counts)
        for i, value in enumerate(values):  # the 20 reader threads keep their connections
            assert store.add(key=f"k{i}", fingerprint=value).inserted
        assert all(count == 1 for counts in pool.map(reader, range(20)) for count in counts)
    store.close()


def test_an_owned_sqlite_store_keeps_one_connection_and_retires_it_after_a_driver_error(
    tmp_path: object,
) -> None:
    """Adds and queries of one thread share a kept connection (SimStore.scope.connections): an add
    simstore refuses rolls back on it and keeps it; a driver error (the write lock held elsewhere
    past the busy timeout) retires it, writes nothing, and the next add works."""
    import sqlite3

    path = f"{tmp_path}/kept.db"
    store = SimStore(f"sqlite:///{path}?timeout=0.2", policy=SimHashOnly())
    assert store.add(key="a", fingerprint=1).inserted
    kept = store.scope.connections.current_kept()
    assert kept is not None  # the add's, kept for the next call
    elsewhere: list[object] = []
    thread = threading.Thread(
        target=lambda: elsewhere.append(store.scope.connections.current_kept())
    )
    thread.start()
    thread.join()
    assert elsewhere == [None]  # a thread that never used the store has none (and opens none)
    with pytest.raises(KeyConflict):
        store.add(key="a", fingerprint=1 << 40)
    assert store.scope.connections.current_kept() is kept
    far, farther = 0xFFFF_FFFF_0000_0000, 0x0000_0000_FFFF_FFF0  # 32+ bits from the others
    assert store.add(key="b", fingerprint=far).inserted
    assert [match.key for match in store.query(fingerprint=far)] == ["b"]
    assert store.scope.connections.current_kept() is kept

    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # holds the write lock
    with pytest.raises(DatabaseUnavailable, match="locked"):
        store.add(key="c", fingerprint=farther)
    assert store.scope.connections.current_kept() is None
    blocker.execute("ROLLBACK")
    rows = blocker.execute("SELECT key FROM simstore_fingerprints ORDER BY key").fetchall()
    assert rows == [("a",), ("b",)]  # committed, seen from another connection; no "c"
    assert store.add(key="c", fingerprint=farther).inserted
    assert store.scope.connections.current_kept() is not kept
    blocker.close()
    store.close()


def test_ingest_loses_only_the_bad_records(make_store: StoreFactory) -> None:
    from simstore.io.ingest import Rejected

    store = make_store()
    store.add("what b said first", key="b")
    records = [("a", "the first text of the feed"), ("b", "b says something else"), ("c", "more")]
    outcomes = list(store.ingest(records, batch_size=10))
    assert [o.key for o in outcomes] == ["a", "b", "c"]
    assert isinstance(outcomes[1], Rejected) and "b" in str(outcomes[1])  # a key conflict
    assert store.get("a") is not None and store.get("c") is not None


def test_a_replay_says_so_and_names_the_removed_key_it_was_recorded_against(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    first = store.add("the harbour ferry leaves at noon on sundays", key="a")
    copy = store.add("the harbour ferry leaves at noon on sundays!", key="b")
    assert not first.replayed and not copy.replayed and copy.recorded_as == "a"
    again = store.add("the harbour ferry leaves at noon on sundays!", key="b")
    assert again.replayed and again.duplicate_of is not None and again.duplicate_of.key == "a"
    assert store.remove("a")
    recorded = store.get("b")
    assert recorded is not None and recorded.replayed
    assert recorded.duplicate_of is None and recorded.recorded_as == "a"  # the truth, not None


def _corpus_with_copies(count: int) -> list[tuple[str, str]]:
    """Distinct texts, each followed later by a near copy (a word changed), and a few exact ones."""
    words = [
        "river",
        "stone",
        "lantern",
        "orchard",
        "signal",
        "copper",
        "meadow",
        "harbor",
        "ember",
        "violet",
    ]
    texts = [
        " ".join(words[(i * 7 + j) % len(words)] + str(i * 31 + j) for j in range(40))
        for i in range(count)
    ]
    items = [(f"t{i}", text) for i, text in enumerate(texts)]
    items += [
        (f"near{i}", text.replace(str(i * 31 + 5), "changed")) for i, text in enumerate(texts)
    ]
    items += [(f"copy{i}", texts[i]) for i in range(0, count, 9)]
    return items


def test_add_many_with_worker_processes_decides_as_one_process_does(
    make_store: StoreFactory,
) -> None:
    items = _corpus_with_copies(120)
    alone = make_store(namespace="alone")
    pooled = make_store(namespace="pooled")
    expected = list(alone.add_many(items, batch_size=25))
    got = list(pooled.add_many(items, batch_size=25, workers=2))
    one = list(make_store(namespace="one").add_many(items, batch_size=25, workers=1))
    for decided in (got, one):
        assert [(d.key, d.inserted, d.recorded_as) for d in decided] == [
            (d.key, d.inserted, d.recorded_as) for d in expected
        ]
    assert sum(not d.inserted for d in expected) >= 120  # the near copies were found
    assert pooled.stats().kept == alone.stats().kept


@pytest.mark.parametrize("bad", [("", "a bad key"), ("bad", b"bytes"), ("bad",)], ids=str)
def test_a_bad_item_planned_ahead_fails_its_own_batch_only(
    make_store: StoreFactory, bad: tuple[str, ...]
) -> None:
    # the workers plan batches ahead; what they find wrong must surface in the batch's turn,
    # after every batch before it is written, and nothing after it
    store = make_store()
    items: list[Any] = [(f"k{i}", f"document number {i} " * 5) for i in range(10)]
    items.insert(7, bad)
    with pytest.raises(BatchFailed) as failure:
        list(store.add_many(items, batch_size=3, workers=2))
    assert failure.value.committed == 6
    assert store.stats().decisions == 6
    assert store.get("k5") is not None and store.get("k6") is None


def test_a_failed_batch_with_workers_has_shut_its_workers_down_when_the_caller_sees_it(
    make_store: StoreFactory,
) -> None:
    # the pool is closed by add_many as the failure leaves it, not by the garbage collector:
    # a collection runs its finaliser in whatever thread allocates next, and a pool shut down
    # (joined) from a thread being started deadlocked ingest's retry (a planning pool left to
    # the collector while the next one started its manager thread)
    store = make_store()
    items: list[Any] = [(f"k{i}", f"document number {i} " * 5) for i in range(12)]
    items.insert(7, ("", "a bad key"))
    collecting = gc.isenabled()
    gc.disable()
    try:
        with pytest.raises(BatchFailed) as failure:
            list(store.add_many(items, batch_size=3, workers=2))
        left = multiprocessing.active_children()
    finally:
        if collecting:
            gc.enable()
    assert failure.value.committed == 6
    assert left == []


def _planned(batch: list[int]) -> list[int]:
    return [2 * n for n in batch]


@pytest.mark.skipif(
    not hasattr(threading, "_shutdown_locks_lock"), reason="CPython 3.10-3.12's thread start"
)
def test_a_planning_pool_finished_in_another_thread_is_not_joined_there() -> None:
    # a generator dropped without close() is finished by the collector in whatever thread
    # allocates: seen in a thread being started, which holds threading's _shutdown_locks_lock
    # (Thread._set_tstate_lock); joining the pool's manager thread there takes that lock again
    # (Thread._stop) and never returns. The thread that made the pool joins it; another does not
    batches = planning.planned_ahead(iter([[1], [2], [3]]), _planned, workers=1)
    _batch, plan = next(batches)
    assert plan() == [2]
    finished = threading.Event()

    def finish_as_a_starting_thread() -> None:
        with threading._shutdown_locks_lock:  # type: ignore[attr-defined]
            batches.close()
        finished.set()

    threading.Thread(target=finish_as_a_starting_thread, daemon=True).start()
    if not finished.wait(timeout=HANG):
        threading._shutdown_locks_lock.release()  # type: ignore[attr-defined] # (the next tests)
        pytest.fail("the pool was joined by a thread that cannot join it: a deadlock")
    deadline = time.monotonic() + HANG
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)  # the pool's manager thread ends its workers on its own
    assert multiprocessing.active_children() == []


def test_add_many_stopped_early_with_workers_writes_only_what_it_yielded(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    decisions = store.add_many(_corpus_with_copies(40), batch_size=10, workers=2)
    first = [next(decisions) for _ in range(10)]
    decisions.close()  # the pool is shut down; the batches it planned ahead are not written
    assert store.stats().decisions == 10
    assert all(d.inserted for d in first)


def _signals_left_to_the_caller(_batch: object) -> tuple[bool, bool]:
    """What a planning worker does on Ctrl-C and SIGTERM: ignores them (module level: a worker
    runs it)."""
    ignored = signal.SIG_IGN
    return signal.getsignal(signal.SIGINT) == ignored, signal.getsignal(signal.SIGTERM) == ignored


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers die with their parent")
def test_a_planning_worker_leaves_ctrl_c_and_sigterm_to_the_caller() -> None:
    # a service manager sends SIGTERM to the whole process group: the caller stops reading and
    # shuts the workers down (_planning's docstring, the reference). mutmut's "!= 0" and "== 1"
    # on prctl's result in _die_with_parent left SIGTERM to kill the workers, and survived every
    # test (test_workers_die sends SIGTERM to the parent alone)
    batches: Iterator[list[int] | Exception] = iter([[1]])
    for _batch, plan in planning.planned_ahead(batches, _signals_left_to_the_caller, workers=1):
        assert plan() == (True, True)


def test_add_many_refuses_a_negative_worker_count(make_store: StoreFactory) -> None:
    with pytest.raises(InvalidInput, match="workers"):
        list(make_store().add_many([("a", "text")], workers=-1))


@pytest.mark.parametrize("blank", ["", "   ", "\n\t \u3000"], ids=repr)
def test_a_blank_text_is_refused_everywhere_and_writes_nothing(
    make_store: StoreFactory, blank: str
) -> None:
    store = make_store()
    with pytest.raises(InvalidInput, match="empty"):
        store.add(blank, key="blank")
    with pytest.raises(InvalidInput, match="empty"):
        store.query(blank)
    with pytest.raises(BatchFailed) as failure:
        list(store.add_many([("fine", "a text with words in it"), ("blank", blank)]))
    assert isinstance(failure.value.__cause__, InvalidInput)
    assert store.get("blank") is None and store.get("fine") is None
    assert store.stats().decisions == 0


def test_a_key_kept_in_another_namespace_is_not_this_ones(make_store: StoreFactory) -> None:
    mine = make_store(namespace=f"mine-{uuid.uuid4().hex[:8]}")
    theirs = make_store(namespace=f"theirs-{uuid.uuid4().hex[:8]}")
    assert theirs.add(OTHER, key="a").inserted
    assert theirs.kept_text("a") is not None
    assert mine.kept_text("a") is None
    with pytest.raises(InvalidInput, match="'a' is not a kept key of namespace 'mine-"):
        mine.near_misses("a")


def test_whatif_samples_the_latest_kept_texts_of_its_own_namespace_in_kept_order(
    make_store: StoreFactory,
) -> None:
    # whatif(sample=n) decides the namespace's latest n kept rows that keep a text, oldest first
    # (each is decided against those before it): a row kept without a text, however recent, is
    # no sample, nor is a row of another namespace
    mine = make_store(namespace=f"mine-{uuid.uuid4().hex[:8]}")
    theirs = make_store(namespace=f"theirs-{uuid.uuid4().hex[:8]}")
    topics = [OTHER, "Trains to the coast leave at nine.", "Rain is due on Sunday afternoon."]
    for i, topic in enumerate(topics):
        assert mine.add(topic, key=f"k{i}").inserted
    assert mine.add(fingerprint=0x0123_4567_89AB_CDEF, key="bare").inserted
    assert theirs.add("A recipe for lentil soup with cumin.", key="theirs").inserted
    sampled = mine.whatif(sample=2, options={"threshold": 0.45})
    assert sampled.records == 2
    assert dict(sampled.texts) == {key: mine.kept_text(key) for key in ("k1", "k2")}
    assert list(sampled.texts) == ["k1", "k2"]
