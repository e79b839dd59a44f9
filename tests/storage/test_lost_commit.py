"""A writer's connection killed during COMMIT, on the real servers: the store finds out what the
server did, by the keys on a new connection, and says it. A commit that landed returns its
decisions; one that did not says it was not written, as checked. Never "not written" unless known.

The kill comes from another connection (``KILL CONNECTION`` on MariaDB, ``pg_terminate_backend``
on PostgreSQL) inside a hook on SQLAlchemy's commit event, which runs before the COMMIT is sent.
For "landed", the hook first commits on the driver's connection and opens the next transaction
(the server has the rows; the client's own COMMIT then meets a dead connection), as when a
connection dies after the server committed and before its answer arrived.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine, make_url

from simstore.errors import BatchFailed, DatabaseUnavailable
from simstore.storage._connections import CommitOutcomeUnknown
from simstore.storage.schema import fingerprints
from simstore.store import SimStore
from tests.conftest import new_server_database
from tests.storage.test_faults import _admin, _backends, _kill_backend, _kind

TEXTS = [
    "the harbour ferry leaves every twenty minutes from the north pier on weekdays",
    "season tickets bought before the change stay valid until the end of the month",
    "bicycles travel free outside the morning rush and dogs on a lead are welcome",
]

NEAR = 0x0123_4567_89AB_CDEF  # a fingerprint one bit from NEAR ^ 1


class Killer:
    """Kills the next COMMIT's connection on ``url``'s database, once armed."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.database = make_url(url).database
        self.admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
        self.mode: str | None = None  # "landed", "lost" or "changed"
        self.fired = 0
        self.change: sa.Executable | None = None  # "changed": what another writer commits then

        self.kill_the_check = False  # also kill the connection of the check that follows

    def arm(self, mode: str, *, kill_the_check: bool = False) -> None:
        self.mode = mode
        self.kill_the_check = kill_the_check

    def __call__(self, conn: Connection) -> None:
        if self.mode is None or conn.engine.url.database != self.database:
            return
        mode, self.mode = self.mode, None
        dbapi: Any = conn.connection.dbapi_connection
        if mode in ("landed", "changed"):
            dbapi.commit()  # the server has the rows
            if mode == "changed" and self.change is not None:
                with self.admin.connect() as admin:  # another writer, before the check
                    admin.execute(self.change)
            cursor = dbapi.cursor()
            cursor.execute("SELECT 1")  # a transaction for the client's COMMIT to be lost in
            cursor.fetchall()
            cursor.close()
        self.kill(dbapi)
        self.fired += 1
        if self.kill_the_check:
            event.listen(Engine, "before_cursor_execute", self._kill_the_check)

    def _kill_the_check(self, conn: Connection, *_statement: Any) -> None:
        """Kill the connection of the next statement on the database (the check's first)."""
        if conn.engine.url.database != self.database:
            return
        event.remove(Engine, "before_cursor_execute", self._kill_the_check)
        self.kill_the_check = False
        self.kill(conn.connection.dbapi_connection)
        self.fired += 1

    def kill(self, dbapi: Any) -> None:
        with self.admin.connect() as admin:
            if conn_is_mysql(self.url):
                admin.exec_driver_sql(f"KILL CONNECTION {int(dbapi.thread_id())}")
                return
            pid = int(dbapi.info.backend_pid)
            admin.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            deadline = time.monotonic() + 30
            gone = sa.text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid")
            while admin.execute(gone, {"pid": pid}).scalar_one():
                assert time.monotonic() < deadline, "the killed backend is still there"
                time.sleep(0.01)


def conn_is_mysql(url: str) -> bool:
    return make_url(url).get_backend_name() in ("mysql", "mariadb")


@pytest.fixture
def killer(server_url: str) -> Iterator[Killer]:
    made = Killer(server_url)
    event.listen(Engine, "commit", made)
    try:
        yield made
    finally:
        event.remove(Engine, "commit", made)
        if event.contains(Engine, "before_cursor_execute", made._kill_the_check):
            event.remove(Engine, "before_cursor_execute", made._kill_the_check)
        made.admin.dispose()


@pytest.fixture
def store(server_url: str, killer: Killer) -> Iterator[SimStore]:
    opened = SimStore(server_url, namespace=f"lost-{uuid.uuid4().hex[:12]}")
    try:
        yield opened
    finally:
        opened.close()


def test_an_add_whose_commit_landed_returns_its_decision(
    store: SimStore, killer: Killer, caplog: pytest.LogCaptureFixture
) -> None:
    killer.arm("landed")
    with caplog.at_level(logging.WARNING, logger="simstore"):
        decision = store.add(TEXTS[0], key="a")
    assert killer.fired == 1
    assert decision.inserted
    [said] = [r.getMessage() for r in caplog.records if "lost during COMMIT" in r.getMessage()]
    assert said.startswith(f"database {store.url}: the connection was lost during COMMIT (")
    assert said.endswith("), but it had committed (its keys are in the database)")
    found = store.get("a")
    assert found is not None and found.fingerprint == decision.fingerprint
    assert store.add(TEXTS[0], key="a").replayed  # the store goes on


def test_an_add_whose_commit_was_lost_says_so_as_checked(store: SimStore, killer: Killer) -> None:
    killer.arm("lost")
    with pytest.raises(DatabaseUnavailable) as failed:
        store.add(TEXTS[1], key="b")
    assert killer.fired == 1
    assert "was not written" in str(failed.value) and "checked" in str(failed.value)
    # the driver's reason, its first line alone (no SQL, no link to SQLAlchemy's pages)
    lost = failed.value.__cause__
    assert isinstance(lost, sa.exc.DBAPIError) and lost.orig is not None
    reason = str(lost.orig).strip().splitlines()[0]
    assert f"lost during COMMIT ({reason})" in str(failed.value)
    assert "\n" not in str(failed.value)
    assert str(failed.value).endswith(
        "; it was not written (none of its keys is in the database, checked on a new connection)"
    )
    assert store.get("b") is None
    assert store.add(TEXTS[1], key="b").inserted  # adding it again works


def test_an_add_retried_on_a_new_connection_whose_commit_landed_returns_its_decision(
    server_url: str, store: SimStore, killer: Killer
) -> None:
    # the server dropped the writer's pooled connection while it waited: the add's first
    # statement finds it gone and the add runs again on a new connection, whose COMMIT is then
    # lost after the server committed; the retry checks its keys too, as the first try would
    assert store.add(TEXTS[0], key="a").inserted
    with _admin(server_url) as admin:
        for backend in _backends(admin, _kind(server_url), waiting=False):
            _kill_backend(admin, _kind(server_url), backend)  # the store's pooled connections
    killer.arm("landed")
    decision = store.add(TEXTS[1], key="b")
    assert killer.fired == 1
    assert decision.inserted
    found = store.get("b")
    assert found is not None and found.fingerprint == decision.fingerprint
    assert store.add(TEXTS[1], key="b").replayed  # written once


def test_an_add_whose_check_after_a_lost_commit_failed_says_it_is_unknown(
    store: SimStore, killer: Killer
) -> None:
    # the COMMIT's connection is lost, then the check's own connection too: nothing is known,
    # and the error says so (never "not written") and how to find out
    killer.arm("lost", kill_the_check=True)
    with pytest.raises(CommitOutcomeUnknown) as failed:
        store.add(TEXTS[1], key="b")
    assert killer.fired == 2
    said = str(failed.value)
    assert said.startswith(f"database {store.url}: the connection was lost during COMMIT (")
    assert f"; whether it was written is unknown (the check failed: database {store.url}: " in said
    assert said.endswith(
        "): look its keys up (SimStore.get(key), simstore show KEY) before adding them again"
    )
    assert "was not written" not in said
    assert isinstance(failed.value.__cause__, sa.exc.DBAPIError)  # the lost COMMIT
    assert store.get("b") is None  # it was not, in fact
    assert store.add(TEXTS[1], key="b").inserted


def test_a_commit_the_server_refuses_is_not_taken_for_a_lost_connection() -> None:
    # PostgreSQL checks a deferred constraint trigger at COMMIT: the COMMIT fails on a live
    # connection, so the add says the server's reason, and nothing about a lost connection
    url = new_server_database("postgresql")
    with SimStore(url, namespace="refused", auto_upgrade=True) as store:
        with _admin(url) as admin:
            admin.exec_driver_sql(
                "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$"
            )
            admin.exec_driver_sql(
                "CREATE CONSTRAINT TRIGGER refuse AFTER INSERT ON simstore_fingerprints "
                "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
                "WHEN (NEW.key = 'refused') EXECUTE FUNCTION refuse()"
            )
        with pytest.raises(DatabaseUnavailable) as failed:
            store.add(TEXTS[0], key="refused")
        said = str(failed.value)
        assert said == f"database {store.url}: refused at commit", said
        assert not isinstance(failed.value, CommitOutcomeUnknown)
        assert store.get("refused") is None
        assert store.add(TEXTS[0], key="accepted").inserted  # the store goes on


def test_a_batch_whose_commit_landed_returns_its_decisions(store: SimStore, killer: Killer) -> None:
    killer.arm("landed")
    decided = list(store.add_many([(f"k{i}", text) for i, text in enumerate(TEXTS)]))
    assert killer.fired == 1
    assert [decision.key for decision in decided] == ["k0", "k1", "k2"]
    assert all(store.get(decision.key) is not None for decision in decided)


def test_a_batch_whose_commit_was_lost_is_not_written_as_checked(
    store: SimStore, killer: Killer
) -> None:
    killer.arm("lost")
    with pytest.raises(BatchFailed) as failed:
        list(store.add_many([(f"k{i}", text) for i, text in enumerate(TEXTS)]))
    assert killer.fired == 1
    assert "was not written" in str(failed.value) and "checked" in str(failed.value)
    assert str(failed.value).startswith("batch starting at item 0 was not written: ")
    assert failed.value.committed == 0
    assert all(store.get(f"k{i}") is None for i in range(len(TEXTS)))


def test_a_full_batch_whose_commit_landed_returns_every_decision(
    store: SimStore, killer: Killer
) -> None:
    # a thousand new keys (add_many's default batch): the check reads them back in chunks, the
    # last key included
    rng = random.Random(8)
    items = [{"key": f"k{i:04d}", "fingerprint": rng.getrandbits(64)} for i in range(1_000)]
    killer.arm("landed")
    decided = list(store.add_many(items))
    assert killer.fired == 1
    assert [decision.key for decision in decided] == [item["key"] for item in items]
    assert store.get("k0999") is not None


def test_a_near_duplicate_whose_commit_landed_returns_its_decision(
    store: SimStore, killer: Killer
) -> None:
    # a duplicate writes its decision's record and no kept row: the check finds that record,
    # naming the kept key it was decided against (one bit apart: a duplicate by SimHash)
    assert store.add(key="kept", fingerprint=NEAR).inserted
    killer.arm("landed")
    decision = store.add(key="copy", fingerprint=NEAR ^ 1)
    assert killer.fired == 1
    assert decision.duplicate_of is not None and decision.duplicate_of.key == "kept"
    found = store.get("copy")
    assert found is not None and not found.inserted
    assert found.duplicate_of is not None and found.duplicate_of.key == "kept"


def test_a_batch_of_replays_whose_commit_was_lost_returns_them(
    store: SimStore, killer: Killer
) -> None:
    # every key was added before: the batch writes nothing, so whatever happened to its COMMIT,
    # its decisions stand (they are the recorded ones)
    items = [(f"k{i}", text) for i, text in enumerate(TEXTS)]
    first = list(store.add_many(items))
    killer.arm("lost")
    again = list(store.add_many(items))
    assert killer.fired == 1
    assert all(decision.replayed for decision in again)
    assert [(d.key, d.fingerprint) for d in again] == [(d.key, d.fingerprint) for d in first]


def test_an_add_through_a_callers_engine_whose_commit_was_lost_is_checked(
    server_url: str, killer: Killer
) -> None:
    # the caller's own Engine (no writer engine of simstore's): the same check, on a connection
    # of the caller's pool (the lost one's disconnect emptied it)
    engine = sa.create_engine(server_url)
    store = SimStore(engine, namespace=f"lost-{uuid.uuid4().hex[:12]}")
    try:
        killer.arm("landed")
        assert store.add(TEXTS[0], key="a").inserted
        killer.arm("lost")
        with pytest.raises(DatabaseUnavailable) as failed:
            store.add(TEXTS[1], key="b")
        assert killer.fired == 2
        assert "was not written" in str(failed.value) and "checked" in str(failed.value)
        assert store.get("a") is not None and store.get("b") is None
    finally:
        store.close()
        engine.dispose()


@pytest.mark.slow  # seconds of adds under random kills, per server
def test_random_kills_never_make_a_false_claim(server_url: str) -> None:
    """Adds and batches while another thread kills the store's connections at random moments
    (any statement, the COMMIT among them): afterwards every add that returned is in the
    database, and none that raised an error is there unless the error said "unknown"."""
    url = make_url(server_url)
    mysql = conn_is_mysql(server_url)
    admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    others = (
        "SELECT id FROM information_schema.processlist WHERE db = :d AND id <> CONNECTION_ID()"
        if mysql
        else "SELECT pid FROM pg_stat_activity WHERE datname = :d AND pid <> pg_backend_pid()"
    )
    kill = "KILL CONNECTION {}" if mysql else "SELECT pg_terminate_backend({})"
    stop = threading.Event()
    kills = 0

    def killer() -> None:
        nonlocal kills
        chance = random.Random(55)
        with admin.connect() as conn:
            while not stop.is_set():
                time.sleep(chance.uniform(0.005, 0.05))
                found = conn.execute(sa.text(others), {"d": url.database}).scalars().all()
                if found:
                    with contextlib.suppress(sa.exc.DBAPIError):  # it had gone already
                        conn.exec_driver_sql(kill.format(int(chance.choice(found))))
                        kills += 1

    namespace = f"kills-{uuid.uuid4().hex[:8]}"
    store = SimStore(server_url, namespace=namespace)
    claims: list[tuple[list[str], str]] = []
    thread = threading.Thread(target=killer)
    thread.start()
    try:
        end, n = time.monotonic() + 10, 0
        while time.monotonic() < end:
            n += 1
            keys = [f"a{n}"] if n % 2 else [f"b{n}-{i}" for i in range(20)]
            texts = [(key, f"text {key} {uuid.uuid4().hex} about the ferry") for key in keys]
            try:
                if len(keys) == 1:
                    store.add(texts[0][1], key=keys[0])
                else:
                    list(store.add_many(texts))
                claims.append((keys, "written"))
            except (DatabaseUnavailable, BatchFailed) as error:
                said = str(error)
                unknown = "unknown" in said or "may or may not" in said
                # an error that does not say "unknown" says the write failed
                claims.append((keys, "unknown" if unknown else "not written"))
    finally:
        stop.set()
        thread.join()
        store.close()
        admin.dispose()
    assert kills > 10  # the run met kills
    checked = SimStore(server_url, namespace=namespace)
    try:
        for keys, said in claims:
            there = [checked.get(key) is not None for key in keys]
            if said == "written":
                assert all(there), keys
            if said == "not written":
                assert not any(there), keys  # never "not written" unless known
    finally:
        checked.close()


def test_a_batch_whose_commit_outcome_is_unknown_says_it_may_or_may_not_be_written(
    store: SimStore, killer: Killer
) -> None:
    # the batch committed, then another writer changed one of its kept rows before the check
    # read them: the store cannot tell what it wrote, and never says "not written"
    killer.change = (
        sa.update(fingerprints)
        .where(fingerprints.c.ns_id == store.ns_id, fingerprints.c.key == "k0")
        .values(fp=-fingerprints.c.fp - 1)  # another value, never out of range
    )
    killer.arm("changed")
    with pytest.raises(BatchFailed) as failed:
        list(store.add_many([(f"k{i}", text) for i, text in enumerate(TEXTS)]))
    assert killer.fired == 1
    assert isinstance(failed.value.__cause__, CommitOutcomeUnknown)
    assert str(failed.value.__cause__).endswith(
        "; whether it was written is unknown (some of its keys are in the database, or hold other "
        "decisions): look its keys up (SimStore.get(key), simstore show KEY) before adding them "
        "again"
    )
    assert str(failed.value).startswith("batch starting at item 0 may or may not have been written")
    assert "was not written" not in str(failed.value)
    assert failed.value.committed == 0
    assert all(store.get(f"k{i}") is not None for i in (1, 2))  # it had committed
