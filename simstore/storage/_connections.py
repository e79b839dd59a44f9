"""How a store talks to its database: one scope for every transaction and read.

A store is bound to a URL (simstore makes and owns the engine), a caller's Engine, or a caller's
Connection (simstore works inside the caller's transaction with savepoints and never commits it).
On a SQLite engine of simstore's own each thread keeps one connection: checking one out of
SQLAlchemy's pool and back costs about as much as the lookups of a query at 1M rows. On a server
engine of simstore's own, queries go through a second engine in autocommit that neither pings a
connection on checkout nor rolls it back on return: a query is then its lookup statements and
nothing else (it was about six round trips: ping, isolation set and reset, lookup, COMMIT,
rollback). A connection the server dropped fails its first statement; ``read`` retries once.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event, exc
from sqlalchemy.engine import URL, Connection, Engine

from simstore.errors import DatabaseUnavailable, SimstoreError
from simstore.storage.db import configure_sessions, redact, resolve_bind, translate_errors
from simstore.storage.schema import namespaces

Result = TypeVar("Result")


def _sqlite_file(engine: Engine) -> str | None:
    """The path of a SQLite engine's database file (None: another dialect, memory, a URI)."""
    database = engine.url.database or ""
    if (
        engine.dialect.name != "sqlite"
        or database in ("", ":memory:")
        or database.startswith("file:")
    ):
        return None
    return database


class _Checkpointer:
    """Checkpoints a SQLite file's write-ahead log in a thread of its own, off the commits.

    SQLite checkpoints inside the commit that takes the log past 1,000 pages, syncing the log and
    the file there: every ~35th add of a text waited ~10 ms for it (the add p99; seen with strace).
    Here a PASSIVE checkpoint (it waits for no reader or writer) runs whenever the log has grown
    past ``LOG_BYTES``, and the store's connections checkpoint in their commit only past
    ``SAFETY_PAGES``: under writes too sustained for a background checkpoint to catch up (it
    backfills only the frames that were there when it began), the log still stays bounded.
    """

    INTERVAL_S = 0.1
    LOG_BYTES = 4 << 20  # SQLite's own threshold: 1,000 pages of 4 KiB
    SAFETY_PAGES = 10_000

    def __init__(self, engine: Engine, path: str) -> None:
        self._path = path
        self._log = Path(path + "-wal")
        self._stopping = threading.Event()
        event.listen(engine, "connect", self._later_automatic_checkpoint)
        self._thread = threading.Thread(target=self._run, name="simstore-checkpoint", daemon=True)
        self._thread.start()

    @classmethod
    def _later_automatic_checkpoint(cls, dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA wal_autocheckpoint={cls.SAFETY_PAGES}")
        finally:
            cursor.close()

    def _run(self) -> None:
        connection: sqlite3.Connection | None = None
        try:
            while not self._stopping.wait(self.INTERVAL_S):
                try:
                    if self._log.stat().st_size < self.LOG_BYTES:
                        continue
                    if connection is None:
                        connection = sqlite3.connect(self._path, timeout=0)
                    # fetched, so that no statement of this connection pins the log
                    connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except (OSError, sqlite3.Error):
                    continue  # no log yet, or busy: the next round tries again
        finally:
            if connection is not None:
                connection.close()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)


def _start_pysqlite_transaction(conn: Connection) -> None:
    """Make sure pysqlite has really begun the caller's transaction before a SAVEPOINT.

    pysqlite only emits BEGIN before a data-changing statement. A SAVEPOINT issued outside a real
    transaction starts one of its own, and releasing it commits: the caller's later rollback would
    not undo simstore's rows. A no-op UPDATE makes pysqlite emit its BEGIN first.
    """
    dbapi_connection = conn.connection.dbapi_connection
    if dbapi_connection is not None and not getattr(dbapi_connection, "in_transaction", True):
        conn.execute(
            sa.update(namespaces).where(sa.false()).values(write_count=namespaces.c.write_count)
        )


class Connections:
    """The bind of a store, its transactions and reads, and its kept per-thread connections."""

    def __init__(self, bind: object) -> None:
        self._engine, self._connection = resolve_bind(bind)
        self.owns_engine = isinstance(bind, (str, URL))
        self._kept = threading.local()
        self.engine: Engine = (
            self._connection.engine if self._connection is not None else self._engine  # type: ignore[assignment]
        )
        self.dialect = self.engine.dialect.name
        self.url = redact(self.engine.url)
        self._reader: Engine | None = None  # servers, engine of simstore's own: for lookups
        self._checkpointer: _Checkpointer | None = None
        path = _sqlite_file(self.engine)
        if self.owns_engine and path is not None:
            self._checkpointer = _Checkpointer(self.engine, path)
        if self.owns_engine and self.dialect != "sqlite":
            self._reader = configure_sessions(
                sa.create_engine(
                    self.engine.url, isolation_level="AUTOCOMMIT", pool_reset_on_return=None
                )
            )

    @property
    def target(self) -> Engine | Connection:
        """What migrations and other bind-taking helpers should use: the caller's connection, if
        there is one, else the engine."""
        return self._connection if self._connection is not None else self.engine

    @property
    def caller_connection(self) -> Connection | None:
        return self._connection

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A transaction of simstore's own, or a savepoint inside the caller's."""
        with translate_errors(self.engine.url):
            if self._connection is not None:
                conn = self._connection
                if conn.in_transaction() and self.dialect == "sqlite":
                    _start_pysqlite_transaction(conn)
                scope = conn.begin_nested() if conn.in_transaction() else conn.begin()
                with scope:
                    yield conn
                return
            kept = self.kept()
            if kept is not None and not kept.in_transaction():
                try:
                    with kept.begin():
                        yield kept
                except BaseException as error:
                    self._retire_after(kept, error)
                    raise
                return
            with self.engine.connect() as conn:
                if self.dialect != "sqlite":
                    # the check after the lock must see rows committed while we waited
                    conn = conn.execution_options(isolation_level="READ COMMITTED")
                with conn.begin():
                    yield conn

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        """A connection for reads: on SQLite without SQLAlchemy's BEGIN/COMMIT bookkeeping.

        pysqlite never opens a transaction for a SELECT anyway (each statement reads its own
        snapshot, which ``simstore.storage._finder`` allows for), so the begin/commit pair only
        cost time.
        """
        if self._connection is None and self.dialect == "sqlite":
            with translate_errors(self.engine.url), self.engine.connect() as conn:
                yield conn
            return
        with self.transaction() as conn:
            yield conn

    def read(self, work: Callable[[Connection], Result]) -> Result:
        """``work`` on a ``lookup`` connection; once more on a fresh one when the server had
        dropped the first (reads change nothing, so a retry is safe)."""
        try:
            with self.lookup() as conn:
                return work(conn)
        except DatabaseUnavailable as error:
            cause = error.__cause__
            if not (self._reader and isinstance(cause, exc.DBAPIError)):
                raise
            if not cause.connection_invalidated:
                raise
        with self.lookup() as conn:
            return work(conn)

    @contextlib.contextmanager
    def lookup(self) -> Iterator[Connection]:
        """The cheapest scope for a query's statements (run on the DBAPI cursor): this thread's
        kept connection on SQLite, the autocommit reader on a server, else ``reading``."""
        if self._reader is not None:
            with translate_errors(self.engine.url), self._reader.connect() as conn:
                yield conn
            return
        kept = self.kept()
        if kept is None:
            with self.reading() as conn:
                yield conn
            return
        with translate_errors(self.engine.url):
            try:
                yield kept
            except BaseException as error:
                self._retire_after(kept, error)
                raise

    def kept(self) -> Connection | None:
        """On a SQLite engine of simstore's own, this thread's kept connection (else None).

        pysqlite holds no transaction between simstore's transactions (nor between SELECTs), so a
        kept connection pins no snapshot and blocks no checkpoint.
        """
        if not (self.owns_engine and self.dialect == "sqlite"):
            return None
        kept: Connection | None = getattr(self._kept, "connection", None)
        if kept is None or kept.closed or kept.invalidated:
            with translate_errors(self.engine.url):
                kept = self._kept.connection = self.engine.connect()
        return kept

    def current_kept(self) -> Connection | None:
        """This thread's kept connection as it is now (None when there is none yet or it was
        retired); unlike ``kept`` it never opens one."""
        return getattr(self._kept, "connection", None)

    def _retire_after(self, kept: Connection, error: BaseException) -> None:
        """Close a kept connection after an error, unless simstore's own checks raised it (the
        rollback left it clean): after a driver error its state is unknown."""
        if not isinstance(error, SimstoreError):
            self._kept.connection = None
            kept.close()

    def close(self) -> None:
        """Release this thread's kept connection and the engine simstore made for a URL."""
        kept = self.current_kept()
        if kept is not None:
            self._kept.connection = None
            kept.close()
        if self.owns_engine:
            self.engine.dispose()
        if self._reader is not None:
            self._reader.dispose()
        if self._checkpointer is not None:
            self._checkpointer.stop()
