"""How a store talks to its database: one scope for every transaction and read.

A store is bound to a URL (simstore makes and owns the engine), a caller's Engine, or a caller's
Connection (simstore works inside the caller's transaction with savepoints and never commits it).
On a SQLite engine of simstore's own each thread keeps one connection: checking one out of
SQLAlchemy's pool and back costs about as much as the lookups of a query at 1M rows. On a server
engine of simstore's own, queries go through a second engine in autocommit that neither pings a
connection on checkout nor rolls it back on return: a query is then its lookup statements and
nothing else (it was about six round trips: ping, isolation set and reset, lookup, COMMIT,
rollback). A connection the server dropped fails its first statement; ``read`` retries once.
An in-memory SQLite database is one connection that every thread shares, one transaction or read
at a time (``_turn_of``).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.pool import StaticPool

from simstore.errors import DatabaseUnavailable, InvalidInput, SimstoreError
from simstore.storage import _prepared as prepared
from simstore.storage._checkpoint import Checkpointer
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


def _sqlite_memory(engine: Engine) -> bool:
    """Whether ``engine`` is an in-memory SQLite database (``sqlite://``, ``:memory:``, a URI
    with ``mode=memory``)."""
    database = engine.url.database or ""
    return engine.dialect.name == "sqlite" and (
        database in ("", ":memory:")
        or "mode=memory" in database
        or ":memory:" in database
        or engine.url.query.get("mode") == "memory"
    )


def _refuse_memory_per_thread(engine: Engine) -> None:
    """InvalidInput for a caller's in-memory SQLite engine whose pool gives each thread a
    connection, hence a database, of its own (``create_engine("sqlite://")``'s default): the
    schema made on one thread is missing on the others ("no such table"), and texts added on one
    are never seen on another."""
    if not _sqlite_memory(engine) or isinstance(engine.pool, StaticPool):
        return
    raise InvalidInput(
        f"{redact(engine.url)}: an in-memory SQLite engine with {type(engine.pool).__name__} "
        "gives every thread an empty database of its own; pass the URL instead "
        "(SimStore('sqlite://')), or make the engine with one shared connection: "
        "create_engine('sqlite://', poolclass=StaticPool, "
        "connect_args={'check_same_thread': False})"
    )


_turns: weakref.WeakKeyDictionary[Engine, threading.RLock] = weakref.WeakKeyDictionary()
_turns_guard = threading.Lock()


def _turn_of(engine: Engine) -> threading.RLock | None:
    """The lock that serialises every transaction and read on an in-memory SQLite engine (one per
    engine, shared by all its stores); None for any other engine.

    Such an engine has one connection (``StaticPool``) that every thread uses: two transactions
    interleaved on it would commit each other's halves (adds reported kept but never stored, two
    near-duplicates both kept, a ``SystemError`` out of pysqlite's commit).
    """
    if not _sqlite_memory(engine):
        return None
    with _turns_guard:
        turn = _turns.get(engine)
        if turn is None:
            turn = _turns[engine] = threading.RLock()
        return turn


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

    def __init__(self, bind: object, *, synchronous_commit: bool = True) -> None:
        self._engine, self._connection = resolve_bind(bind)
        self.owns_engine = isinstance(bind, (str, URL))
        self.engine: Engine = (
            self._connection.engine if self._connection is not None else self._engine  # type: ignore[assignment]
        )
        self.dialect = self.engine.dialect.name
        self.url = redact(self.engine.url)
        if self._connection is None and not self.owns_engine:
            _refuse_memory_per_thread(self.engine)
        turn = _turn_of(self.engine) if self._connection is None else None
        self._turn: contextlib.AbstractContextManager[Any] = turn or contextlib.nullcontext()
        # in memory: one kept connection for all threads (taken in turn), else one per thread
        self._kept: Any = threading.local() if turn is None else SimpleNamespace(connection=None)
        self._all_kept: weakref.WeakSet[Connection] = weakref.WeakSet()  # every thread's, to close
        self._closed = False
        self._reader: Engine | None = None  # servers, engine of simstore's own: for lookups
        self._writer: Engine | None = None  # and for adds (``write``)
        self._detach_checkpointer: Callable[[], None] | None = None
        path = _sqlite_file(self.engine)
        if self.owns_engine and path is not None:
            self._detach_checkpointer = Checkpointer.attach(self.engine, path)
        if self.owns_engine and self.dialect != "sqlite":
            self._reader = configure_sessions(
                sa.create_engine(
                    self.engine.url, isolation_level="AUTOCOMMIT", pool_reset_on_return=None
                )
            )
            # READ COMMITTED set once per connection, no ping at checkout and no rollback at
            # return: an add is its own statements, BEGIN and COMMIT (``write`` retries an add
            # whose connection the server had dropped)
            self._writer = configure_sessions(
                sa.create_engine(
                    self.engine.url, isolation_level="READ COMMITTED", pool_reset_on_return=None
                ),
                synchronous_commit=synchronous_commit,
            )

    @property
    def target(self) -> Engine | Connection:
        """What migrations and other bind-taking helpers should use: the caller's connection, if
        there is one, else the engine."""
        return self._connection if self._connection is not None else self.engine

    @property
    def caller_connection(self) -> Connection | None:
        return self._connection

    def in_turn(self) -> contextlib.AbstractContextManager[Any]:
        """Hold the engine's turn (in-memory SQLite; else nothing) around work that uses
        ``target`` or ``kept`` directly, as ``transaction`` and ``reading`` do for theirs."""
        return self._turn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A transaction of simstore's own, or a savepoint inside the caller's."""
        with self._turn, translate_errors(self.engine.url):
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

    def write(self, work: Callable[[Connection], Result]) -> Result:
        """``work`` in a write transaction of its own (``transaction``'s scope, but on a server
        engine of simstore's own through connections that are not pinged first): once more on a
        fresh connection when the first statement found the connection dropped (the server had
        closed it while it waited in the pool; nothing of ``work`` reached the server).
        """
        if self._writer is None:
            with self.transaction() as conn:
                return work(conn)
        token = prepared.statements_run.set(0)
        try:
            try:
                return self._write_once(work)
            except DatabaseUnavailable as error:
                cause = error.__cause__
                dropped = isinstance(cause, exc.DBAPIError) and cause.connection_invalidated
                if prepared.statements_run.get() or not dropped:
                    raise
            return self._write_once(work)
        finally:
            prepared.statements_run.reset(token)

    def _write_once(self, work: Callable[[Connection], Result]) -> Result:
        assert self._writer is not None  # noqa: S101 - write() checked
        with translate_errors(self.engine.url), self._writer.connect() as conn, conn.begin():
            return work(conn)

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        """A connection for reads: on SQLite without SQLAlchemy's BEGIN/COMMIT bookkeeping.

        pysqlite never opens a transaction for a SELECT anyway (each statement reads its own
        snapshot, which ``simstore.storage._finder`` allows for), so the begin/commit pair only
        cost time.
        """
        if self._connection is None and self.dialect == "sqlite":
            with self._turn, translate_errors(self.engine.url), self.engine.connect() as conn:
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
        with self._turn:
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
            self._all_kept.add(kept)
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
        """Release every thread's kept connection, the engines simstore made for a URL and the
        file's checkpointer (once; also what a store dropped without ``close`` gets)."""
        if self._closed:
            return
        self._closed = True
        self._kept.connection = None  # this thread's (or the in-memory one)
        for kept in list(self._all_kept):
            with contextlib.suppress(Exception):  # a connection the server dropped, say
                kept.close()
        if self.owns_engine:
            self.engine.dispose()
        if self._reader is not None:
            self._reader.dispose()
        if self._writer is not None:
            self._writer.dispose()
        if self._detach_checkpointer is not None:
            self._detach_checkpointer()
