"""Hot-path SQL compiled once per dialect and shape, then run through the driver directly.

Building and compiling a SQLAlchemy Core statement costs far more than an indexed SQLite lookup
(hundreds of microseconds against tens), so the candidate lookups, key lookups and inserts that
every add and query makes are compiled once and executed with ``exec_driver_sql``. IN lists are
padded to power-of-two sizes so that the number of distinct shapes (cached statements) stays small.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from datetime import datetime
from functools import cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement

from simstore.policy.probes import PAIRS
from simstore.storage.schema import (
    BAND_COLUMNS,
    band_keys_in_row,
    decisions,
    fingerprints,
    kept_as_decisions,
    minhash_keys,
    namespaces,
)
from simstore.text.encoding import BAND_BITS

# every SimHash band lookup names the band indexes' predicate, so that the planner may use them
SIMHASH_FINDABLE = fingerprints.c.simhash_indexed == sa.true()
MAX_IN = 4096  # values per IN list (SQLite allows 32766 parameters, the servers 65535)
_CACHE_LIMIT = 512
# statements this context ran to completion: ``Connections.write`` retries a write only when its
# first statement found the connection dropped (the server had closed it while it was pooled)
statements_run: ContextVar[int] = ContextVar("statements_run", default=0)


class Prepared:
    """One statement compiled for one dialect, run with a mapping of its bind parameters."""

    def __init__(self, statement: ClauseElement, dialect: sa.Dialect) -> None:
        compiled = statement.compile(dialect=dialect)
        assert isinstance(compiled, SQLCompiler)  # noqa: S101 - DML and SELECT compile to SQL
        self.sql = str(compiled)
        self.names = list(compiled.binds)  # bind parameter names, in the order they were declared
        self._order = list(compiled.positiontup or []) if dialect.positional else None
        # positional drivers: the values in statement order, picked by one C-level call
        self._pick = operator.itemgetter(*self._order) if self._order else None
        # the conversions SQLAlchemy would apply (e.g. datetimes to SQLite's text format)
        self._convert = {
            name: processor
            for name, bind in compiled.binds.items()
            if (processor := bind.type.dialect_impl(dialect).bind_processor(dialect)) is not None
        }

    def _bind(self, values: Mapping[str, Any]) -> Any:
        if self._convert:
            values = {
                name: self._convert[name](value) if name in self._convert else value
                for name, value in values.items()
            }
        if self._pick is None:
            return dict(values) if self._order is None else ()
        picked = self._pick(values)
        return picked if len(self._order or ()) > 1 else (picked,)

    def run(self, conn: Connection, values: Mapping[str, Any]) -> list[Any]:
        """Execute once on the DBAPI cursor; rows come back as the driver gives them."""
        return self._on_cursor(conn, False, self._bind(values))

    def count(self, conn: Connection, values: Mapping[str, Any]) -> int:
        """Execute a data-changing statement once; the rows it changed."""
        return int(self._on_cursor(conn, False, self._bind(values), rowcount=True)[0])

    def run_rows(self, conn: Connection, rows: Sequence[Sequence[Any]]) -> int | None:
        """executemany of value tuples given in ``self.names`` order (no per-row dicts); the
        id the driver gives for an insert of one row (``lastrowid``: SQLite, MySQL), else None."""
        convert = [
            (i, self._convert[name]) for i, name in enumerate(self.names) if name in self._convert
        ]
        if convert:
            seen: dict[Any, Any] = {}  # a batch's rows mostly share one timestamp: convert it once
            converted = []
            for row in rows:
                values = list(row)
                for i, processor in convert:
                    value = values[i]
                    if isinstance(value, list):  # an array (PostgreSQL's band keys): unhashable
                        values[i] = processor(value)
                        continue
                    if (i, value) not in seen:
                        seen[i, value] = processor(value)
                    values[i] = seen[i, value]
                converted.append(values)
            rows = converted
        if self._order is None:
            params: Any = [dict(zip(self.names, row, strict=True)) for row in rows]
        elif self._order == self.names:
            params = rows
        else:
            where = [self.names.index(name) for name in self._order]
            params = [tuple(row[i] for i in where) for row in rows]
        row_id: int | None = self._on_cursor(conn, True, params)[0]
        return row_id

    def _on_cursor(
        self, conn: Connection, many: bool, params: Any, rowcount: bool = False
    ) -> list[Any]:
        # The DBAPI cursor directly: SQLAlchemy's result machinery costs more than a SQLite lookup.
        cursor = conn.connection.cursor()
        try:
            one_row = many and len(params) == 1  # executemany costs psycopg extra round trips
            if many and not one_row:
                cursor.executemany(self.sql, params)
            else:
                cursor.execute(self.sql, params[0] if one_row else params)
            statements_run.set(statements_run.get() + 1)
            if many:  # the id of a one-row insert, where the driver has one
                return [cursor.lastrowid if one_row and conn.dialect.name != "postgresql" else None]
            if rowcount:
                return [cursor.rowcount]
            return [] if cursor.description is None else list(cursor.fetchall())
        except conn.dialect.loaded_dbapi.Error as error:
            # wrapped as SQLAlchemy would (IntegrityError, OperationalError, ...), and a dropped
            # connection invalidated as SQLAlchemy would, so that the pool replaces it
            dropped = conn.dialect.is_disconnect(error, conn.connection.dbapi_connection, cursor)
            if dropped:
                conn.invalidate(error)
            raise sa.exc.DBAPIError.instance(
                self.sql,
                params,
                error,
                conn.dialect.loaded_dbapi.Error,
                connection_invalidated=dropped,
            ) from error
        finally:
            with contextlib.suppress(conn.dialect.loaded_dbapi.Error):
                cursor.close()


_cache: dict[tuple[Any, ...], Prepared] = {}


def _cached(key: tuple[Any, ...], dialect: sa.Dialect, build: Any) -> Prepared:
    full_key = (dialect.name, *key)
    prepared = _cache.get(full_key)
    if prepared is None:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        prepared = _cache[full_key] = Prepared(build(), dialect)
    return prepared


def padded(count: int) -> int:
    """The power of two at or above ``count`` (at most MAX_IN)."""
    size = 1
    while size < count:
        size *= 2
    return min(size, MAX_IN)


def chunks(values: Sequence[Any], size: int = MAX_IN) -> Iterator[Sequence[Any]]:
    """``values`` in slices of at most ``size`` (an IN list's worth by default)."""
    for first in range(0, len(values), size):
        yield values[first : first + size]


@cache
def _param_names(prefix: str, size: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{j}" for j in range(size))


def padded_params(prefix: str, values: Sequence[Any]) -> dict[str, Any]:
    """Bind values for an IN list padded (by repeating the last value) to a power-of-two size."""
    size = padded(len(values))
    padding = [values[-1]] * (size - len(values))
    return dict(zip(_param_names(prefix, size), [*values, *padding], strict=True))


def candidate_lookup(
    dialect: sa.Dialect, shape: tuple[tuple[int, int], ...], windowed: bool
) -> Prepared:
    """UNION ALL of band lookups: ``shape`` is (band, number of values) per IN list.

    Parameters: ``ns``, ``cutoff`` (when windowed) and ``v{i}_{j}`` for list i, value j.
    """
    if not shape:
        raise ValueError("a candidate lookup needs at least one band")  # "" is no statement

    def build() -> ClauseElement:
        selects = []
        for i, (band, count) in enumerate(shape):
            column = fingerprints.c[BAND_COLUMNS[band]]
            names: list[Any] = [sa.bindparam(f"v{i}_{j}") for j in range(count)]
            condition = column == names[0] if count == 1 else column.in_(names)
            query = sa.select(fingerprints.c.id, fingerprints.c.fp).where(
                fingerprints.c.ns_id == sa.bindparam("ns"), condition, SIMHASH_FINDABLE
            )
            if windowed:
                query = query.where(fingerprints.c.part >= sa.bindparam("cutoff"))
            selects.append(query)
        return selects[0] if len(selects) == 1 else sa.union_all(*selects)

    return _cached(("candidates", shape, windowed), dialect, build)


def pair_lookup(
    dialect: sa.Dialect, shape: tuple[tuple[int, int], ...], windowed: bool
) -> Prepared:
    """UNION ALL of 32-bit pair lookups: ``shape`` is (pair, pair radius 0 or 1) per half.

    Parameters: ``ns``, ``cutoff`` (when windowed); per half i, ``h{i}``/``l{i}`` (its two band
    values) and, at radius 1, ``hf{i}_{j}``/``lf{i}_{j}`` (the 16 one-bit flips of each).
    Written as ``hi = ? AND lo IN (...)`` and ``hi IN (...) AND lo = ?``: SQLite turns a row-value
    ``(hi, lo) IN (VALUES ...)`` into a full scan, but seeks each value of these forms.
    """

    def build() -> ClauseElement:
        selects = []

        def select(condition: Any) -> None:
            query = sa.select(fingerprints.c.id, fingerprints.c.fp).where(
                condition, fingerprints.c.ns_id == sa.bindparam("ns"), SIMHASH_FINDABLE
            )
            if windowed:
                query = query.where(fingerprints.c.part >= sa.bindparam("cutoff"))
            selects.append(query)

        for i, (pair, radius) in enumerate(shape):
            high, low = (fingerprints.c[BAND_COLUMNS[band]] for band in PAIRS[pair])
            own_high: Any = sa.bindparam(f"h{i}")
            own_low: Any = sa.bindparam(f"l{i}")
            if radius == 0:
                select(sa.and_(high == own_high, low == own_low))
                continue
            low_flips: list[Any] = [sa.bindparam(f"lf{i}_{j}") for j in range(BAND_BITS)]
            high_flips: list[Any] = [sa.bindparam(f"hf{i}_{j}") for j in range(BAND_BITS)]
            select(sa.and_(high == own_high, low.in_([own_low, *low_flips])))
            select(sa.and_(high.in_(high_flips), low == own_low))
        return selects[0] if len(selects) == 1 else sa.union_all(*selects)

    return _cached(("pairs", shape, windowed), dialect, build)


_FLIPS = tuple(1 << j for j in range(BAND_BITS))
# per half i: the names of its own values and of its one-bit flips (built once, not per query)
_PAIR_NAMES = [
    (
        f"h{i}",
        f"l{i}",
        [f"hf{i}_{j}" for j in range(BAND_BITS)],
        [f"lf{i}_{j}" for j in range(BAND_BITS)],
    )
    for i in range(len(PAIRS))
]


def pair_params(shape: tuple[tuple[int, int], ...], own: Sequence[int]) -> dict[str, int]:
    """Bind values of ``pair_lookup(shape)`` for a fingerprint with band values ``own``."""
    values: dict[str, int] = {}
    for i, (pair, radius) in enumerate(shape):
        high, low = (own[band] for band in PAIRS[pair])
        high_name, low_name, high_flips, low_flips = _PAIR_NAMES[i]
        values[high_name], values[low_name] = high, low
        if radius:
            values.update(zip(high_flips, [high ^ flip for flip in _FLIPS], strict=True))
            values.update(zip(low_flips, [low ^ flip for flip in _FLIPS], strict=True))
    return values


def claim_namespace(dialect: sa.Dialect) -> Prepared:
    """Bump the namespace's write counter (parameter ``ns``): on SQLite, the write lock."""

    def build() -> ClauseElement:
        return (
            sa.update(namespaces)
            .where(namespaces.c.id == sa.bindparam("ns"))
            .values(write_count=namespaces.c.write_count + sa.literal_column("1"))
        )

    return _cached(("claim",), dialect, build)


def namespace_by_name(dialect: sa.Dialect) -> Prepared:
    """Every column of the namespace named ``name``, in the table's column order."""

    def build() -> ClauseElement:
        return sa.select(namespaces).where(namespaces.c.name == sa.bindparam("name"))

    return _cached(("namespace",), dialect, build)


def namespace_for_update(dialect: sa.Dialect) -> Prepared:
    """Lock the namespace row until the transaction ends (parameter ``ns``); its
    ``unsigned_rows``."""

    def build() -> ClauseElement:
        return (
            sa.select(namespaces.c.unsigned_rows)
            .where(namespaces.c.id == sa.bindparam("ns"))
            .with_for_update()
        )

    return _cached(("for_update",), dialect, build)


def namespace_lock(dialect: sa.Dialect) -> Prepared:
    """PostgreSQL: the tables' advisory lock shared, then the namespace's exclusive one
    (parameters ``cls``, ``ns``; ``simstore.storage.locking``)."""

    def build() -> ClauseElement:
        return sa.text(
            "SELECT pg_advisory_xact_lock_shared(:cls, 0), pg_advisory_xact_lock(:cls, :ns)"
        )

    return _cached(("namespace_lock",), dialect, build)


def tables_lock(dialect: sa.Dialect) -> Prepared:
    """PostgreSQL: the tables' advisory lock, exclusive (parameter ``cls``): partition DDL."""

    def build() -> ClauseElement:
        return sa.text("SELECT pg_advisory_xact_lock(:cls, 0)")

    return _cached(("tables_lock",), dialect, build)


def sighting_lock(dialect: sa.Dialect) -> Prepared:
    """PostgreSQL: the advisory lock of a kept text an add moves (parameter ``k``;
    ``simstore.storage.expiry``)."""

    def build() -> ClauseElement:
        return sa.text("SELECT pg_advisory_xact_lock(:k)")

    return _cached(("sighting_lock",), dialect, build)


def move_kept(dialect: sa.Dialect) -> Prepared:
    """Move a kept row to a later time and its partition (parameters ``ns``, ``k``: its key,
    ``m``: the time, ``p``: the partition); a row already as late stays."""

    def build() -> ClauseElement:
        return (
            sa.update(fingerprints)
            .where(
                fingerprints.c.ns_id == sa.bindparam("ns"),
                fingerprints.c.key == sa.bindparam("k"),
                fingerprints.c.added_at < sa.bindparam("m"),
            )
            .values(added_at=sa.bindparam("m"), part=sa.bindparam("p"))
        )

    return _cached(("move_kept",), dialect, build)


def lock_for_add(dialect: sa.Dialect) -> Prepared:
    """PostgreSQL: an add's advisory locks and then its namespace's ``unsigned_rows`` (NULL:
    gone), in one call of the function revision 0013 made (``simstore.storage.locking``)."""

    def build() -> ClauseElement:
        return sa.text("SELECT simstore_lock_for_add(:cls, :ns, CAST(:keys AS bigint[]))")

    return _cached(("lock_for_add",), dialect, build)


def unsigned_rows(dialect: sa.Dialect) -> Prepared:
    """Whether namespace ``ns`` holds rows without a MinHash signature."""

    def build() -> ClauseElement:
        return sa.select(namespaces.c.unsigned_rows).where(namespaces.c.id == sa.bindparam("ns"))

    return _cached(("unsigned",), dialect, build)


def id_span(dialect: sa.Dialect) -> Prepared:
    """Lowest and highest row id of the fingerprints table (both index lookups)."""

    def build() -> ClauseElement:
        return sa.select(sa.func.min(fingerprints.c.id), sa.func.max(fingerprints.c.id))

    return _cached(("id_span",), dialect, build)


def decisions_by_key(dialect: sa.Dialect, count: int) -> Prepared:
    """The decisions of ``count`` keys (parameters ``ns`` and ``k0``..): their rows of
    ``simstore_decisions`` and their kept rows as decisions, in one statement."""

    def build() -> ClauseElement:
        names: list[Any] = [sa.bindparam(f"k{j}") for j in range(count)]

        def of_keys(table: sa.Table) -> list[Any]:
            keys = table.c.key == names[0] if count == 1 else table.c.key.in_(names)
            return [table.c.ns_id == sa.bindparam("ns"), keys]

        logged = sa.select(decisions).where(*of_keys(decisions))
        return sa.union_all(logged, kept_as_decisions(*of_keys(fingerprints)))

    return _cached(("decisions", count), dialect, build)


_DETAIL_COLUMNS = ("id", "key", "added_at", "text", "fp", "signature", "packed_text")


def rows_by_id(dialect: sa.Dialect, count: int) -> Prepared:
    """Key, time, kept text (plain, then packed), value and signature of ``count`` rows
    (parameters ``ns``, ``i0``..)."""

    def build() -> ClauseElement:
        names: list[Any] = [sa.bindparam(f"i{j}") for j in range(count)]
        return sa.select(*(fingerprints.c[name] for name in _DETAIL_COLUMNS)).where(
            fingerprints.c.ns_id == sa.bindparam("ns"),
            fingerprints.c.id == names[0] if count == 1 else fingerprints.c.id.in_(names),
        )

    return _cached(("rows", count), dialect, build)


def rows_sharing_band_keys(dialect: sa.Dialect, count: int, windowed: bool) -> Prepared:
    """``rows_by_id``'s columns of the rows sharing at least ``least`` of the band keys ``k0``..:
    a query's candidates and what confirming them needs, in one round trip."""

    def build() -> ClauseElement:
        kept = fingerprints.c.ns_id == sa.bindparam("ns")
        if windowed:
            kept = sa.and_(kept, fingerprints.c.part >= sa.bindparam("cutoff"))
        columns = [fingerprints.c[name] for name in _DETAIL_COLUMNS]
        enough = sa.func.count() >= sa.bindparam("least")
        if not band_keys_in_row(dialect):
            holders = _band_key_holders(dialect, count).with_only_columns(minhash_keys.c.fp_id)
            shared = holders.group_by(minhash_keys.c.fp_id).having(enough)
            return sa.select(*columns).where(kept, fingerprints.c.id.in_(shared))
        # PostgreSQL: each shared row fetched by its id (a lateral join, OFFSET 0 so that it is
        # not flattened): the probes' row estimates grow with the table, and a semi-join planned
        # on them would turn into a hash join over every partition
        probes = _band_key_holders(dialect, count).subquery("holders")
        groups = (
            sa.select(probes.c.fp_id).group_by(probes.c.fp_id).having(enough).subquery("shared")
        )
        row = sa.select(*columns).where(kept, fingerprints.c.id == groups.c.fp_id)
        found = row.offset(sa.literal_column("0")).lateral("shared_row")
        return sa.select(*(found.c[name] for name in _DETAIL_COLUMNS)).select_from(
            groups.join(found, sa.true())
        )

    return _cached(("rows_sharing_band_keys", count, windowed), dialect, build)


def band_key_lookup(dialect: sa.Dialect, count: int) -> Prepared:
    """(band key, row id) of the holders of the MinHash band keys ``k0``.. in namespace ``ns``
    (every row's: the retention window is checked on the rows they lead to). PostgreSQL takes
    them all as one array ``keys`` instead, whatever their number (``band_key_array_lookup``)."""
    return _cached(("band_keys", count), dialect, lambda: _band_key_holders(dialect, count))


def band_key_array_lookup(dialect: sa.Dialect) -> Prepared:
    """``band_key_lookup`` on PostgreSQL for a batch: every key in one array parameter ``keys``.
    A batch's 16,000 keys as four statements of 4,096 bound values each cost ~1.65x the time of
    the one statement with one array (1,000 texts against 568k kept rows: 0.48 s against 0.29)."""
    return _cached(("band_key_array",), dialect, lambda: _band_key_holders(dialect, None))


def _band_key_holders(dialect: sa.Dialect, count: int | None) -> sa.Select[Any]:
    """(band_key, fp_id) of the rows holding one of the band keys ``k0``.. (namespace ``ns``);
    ``count`` None: the keys are the one array parameter ``keys`` (PostgreSQL only).

    PostgreSQL: one GIN probe per key (``band_keys @> ARRAY[k]``, a lateral join over the keys):
    the planner reads one array ``&&`` of hundreds of keys as matching most rows and scans the
    table, but costs each one-key probe right (4,096 keys: 8 ms against 650 ms, at 5k rows). The
    namespace is checked on the rows the probes return.
    """
    if not band_keys_in_row(dialect):
        names: list[Any] = [sa.bindparam(f"k{j}") for j in range(count or 0)]
        return sa.select(minhash_keys.c.band_key, minhash_keys.c.fp_id).where(
            minhash_keys.c.band_key.in_(names), minhash_keys.c.ns_id == sa.bindparam("ns")
        )
    key_array: Any
    if count is None:
        key_array = sa.bindparam("keys", type_=postgresql.ARRAY(sa.Integer()))
    else:
        keys: list[Any] = [sa.bindparam(f"k{j}") for j in range(count)]
        key_array = sa.cast(postgresql.array(keys), postgresql.ARRAY(sa.Integer()))
    key = sa.func.unnest(key_array).column_valued("band_key")
    holder = fingerprints.alias("holder")
    holding = holder.c.band_keys.op("@>", return_type=sa.Boolean())(postgresql.array([key]))
    # OFFSET 0 keeps the namespace test out of the probe: before ANALYZE the planner takes
    # ns_id = n for a rare value and would read the namespace through an index instead
    found = (
        sa.select(holder.c.id.label("fp_id"), holder.c.ns_id)
        .where(holding)
        .offset(sa.literal_column("0"))
        .lateral("found")
    )
    return sa.select(key.label("band_key"), found.c.fp_id).where(
        found.c.ns_id == sa.bindparam("ns")
    )


BAND_KEY_PRIMARY_KEY = ("band_key", "ns_id", "fp_id")


def delete_band_key(dialect: sa.Dialect) -> Prepared:
    """DELETE of one ``simstore_minhash`` row by its primary key; ``run_rows`` takes
    (band_key, ns_id, fp_id) tuples."""

    def build() -> ClauseElement:
        return sa.delete(minhash_keys).where(
            *(minhash_keys.c[name] == sa.bindparam(name) for name in BAND_KEY_PRIMARY_KEY)
        )

    return _cached(("delete_band_key",), dialect, build)


def delete_band_keys_of(dialect: sa.Dialect, keys: int, ids: int) -> Prepared:
    """DELETE of the ``simstore_minhash`` rows of the rows ``i0``.. (namespace ``ns``), given
    every band key those rows hold among ``k0``..: one statement for many rows (a round trip
    each on the servers), exact because a band-key row is deleted only if its row is one of
    ``i0``.."""

    def build() -> ClauseElement:
        return sa.delete(minhash_keys).where(
            minhash_keys.c.band_key.in_([sa.bindparam(f"k{j}") for j in range(keys)]),
            minhash_keys.c.ns_id == sa.bindparam("ns"),
            minhash_keys.c.fp_id.in_([sa.bindparam(f"i{j}") for j in range(ids)]),
        )

    return _cached(("delete_band_keys_of", keys, ids), dialect, build)


def ids_by_key(dialect: sa.Dialect, count: int) -> Prepared:
    """Id and key of the kept rows of ``count`` keys (parameters ``ns`` and ``k0``..)."""

    def build() -> ClauseElement:
        names: list[Any] = [sa.bindparam(f"k{j}") for j in range(count)]
        return sa.select(fingerprints.c.id, fingerprints.c.key).where(
            fingerprints.c.ns_id == sa.bindparam("ns"), fingerprints.c.key.in_(names)
        )

    return _cached(("ids", count), dialect, build)


def insert_into(dialect: sa.Dialect, table: sa.Table) -> Prepared:
    """INSERT of every column but the id, parameters named after the columns."""

    def build() -> ClauseElement:
        return sa.insert(table).values(
            {
                column.name: sa.bindparam(column.name, type_=column.type)
                for column in table.c
                if column.name != "id"
            }
        )

    return _cached(("insert", table.name), dialect, build)


def as_datetime(value: Any) -> datetime:
    """A timestamp as read through the driver (SQLite hands back text)."""
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        raise TypeError(f"expected a timestamp, got {type(value).__name__}")
    return value
