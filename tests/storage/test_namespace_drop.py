"""A namespace dropped under its stores: writers racing a drop in other processes get
``NamespaceDropped`` and leave no row behind, and a store opened before a drop never reaches a
namespace created after it (SQLite reused the dropped id). Real processes, real servers."""

from __future__ import annotations

import contextlib
import multiprocessing
import random
import shutil
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from simstore.errors import NamespaceDropped
from simstore.storage import locking, migrate, namespaces
from simstore.storage.schema import metadata
from simstore.store import SimStore
from tests.conftest import StoreFactory

WRITERS = 4
WARMUP_ADDS = 15  # each writer's adds before the drop starts
ADDS_AFTER_DROP = 5  # each writer's adds after the drop has committed
FROZEN_0010 = Path(__file__).parents[1] / "data" / "frozen" / "0010_minhash_16_bands.sqlite"
WORDS = [f"w{i}" for i in range(3000)]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(30))


def _writer(
    url: str, namespace: str, mode: str, seed: int, ready: Any, dropped: Any, results: Any
) -> None:
    """Add until ``NamespaceDropped``, or until ``ADDS_AFTER_DROP`` adds after ``dropped`` is set;
    report the outcome (an exception's type and message if another one ended it)."""
    rng = random.Random(seed)
    store = SimStore(url, namespace=namespace)
    outcome, after, added = "finished", 0, 0
    try:
        while after < ADDS_AFTER_DROP:
            if dropped.is_set():
                after += 1
            key = f"p{seed}-{added}"
            if mode == "add":
                store.add(_text(rng), key=key)
            else:  # fingerprints, three to a batch
                values = [rng.getrandbits(64) for _ in range(3)]
                list(
                    store.add_many(
                        {"key": f"{key}-{j}", "fingerprint": v} for j, v in enumerate(values)
                    )
                )
            added += 1
            if added == WARMUP_ADDS:
                ready.put(seed)
    except NamespaceDropped:
        outcome = "NamespaceDropped"
    except Exception as error:  # reported to the test, which shows it
        outcome = f"{type(error).__name__}: {error}"
    finally:
        store.close()
    if added < WARMUP_ADDS:
        ready.put(seed)
    results.put((seed, outcome, added))


def _dropper(url: str, namespace: str, results: Any) -> None:
    store = SimStore(url, namespace=namespace)
    try:
        results.put(sum(namespaces.drop(store.scope).values()))
    finally:
        store.close()


def _rows_of(url: str, ns_id: int) -> dict[str, int]:
    """Rows naming namespace id ``ns_id``, per simstore table that has any."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            counts = {
                table.name: int(
                    conn.execute(
                        sa.select(sa.func.count()).select_from(table).where(table.c.ns_id == ns_id)
                    ).scalar_one()
                )
                for table in metadata.sorted_tables
                if "ns_id" in table.c
            }
            counts["simstore_namespaces"] = int(
                conn.execute(
                    sa.text("SELECT count(*) FROM simstore_namespaces WHERE id = :id"),
                    {"id": ns_id},
                ).scalar_one()
            )
    finally:
        engine.dispose()
    return {name: count for name, count in counts.items() if count}


# a memory database cannot be shared between processes: every other dialect races
@pytest.mark.slow
@pytest.mark.parametrize("dialect", ["sqlite-file", "postgresql", "mysql"], indirect=True)
@pytest.mark.parametrize("mode", ["add", "add_many"])
def test_writers_racing_a_drop_get_namespace_dropped_and_leave_no_row(
    database_url: str, mode: str
) -> None:
    namespace = f"drop-{uuid.uuid4().hex[:8]}"
    opened = SimStore(database_url, namespace=namespace, auto_upgrade=True)
    ns_id = opened.ns_id
    opened.close()
    context = multiprocessing.get_context("spawn")
    ready, results, dropped = context.Queue(), context.Queue(), context.Event()
    writers = [
        context.Process(
            target=_writer,
            args=(database_url, namespace, mode, seed, ready, dropped, results),
        )
        for seed in range(WRITERS)
    ]
    for writer in writers:
        writer.start()
    for _ in writers:  # every writer is adding: the drop races them
        ready.get()
    drop_results = context.Queue()
    dropper = context.Process(target=_dropper, args=(database_url, namespace, drop_results))
    dropper.start()
    deleted = drop_results.get()
    dropper.join()
    assert dropper.exitcode == 0 and deleted >= WRITERS * WARMUP_ADDS
    dropped.set()
    outcomes = sorted(results.get() for _ in writers)
    for writer in writers:
        writer.join()

    assert _rows_of(database_url, ns_id) == {}  # nothing written after the drop, no orphans
    assert [outcome for _seed, outcome, _added in outcomes] == ["NamespaceDropped"] * WRITERS, (
        outcomes
    )


def _outcome(call: Callable[[], object], name: str, ns_id: int) -> str:
    try:
        call()
    except NamespaceDropped as error:
        assert f"namespace {name!r} (id {ns_id}) was dropped" in str(error), error
        return "NamespaceDropped"
    except Exception as error:  # the test compares what each call did
        return f"{type(error).__name__}: {error}"
    return "no error"


TEXT = "The harbour ferry timetable changes on Monday: boats leave every twenty minutes."


def test_a_stale_store_never_reaches_a_namespace_created_after_the_drop(
    make_store: StoreFactory,
) -> None:
    name = f"old-{uuid.uuid4().hex[:8]}"
    stale = make_store(namespace=name)
    grouped = make_store(namespace=name, group_commit=True)  # its adds go through a group
    for i in range(3):
        stale.add(f"{TEXT} {i} {'x' * i}", key=f"k{i}")
    namespaces.drop(make_store(namespace=name).scope)
    new = make_store(namespace=f"new-{uuid.uuid4().hex[:8]}")
    assert new.ns_id != stale.ns_id  # SQLite gave it the dropped id

    calls: dict[str, Callable[[], object]] = {
        "add": lambda: stale.add(TEXT, key="late"),
        "add fingerprint": lambda: stale.add(key="late-fp", fingerprint=12345),
        "add in a group": lambda: grouped.add(TEXT, key="late-grouped"),
        "add_many": lambda: list(stale.add_many([("late-1", TEXT), ("late-2", TEXT + " !")])),
        "load": lambda: stale.load([{"key": "late-3", "kept": True, "fingerprint": 255}]),
        "query": lambda: stale.query(TEXT),
        "query fingerprint": lambda: stale.query(fingerprint=12345),
        "query_many": lambda: stale.query_many([TEXT, 12345]),
        "get": lambda: stale.get("k0"),
        "kept_text": lambda: stale.kept_text("k0"),
        "near_misses": lambda: stale.near_misses("k0"),
        "whatif": lambda: stale.whatif(sample=5, options={"threshold": 0.45}),
        "stats": stale.stats,
        "remove": lambda: stale.remove("k0"),
        "purge": lambda: stale.purge(keep="1d"),
        "set_max_kept": lambda: stale.set_max_kept(5),
        "max_kept": lambda: stale.max_kept,
        "drop": lambda: namespaces.drop(stale.scope),
    }
    done = {what: _outcome(call, name, stale.ns_id) for what, call in calls.items()}
    grouped.close()
    assert new.stats().kept == 0 and new.stats().decisions == 0
    assert new.query(TEXT) == [] and new.query(fingerprint=12345, max_distance=8) == []
    # a query is one round trip and does not read the namespace row: it finds nothing
    reads = {"query", "query fingerprint", "query_many"}
    assert {what: done[what] for what in reads} == dict.fromkeys(reads, "no error")
    assert stale.query(TEXT) == [] and stale.query_many([TEXT, 12345]) == [[], []]
    writes = set(calls) - reads
    assert {what: done[what] for what in writes} == dict.fromkeys(writes, "NamespaceDropped")
    assert new.add(TEXT, key="first").inserted


def test_a_store_opened_again_after_the_drop_starts_empty(make_store: StoreFactory) -> None:
    name = f"again-{uuid.uuid4().hex[:8]}"
    first = make_store(namespace=name)
    first.add(TEXT, key="a")
    namespaces.drop(first.scope)
    again = make_store(namespace=name)
    assert again.ns_id != first.ns_id
    assert again.stats().kept == 0 and again.add(TEXT, key="a").inserted
    with pytest.raises(NamespaceDropped, match=repr(name)):
        first.add(TEXT, key="b")
    assert again.stats().kept == 1


def test_0011_gives_new_namespaces_ids_above_every_id_rows_still_name(tmp_path: Path) -> None:
    """A database where an older simstore dropped its newest namespace mid-write (the namespace
    row gone, its late rows left): after the upgrade a new namespace inherits none of them."""
    path = tmp_path / "frozen.sqlite"
    shutil.copyfile(FROZEN_0010, path)
    url = f"sqlite:///{path}"
    with sqlite3.connect(path) as conn:
        newest = conn.execute("SELECT max(id) FROM simstore_namespaces").fetchone()[0]
        left = conn.execute(
            "SELECT count(*) FROM simstore_fingerprints WHERE ns_id = ?", (newest,)
        ).fetchone()[0]
        conn.execute("DELETE FROM simstore_namespaces WHERE id = ?", (newest,))
        names = conn.execute("SELECT id, name FROM simstore_namespaces ORDER BY id").fetchall()
    conn.close()
    assert left > 0

    store = SimStore(url, namespace=f"new-{uuid.uuid4().hex[:8]}")  # upgrades on open
    try:
        assert migrate.current(url) == migrate.head()
        assert store.ns_id > newest
        assert store.stats().kept == 0
        namespaces.drop(store.scope)
        with sqlite3.connect(path) as conn:
            assert conn.execute("SELECT id, name FROM simstore_namespaces").fetchall() == names
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.close()
        again = SimStore(url, namespace="another")
        assert again.ns_id == store.ns_id + 1  # the dropped id is not given out again
        again.close()
    finally:
        store.close()


def test_a_drop_returns_the_rows_it_deleted_per_table_and_leaves_other_namespaces(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with SimStore(url, namespace="gone") as gone, SimStore(url, namespace="kept") as kept:
        assert gone.add(TEXT, key="a").inserted
        assert not gone.add(TEXT + " again", key="copy").inserted
        assert gone.add(fingerprint=0x0123_4567_89AB_CDEF, key="bare").inserted
        assert kept.add(TEXT, key="a").inserted
        gone.set_max_kept(5)
        kept.set_max_kept(7)
        before, others = _rows_of(url, gone.ns_id), _rows_of(url, kept.ns_id)
        assert before["simstore_fingerprints"] == 2 and before["simstore_decisions"] == 1

        deleted = namespaces.drop(gone.scope)
        with pytest.raises(NamespaceDropped, match="'gone'"):  # dropped already
            namespaces.drop(gone.scope)
        assert kept.max_kept == 7
    every_table = {table.name for table in metadata.sorted_tables if "ns_id" in table.c}
    assert set(deleted) == every_table - {"simstore_namespaces"}
    # each table's count as plain SQL counted the namespace's rows before the drop
    assert {name: count for name, count in deleted.items() if count} == {
        name: count for name, count in before.items() if name != "simstore_namespaces"
    }
    assert _rows_of(url, gone.ns_id) == {} and _rows_of(url, kept.ns_id) == others
    with contextlib.closing(sqlite3.connect(tmp_path / "store.db")) as raw:
        caps = raw.execute("SELECT name, value FROM simstore_settings WHERE name LIKE 'max_kept:%'")
        assert caps.fetchall() == [(f"max_kept:{kept.ns_id}", "7")]  # the dropped one's is gone


def test_the_dropped_error_names_the_namespace_and_its_id_or_the_id_alone() -> None:
    after = (
        " was dropped after this store opened it; nothing was read or written (open a new store "
        "to create it again)"
    )
    assert str(locking.dropped(5, "news")) == "namespace 'news' (id 5)" + after
    assert str(locking.dropped(5)) == "namespace id 5" + after
