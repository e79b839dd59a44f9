"""Faults: a server connection killed in the middle of an add or between calls, an unreachable
server, and on SQLite a locked database, a read-only file and a full disk. Each gives a clear
simstore error (DatabaseUnavailable, or BatchFailed caused by it), leaves nothing half-written, and
the next call on the same store works."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import make_url

from simstore.errors import DatabaseUnavailable
from simstore.storage.db import create_engine_for
from simstore.storage.schema import fingerprints
from simstore.store import BatchFailed, SimStore
from tests._workers import (
    PASSWORD,
    ROOT,
    START,
    audit,
    command,
    fingerprint_items,
    sqlite_integrity,
)
from tests.conftest import new_server_database, unavailable

FAR_A, FAR_B = 0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210  # 64 bits apart
FERRY = (
    "The harbour ferry timetable changes on Monday: boats leave every twenty minutes from the "
    "north pier between six and nine in the morning, and every half hour for the rest of the day."
)


def _items(count: int, seed: int = 5, prefix: str = "k") -> list[dict[str, Any]]:
    pairs = fingerprint_items(count, seed, prefix)
    return [{"key": key, "fingerprint": value} for key, value in pairs]


# --- server connections killed --------------------------------------------------------------------


def _kind(url: str) -> str:
    return "postgresql" if url.startswith("postgresql") else "mysql"


def _kill_backend(admin: sa.Connection, kind: str, backend: int) -> None:
    if kind == "postgresql":
        admin.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": backend})
    else:
        admin.exec_driver_sql(f"KILL {int(backend)}")


def _backends(admin: sa.Connection, kind: str, *, waiting: bool) -> list[int]:
    """The connections to this test database other than the admin's (``waiting``: for a lock)."""
    if kind == "postgresql":
        sql = (
            "SELECT pid FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        sql += " AND wait_event_type = 'Lock'" if waiting else ""
    elif waiting:
        sql = "SELECT t.trx_mysql_thread_id FROM information_schema.innodb_trx t "
        sql += "JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id "
        sql += "WHERE t.trx_state = 'LOCK WAIT' AND p.db = DATABASE()"  # not another test run's
    else:
        sql = "SELECT id FROM information_schema.processlist "
        sql += "WHERE db = DATABASE() AND id <> CONNECTION_ID()"
    return [int(value) for value in admin.exec_driver_sql(sql).scalars()]


@contextlib.contextmanager
def _admin(url: str) -> Iterator[sa.Connection]:
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            yield conn
    finally:
        engine.dispose()


@contextlib.contextmanager
def _uncommitted_kept_row(url: str, namespace: str, key: str) -> Iterator[None]:
    """Another transaction holds an uncommitted kept row for ``key``.

    An add of ``key`` does not see it (READ COMMITTED), writes what comes before its kept row (the
    namespace's flag for unsigned rows; with add_many, the batch's other rows in the same
    statement), then waits for this transaction at its own kept row: killed there, it has half of
    its rows written.
    """
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            ns_id = conn.execute(
                sa.text("SELECT id FROM simstore_namespaces WHERE name = :ns"), {"ns": namespace}
            ).scalar_one()
            conn.execute(
                sa.insert(fingerprints).values(
                    ns_id=ns_id, key=key, fp=0, b0=0, b1=0, b2=0, b3=0, added_at=START, part=0
                )
            )
            try:
                yield
            finally:
                conn.rollback()
    finally:
        engine.dispose()


def _killed_while_waiting(url: str, call: Callable[[], object]) -> BaseException | None:
    """Run ``call`` in a thread, kill its connection once it waits for a lock; its exception."""
    kind = _kind(url)
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    with _admin(url) as admin:
        while not (waiting := _backends(admin, kind, waiting=True)):
            assert thread.is_alive(), outcome  # it can only end by waiting for our lock first
            # InnoDB refreshes innodb_trx only after 0.1 s without readers: do not poll faster
            time.sleep(0.2)
        for backend in waiting:
            _kill_backend(admin, kind, backend)
    thread.join()  # its connection was killed: the call ends with an error, or retries and ends
    return outcome[0]


def test_a_connection_killed_between_calls_is_replaced_on_the_next_call(server_url: str) -> None:
    kind = _kind(server_url)
    with _admin(server_url) as admin:
        others = set(_backends(admin, kind, waiting=False))
        store = SimStore(server_url, namespace=f"kill-{uuid.uuid4().hex[:8]}")
        assert store.add(key="before", fingerprint=FAR_A).inserted
        stores = set(_backends(admin, kind, waiting=False)) - others
        assert stores  # the store's pooled connection
        for backend in stores:
            _kill_backend(admin, kind, backend)
    assert store.add(key="after", fingerprint=FAR_B).inserted  # pre-ping
    assert [m.key for m in store.query(fingerprint=FAR_A)] == ["before"]
    assert store.stats().kept == 2
    store.close()


def test_a_query_whose_connection_the_server_dropped_is_answered_on_a_new_one(
    server_url: str,
) -> None:
    # queries run on a connection that is neither pinged nor reset: a dropped one fails its
    # first statement, and the query is run once more on a fresh connection
    kind = _kind(server_url)
    store = SimStore(server_url, namespace=f"kill-{uuid.uuid4().hex[:8]}")
    store.add(FERRY, key="ferry")
    assert [m.key for m in store.query(FERRY + "!")] == ["ferry"]
    with _admin(server_url) as admin:
        for backend in _backends(admin, kind, waiting=False):
            _kill_backend(admin, kind, backend)
    assert [m.key for m in store.query(FERRY + "!")] == ["ferry"]
    assert [m.key for m in store.query_many([FERRY + "?"])[0]] == ["ferry"]
    store.close()


@pytest.mark.parametrize("operation", ["add", "add_many"])
def test_a_connection_killed_in_the_middle_of_an_add_writes_nothing(
    server_url: str, operation: str
) -> None:
    namespace = f"kill-{uuid.uuid4().hex[:8]}"
    store = SimStore(server_url, namespace=namespace)
    items = _items(3_000)
    last = items[-1]
    if operation == "add":
        committed = 0

        def call() -> object:
            return store.add(key=last["key"], fingerprint=last["fingerprint"])
    else:
        committed = 2_000  # two batches of 1,000 before the one that waits

        def call() -> object:
            return list(store.add_many(items, batch_size=1_000))

    with _uncommitted_kept_row(server_url, namespace, last["key"]):
        error = _killed_while_waiting(server_url, call)
    if operation == "add":
        assert isinstance(error, DatabaseUnavailable), error
    else:
        assert isinstance(error, BatchFailed), error
        assert isinstance(error.__cause__, DatabaseUnavailable)
        assert error.committed == committed
    assert "127.0.0.1" in str(error)  # which database, said plainly

    table = audit(server_url, namespace)
    assert table.problems == []
    assert sorted(table.decisions) == sorted(item["key"] for item in items[:committed])

    # the next call on the same store reconnects and does the whole job
    assert len(list(store.add_many(items, batch_size=1_000))) == len(items)
    table = audit(server_url, namespace)
    assert table.problems == [] and len(table.decisions) == len(items)
    store.close()


def _with_password(url: str) -> str:
    return make_url(url).set(password=PASSWORD).render_as_string(hide_password=False)


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql+psycopg://app:{PASSWORD}@127.0.0.1:1/nowhere",
        f"mysql+pymysql://app:{PASSWORD}@127.0.0.1:1/nowhere",
    ],
    ids=["postgresql", "mysql"],
)
def test_an_unreachable_server_is_database_unavailable_without_the_password(url: str) -> None:
    with pytest.raises(DatabaseUnavailable) as failure:
        SimStore(url)
    assert "127.0.0.1:1" in str(failure.value)
    # not in the message, nor anywhere in the chain of causes a traceback would show
    assert PASSWORD not in "".join(traceback.format_exception(failure.value))


def test_a_wrong_password_is_database_unavailable_without_the_password() -> None:
    # new_server_database skips without a server, and fails under SIMSTORE_REQUIRE_SERVERS=1
    with pytest.raises(DatabaseUnavailable, match="Access denied") as failure:
        SimStore(_with_password(new_server_database("mysql")))
    assert PASSWORD not in "".join(traceback.format_exception(failure.value))


# --- SQLite ---------------------------------------------------------------------------------------


def _exclusive(path: Path) -> sqlite3.Connection:
    """Another connection holding SQLite's write lock (BEGIN EXCLUSIVE) until it ends."""
    locker = sqlite3.connect(path, isolation_level=None, timeout=0, check_same_thread=False)
    locker.execute("BEGIN EXCLUSIVE")
    return locker


def test_a_locked_sqlite_database_is_waited_for_while_reads_go_on(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    engine = create_engine_for(f"sqlite:///{path}")
    writing = threading.Event()  # set when an add's first write starts (and meets the lock)
    watching = threading.Event()

    def trace(statement: str) -> None:
        if watching.is_set() and statement.lstrip().upper().startswith(("UPDATE", "INSERT")):
            writing.set()

    event.listen(engine, "connect", lambda conn, _record: conn.set_trace_callback(trace))
    store = SimStore(engine)
    assert store.add(key="a", fingerprint=FAR_A).inserted
    locker = _exclusive(path)
    try:
        # readers go on: a reader that waited would wait out the 30 s busy timeout and fail
        assert [m.key for m in store.query(fingerprint=FAR_A)] == ["a"]
        released = threading.Event()

        def release() -> None:
            # ordered by a condition, not a sleep: the add's write has begun against the lock
            if writing.wait(timeout=25):  # under the 30 s busy timeout the add waits out
                released.set()
            locker.rollback()

        watching.set()
        threading.Thread(target=release).start()
        assert store.add(key="b", fingerprint=FAR_B).inserted
        assert released.is_set()  # it waited for the lock instead of failing or writing past it
    finally:
        locker.close()
    store.close()
    engine.dispose()


def test_a_sqlite_database_locked_past_the_busy_timeout_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    SimStore(f"sqlite:///{path}").close()
    engine = sa.create_engine(f"sqlite:///{path}", connect_args={"timeout": 0.3})
    store = SimStore(engine)
    locker = _exclusive(path)
    try:
        began = time.monotonic()
        with pytest.raises(DatabaseUnavailable, match="locked"):
            store.add(key="b", fingerprint=FAR_B)
        assert time.monotonic() - began >= 0.25  # it waited out the busy timeout (a floor only)
        with pytest.raises(BatchFailed) as failure:
            list(store.add_many(_items(50)))
        assert isinstance(failure.value.__cause__, DatabaseUnavailable)
        assert failure.value.committed == 0
    finally:
        locker.rollback()
        locker.close()
    assert store.get("b") is None and store.stats().decisions == 0  # nothing half-written
    assert store.add(key="b", fingerprint=FAR_B).inserted  # the next call works
    engine.dispose()


def test_the_busy_timeout_of_a_sqlite_url_can_be_chosen(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    store = SimStore(f"sqlite:///{path}?timeout=0.3")
    outcome: list[BaseException | None] = []

    def add() -> None:
        try:
            store.add(key="b", fingerprint=FAR_B)
            outcome.append(None)
        except BaseException as error:
            outcome.append(error)

    with store.engine.connect() as connection:  # the URL's 0.3 s, not the default 30 s
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 300
    locker = _exclusive(path)
    thread = threading.Thread(target=add)
    try:
        thread.start()
        thread.join()  # the lock is held throughout: only the busy timeout can end the add
    finally:
        locker.rollback()
        locker.close()
        store.close()
    assert isinstance(outcome[0], DatabaseUnavailable)


def _as_another_user(code: Path) -> list[str]:
    """A command prefix that drops root (whom file permissions do not stop) to the user nobody,
    running the copy of simstore and its test workers in ``code`` (a folder nobody can read,
    whatever the permissions of the checkout's parents)."""
    if os.geteuid() != 0:
        return []
    for package in ("simstore", "tests", "migrations"):
        shutil.copytree(
            ROOT / package, code / package, ignore=shutil.ignore_patterns("__pycache__", "test_*")
        )
    for folder in [code, *code.rglob("*")]:
        folder.chmod(0o755 if folder.is_dir() else 0o644)
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        unavailable("running as root, and no setpriv to run the check as another user")
    prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run(
        [*prefix, sys.executable, "-c", "import sqlalchemy, simstore, tests._workers"],
        cwd=code,
        env={**os.environ, "PYTHONPATH": str(code)},
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:  # the interpreter or its site-packages: not ours to copy
        unavailable(f"the user nobody cannot run {sys.executable}: {probe.stderr.strip()}")
    return prefix


def test_a_read_only_sqlite_file_is_a_clear_error() -> None:
    # outside pytest's tmp_path: the user nobody must be able to reach it
    folder = Path(tempfile.mkdtemp(prefix="simstore-readonly-"))
    code = Path(tempfile.mkdtemp(prefix="simstore-code-"))
    code.chmod(0o755)
    path = folder / "ro.db"
    url = f"sqlite:///{path}"
    try:
        with SimStore(url) as store:
            store.add(key="a", fingerprint=FAR_A)
        folder.chmod(0o755)  # mkdtemp made it private
        before = path.read_bytes()
        path.chmod(0o444)
        folder.chmod(0o555)
        run = subprocess.run(
            [*_as_another_user(code), *command("readonly", url)],
            cwd=code,
            env={**os.environ, "PYTHONPATH": str(code)},
            capture_output=True,
            text=True,
            check=False,
        )
        assert run.returncode == 0, run.stderr
        outcome = json.loads(run.stdout)
        assert outcome.pop("uid") != 0  # permissions apply to the child
        assert path.read_bytes() == before
    finally:
        folder.chmod(0o755)
        path.chmod(0o644)
        shutil.rmtree(folder)
        shutil.rmtree(code)
    assert outcome["open"]["ok"] and outcome["query"]["ok"], outcome  # reading works
    assert not outcome["add"]["ok"]
    assert "DatabaseUnavailable" in outcome["add"]["types"]
    assert "the database is read-only" in outcome["add"]["message"]


def test_a_full_sqlite_disk_is_a_clear_error_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "full.db"
    url = f"sqlite:///{path}"
    with SimStore(url) as store:
        list(store.add_many(_items(100, seed=1)))
    with contextlib.closing(sqlite3.connect(path)) as conn:
        pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    engine = create_engine_for(url)  # simstore's own engine, with a database that cannot grow

    @event.listens_for(engine, "connect")
    def no_room(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages + 2}")

    store = SimStore(engine)
    with pytest.raises(BatchFailed) as failure:
        list(store.add_many(_items(5_000, seed=2, prefix="new"), batch_size=5_000))
    assert isinstance(failure.value.__cause__, DatabaseUnavailable)
    assert "full" in str(failure.value) and failure.value.committed == 0
    assert store.stats().decisions == 100  # nothing of the failed batch
    engine.dispose()
    assert sqlite_integrity(url) == ["ok"]
    with SimStore(url) as store:  # room again: the same batch goes in
        added = store.add_many(_items(5_000, seed=2, prefix="new"), batch_size=5_000)
        assert len(list(added)) == 5_000
    table = audit(url, "default")
    assert table.problems == [] and len(table.decisions) == 5_100


def test_a_callers_engine_whose_pooled_connection_was_killed_fails_as_unavailable(
    server_url: str,
) -> None:
    # a caller's Engine without pre-ping: the next write sets the isolation level on the dead
    # connection first, which MariaDB's driver raised past SQLAlchemy as its own OperationalError
    kind = _kind(server_url)
    engine = sa.create_engine(server_url)
    store = SimStore(engine, namespace=f"kill-{uuid.uuid4().hex[:8]}")
    try:
        assert store.add(key="before", fingerprint=FAR_A).inserted
        with _admin(server_url) as admin:
            before = set(_backends(admin, kind, waiting=False))
            with engine.connect() as pooled:  # the pool's one connection, now checked out
                pooled.exec_driver_sql("SELECT 1")
                mine = set(_backends(admin, kind, waiting=False))
            for backend in mine & before:
                _kill_backend(admin, kind, backend)
        with pytest.raises(DatabaseUnavailable, match=r"127\.0\.0\.1"):
            store.add(key="after", fingerprint=FAR_B)
        assert store.add(key="after", fingerprint=FAR_B).inserted  # the pool replaced it
    finally:
        store.close()
        engine.dispose()


def test_a_callers_engine_with_no_free_connection_fails_as_unavailable(server_url: str) -> None:
    engine = sa.create_engine(server_url, pool_size=1, max_overflow=0, pool_timeout=0.2)
    store = SimStore(engine, namespace=f"pool-{uuid.uuid4().hex[:8]}")
    try:
        with (
            engine.connect(),  # the pool's only connection, held
            pytest.raises(DatabaseUnavailable, match="no free connection"),
        ):
            store.add(key="waits", fingerprint=FAR_A)
        assert store.add(key="waits", fingerprint=FAR_A).inserted
    finally:
        store.close()
        engine.dispose()


class Error(Exception):
    """Named as the drivers' base errors are, in a module that is no driver's."""


def test_a_drivers_own_error_is_database_unavailable_and_any_other_passes_through() -> None:
    # a driver's error that SQLAlchemy did not wrap (pymysql raises one while it sets a dropped
    # pooled connection's isolation level) is told by its class tree reaching a driver's base
    # ``Error``: these are the drivers' real classes (sqlite3.Error, pymysql.err.Error)
    import pymysql  # type: ignore[import-untyped]

    from simstore.storage.db import translate_errors

    url = "mysql+pymysql://u:s3cret@127.0.0.1/x"
    drivers = [
        sqlite3.OperationalError("disk I/O error"),
        pymysql.err.OperationalError(2013, "Lost connection to server at s3cret"),
        pymysql.err.InterfaceError("(0, '')"),
        sqlite3.Error("the base itself"),
    ]
    for error in drivers:
        with pytest.raises(DatabaseUnavailable) as raised, translate_errors(url):
            raise error
        assert raised.value.__cause__ is error
        assert "s3cret" not in str(raised.value) and str(raised.value).startswith(
            "database mysql+pymysql://u:***@127.0.0.1/x: "
        ), raised.value
    others: list[Exception] = [ValueError("not a driver's"), Error("a base named Error elsewhere")]
    others.append(pymysql.err.Warning("a driver's class outside its Error tree"))
    for other in others:
        with pytest.raises(type(other)) as passed, translate_errors(url):
            raise other
        assert passed.value is other
