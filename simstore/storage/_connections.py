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
import logging
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from types import SimpleNamespace
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.pool import StaticPool

from simstore.errors import DatabaseUnavailable, InvalidInput, SimstoreError
from simstore.results import Decision
from simstore.storage import _prepared as prepared
from simstore.storage._checkpoint import Checkpointer
from simstore.storage.db import (
    check_relaxed_commit,
    configure_sessions,
    redact,
    resolve_bind,
    translate_errors,
)
from simstore.storage.locking import lock_for_write
from simstore.storage.schema import decisions, fingerprints, namespaces
from simstore.text.encoding import to_signed
from simstore.validate import check_bool

Result = TypeVar("Result")
Landed = Callable[[Connection, Result], "bool | None"]
"""Whether the writes that made a result are in the database: True, False, or None (unknown)."""

log = logging.getLogger("simstore")
_KEYS_PER_LOOKUP = 500


class CommitOutcomeUnknown(DatabaseUnavailable):
    """The connection was lost during a COMMIT and what the server did could not be found out:
    the write may or may not be in the database (look its keys up before adding them again)."""


def _lost_connection(error: exc.DBAPIError) -> bool:
    """Whether a COMMIT failed because its connection was lost (killed, the server gone)."""
    return bool(error.connection_invalidated)


def decisions_landed(
    ns_id: int, namespace: str
) -> Callable[[Connection, Decision | Sequence[Decision]], bool | None]:
    """For ``Connections.write``: whether the decisions of a write whose COMMIT lost its
    connection are in the database. It first takes the namespace's exclusive write lock, which
    the lost transaction held until it ended (committed, or rolled back by the server), so what
    it then reads is final. True: every decision is there as made (a kept row under its key and
    fingerprint, a duplicate's record naming the same kept key); False: none of the new ones is;
    None: anything else (another writer added one of the keys meanwhile)."""

    def landed(conn: Connection, result: Decision | Sequence[Decision]) -> bool | None:
        made = [result] if isinstance(result, Decision) else list(result)
        new = [decision for decision in made if not decision.replayed]
        if not new:
            return True
        lock_for_write(conn, ns_id, None, namespace=namespace)
        kept, logged = _recorded(conn, ns_id, sorted({decision.key for decision in new}))
        present = [d.key in kept or d.key in logged for d in new]
        if not any(present):
            return False
        for decision in new:
            signed = to_signed(decision.fingerprint)
            if decision.inserted:
                if kept.get(decision.key) != signed:
                    return None
            else:
                target = decision.recorded_as or (
                    decision.duplicate_of.key if decision.duplicate_of else None
                )
                if logged.get(decision.key) != (signed, target):
                    return None
        return True

    return landed


def _recorded(
    conn: Connection, ns_id: int, keys: Sequence[str]
) -> tuple[dict[str, int], dict[str, tuple[int, str | None]]]:
    """The kept rows (key -> signed fingerprint) and logged decisions (key -> (fingerprint, the
    key it duplicates)) of ``keys`` in namespace ``ns_id``."""
    kept: dict[str, int] = {}
    logged: dict[str, tuple[int, str | None]] = {}
    for first in range(0, len(keys), _KEYS_PER_LOOKUP):
        chunk = keys[first : first + _KEYS_PER_LOOKUP]
        for key, fp in conn.execute(
            sa.select(fingerprints.c.key, fingerprints.c.fp).where(
                fingerprints.c.ns_id == ns_id, fingerprints.c.key.in_(chunk)
            )
        ):
            kept[key] = int(fp)
        for key, fp, target in conn.execute(
            sa.select(decisions.c.key, decisions.c.fp, decisions.c.duplicate_of).where(
                decisions.c.ns_id == ns_id, decisions.c.key.in_(chunk)
            )
        ):
            logged[key] = (int(fp), target)
    return kept, logged


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

    def write(
        self, work: Callable[[Connection], Result], landed: Landed[Result] | None = None
    ) -> Result:
        """``work`` in a write transaction of its own (``transaction``'s scope, but on a server
        engine of simstore's own through connections that are not pinged first): once more on a
        fresh connection when the first statement found the connection dropped (the server had
        closed it while it waited in the pool; nothing of ``work`` reached the server).

        A server connection lost during the COMMIT leaves its outcome unknown to the client: the
        server may have committed. With ``landed`` (``decisions_landed``), a new connection finds
        out: ``work``'s result when the commit landed, ``DatabaseUnavailable`` that says it was
        not written when it did not, else ``CommitOutcomeUnknown`` that says how to check.
        """
        if self._writer is None and (
            landed is None or self._connection is not None or self.dialect == "sqlite"
        ):
            with self.transaction() as conn:
                return work(conn)
        token = prepared.statements_run.set(0)
        try:
            try:
                return self._write_once(work, landed)
            except DatabaseUnavailable as error:
                cause = error.__cause__
                dropped = isinstance(cause, exc.DBAPIError) and cause.connection_invalidated
                if prepared.statements_run.get() or not dropped or self._writer is None:
                    raise
            return self._write_once(work, landed)
        finally:
            prepared.statements_run.reset(token)

    def _write_once(
        self, work: Callable[[Connection], Result], landed: Landed[Result] | None
    ) -> Result:
        engine = self._writer or self.engine  # a caller's server engine: its own connections
        lost: exc.DBAPIError | None = None
        with translate_errors(self.engine.url), engine.connect() as conn:
            if self._writer is None:
                conn = conn.execution_options(isolation_level="READ COMMITTED")
            with conn.begin() as transaction:
                result = work(conn)
                try:
                    transaction.commit()
                except exc.DBAPIError as error:
                    if landed is None or not _lost_connection(error):
                        raise
                    lost = error
        if lost is None:
            return result
        return self._settle(result, landed, lost)  # type: ignore[arg-type]

    def _settle(self, result: Result, landed: Landed[Result], lost: exc.DBAPIError) -> Result:
        """After a COMMIT whose connection was lost: ``result`` if it landed, else an error that
        says what is known (checked on a new connection, once the lost transaction has ended)."""
        reason = str(lost.orig).strip().splitlines()[0] if lost.orig else str(lost)
        where = f"database {self.url}: the connection was lost during COMMIT ({reason})"
        try:
            with self.transaction() if self._writer is None else self._fresh() as conn:
                outcome = landed(conn, result)
        except SimstoreError as error:
            raise CommitOutcomeUnknown(
                f"{where}; whether it was written is unknown (the check failed: {error}): look "
                f"its keys up (SimStore.get(key), simstore show KEY) before adding them again"
            ) from lost
        if outcome is True:
            log.warning("%s, but it had committed (its keys are in the database)", where)
            return result
        if outcome is False:
            raise DatabaseUnavailable(
                f"{where}; it was not written (none of its keys is in the database, checked on "
                "a new connection)"
            ) from lost
        raise CommitOutcomeUnknown(
            f"{where}; whether it was written is unknown (some of its keys are in the database, "
            "or hold other decisions): look its keys up (SimStore.get(key), simstore show KEY) "
            "before adding them again"
        ) from lost

    @contextlib.contextmanager
    def _fresh(self) -> Iterator[Connection]:
        """A transaction on a new connection of the writer's engine (not one from its pool)."""
        assert self._writer is not None  # noqa: S101 - only for a writer of simstore's own
        # a lost connection invalidated the pool's older connections: this one is new
        with translate_errors(self.engine.url), self._writer.connect() as conn, conn.begin():
            yield conn

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


def for_store(bind: object, *, synchronous_commit: bool, group_commit: bool) -> Connections:
    """A store's connections, after checking that its commit options apply to ``bind``."""
    if not check_bool("synchronous_commit", synchronous_commit):
        check_relaxed_commit(bind)
    if check_bool("group_commit", group_commit) and isinstance(bind, Connection):
        raise InvalidInput(
            "group_commit needs a URL or an Engine: adds on a Connection of yours are "
            "committed when you commit it"
        )
    return Connections(bind, synchronous_commit=synchronous_commit)
