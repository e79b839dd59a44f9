"""PostgreSQL native range partitioning by time, an opt-in: purging then drops whole partitions.

``simstore db partition --interval 1d --keep 2d`` (or ``enable(bind, interval=..., keep=...)``,
``bind`` a URL, an Engine or a Connection) turns ``simstore_fingerprints``,
``simstore_decisions`` and ``simstore_minhash`` into tables partitioned by RANGE on their time
column (``added_at``, ``decided_at``), in one transaction:

* the existing table becomes the partition of everything before the first boundary (no copy;
  PostgreSQL scans it once to check the bound and builds its new key indexes);
* partitions of one interval each are made from there to ``AHEAD`` intervals ahead, plus a DEFAULT
  partition, so that an insert never fails for want of a partition;
* the primary key and the unique key constraints gain the time column (PostgreSQL requires the
  partition key in every unique constraint). One key in two partitions is still impossible:
  every add locks its key (``simstore.storage.locking``) before it checks for an earlier decision.

The database then has one retention, ``keep``: any store's ``purge`` drops the partitions that end
before now - keep (one DROP TABLE each, whatever their size) and makes the partitions ahead; run
``simstore db partition`` again (same interval) from cron to do only the latter. All namespaces
share the partitions, so ``keep`` must cover the longest window of any namespace; a store opened
with a longer window logs a warning. A namespace's own shorter window still purges rows as before.

The MinHash band keys (``simstore_minhash``) are partitioned the same way, by their row's time
(``added_at``, which PostgreSQL's band-key rows carry for this), so they go with their rows.

The cost: each partition has its own indexes, so a lookup seeks once per partition (keep /
interval + AHEAD + 2 of them; the empty ones cost little). ``python -m benchmarks purge`` measures
it against batched deletes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from simstore.errors import InvalidInput
from simstore.storage.db import connection_for
from simstore.storage.locking import lock_tables
from simstore.storage.retention import EPOCH, parse_duration, utc_naive
from simstore.storage.schema import POSTGRESQL_BAND_KEY_TIME, minhash_keys, settings

log = logging.getLogger("simstore")

TIME_COLUMNS = {
    "simstore_fingerprints": "added_at",
    "simstore_decisions": "decided_at",
    # the band keys, by their row's time: a partition of keys goes with its partition of rows
    "simstore_minhash": POSTGRESQL_BAND_KEY_TIME,
}
ROW_TABLES = ("simstore_fingerprints", "simstore_decisions")  # rows counted as a drop's
BAND_KEY_INDEX = "ix_simstore_minhash_band_key"  # the partitioned primary key, less its uniqueness
AHEAD = 3  # partitions made ahead of the current one
_INTERVAL, _KEEP, _FIRST = "partition_interval", "partition_keep", "partition_first_boundary"


@dataclass(frozen=True)
class Partitioning:
    """How the tables are partitioned: interval, retention, and where the first partition starts."""

    interval: timedelta
    keep: timedelta
    first_boundary: datetime  # the partition ``<table>_p_legacy`` holds everything before it


def read(conn: Connection) -> Partitioning | None:
    """The database's partitioning, or None (always None off PostgreSQL)."""
    if conn.dialect.name != "postgresql":
        return None
    rows = dict(
        conn.execute(
            sa.select(settings.c.name, settings.c.value).where(
                settings.c.name.in_([_INTERVAL, _KEEP, _FIRST])
            )
        ).all()
    )
    if _INTERVAL not in rows:
        return None
    return Partitioning(
        timedelta(seconds=int(rows[_INTERVAL])),
        timedelta(seconds=int(rows[_KEEP])),
        datetime.fromisoformat(rows[_FIRST]),
    )


def layout(bind: object) -> Partitioning | None:
    """The partitioning of the database ``bind`` names (a URL, an Engine or a Connection)."""
    with connection_for(bind) as conn:
        return read(conn)


def _seconds(moment: datetime) -> int:
    return int((moment - EPOCH).total_seconds())


def _floor(moment: datetime, interval: timedelta) -> datetime:
    step = int(interval.total_seconds())
    return EPOCH + timedelta(seconds=_seconds(moment) // step * step)


def enable(
    bind: object,
    *,
    interval: str | timedelta | float,
    keep: str | timedelta | float,
    now: datetime | None = None,
) -> Partitioning:
    """Partition both tables (or, when they are already, update ``keep`` and make partitions).

    ``bind`` is a URL, an Engine or a Connection. On a Connection it runs in the caller's
    transaction and never commits it; otherwise in a transaction of its own, committed at the end.
    The schema must be at the head revision (SchemaOutOfDate names the command to run).
    """
    from simstore.storage import migrate

    with connection_for(bind, begin=True) as conn:
        migrate.check(conn)
        return _enable(conn, interval, keep, now)


def _enable(
    conn: Connection,
    interval: str | timedelta | float,
    keep: str | timedelta | float,
    now: datetime | None,
) -> Partitioning:
    if conn.dialect.name != "postgresql":
        raise InvalidInput(
            f"native partitioning is a PostgreSQL feature; {conn.dialect.name} databases purge "
            "by batched deletes"
        )
    step, window = parse_duration(interval), parse_duration(keep)
    if step < timedelta(hours=1) or step.total_seconds() % 3600:
        raise InvalidInput("the partition interval must be a whole number of hours")
    if window < step:
        raise InvalidInput("keep must be at least one partition interval")
    moment = utc_naive(now)
    lock_tables(conn)  # partition DDL waits for running adds, and they for it (locking)
    existing = read(conn)
    if existing is not None:
        if existing.interval != step:
            raise InvalidInput(
                f"the tables are partitioned by {existing.interval}; the interval cannot change"
            )
        current = Partitioning(step, window, existing.first_boundary)
        _write_setting(conn, _KEEP, str(int(window.total_seconds())))
        make_ahead(conn, current, moment)
        return current
    newest = moment
    for table in ROW_TABLES:  # a band key's time is its row's
        column = TIME_COLUMNS[table]
        latest = conn.execute(
            sa.select(sa.func.max(sa.column(column))).select_from(sa.table(table))
        ).scalar()
        newest = max(newest, latest or newest)
    first = _floor(newest, step) + step
    for table, column in TIME_COLUMNS.items():
        _convert(conn, table, column, first)
    made = Partitioning(step, window, first)
    for name, value in (
        (_INTERVAL, str(int(step.total_seconds()))),
        (_KEEP, str(int(window.total_seconds()))),
        (_FIRST, first.isoformat()),
    ):
        _write_setting(conn, name, value)
    make_ahead(conn, made, moment)
    return made


def _write_setting(conn: Connection, name: str, value: str) -> None:
    conn.execute(sa.delete(settings).where(settings.c.name == name))
    conn.execute(sa.insert(settings).values(name=name, value=value))


def _convert(conn: Connection, table: str, column: str, first: datetime) -> None:
    """Make ``table`` a partitioned table whose first partition is the table as it was."""
    legacy = f"{table}_p_legacy"
    conn.execute(sa.text(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"))
    constraints = conn.execute(
        sa.text(
            "SELECT conname FROM pg_constraint "
            "WHERE conrelid = CAST(:t AS regclass) AND contype IN ('p', 'u') ORDER BY conname"
        ),
        {"t": table},
    ).scalars()
    unique_names = [str(name) for name in constraints]
    indexes = conn.execute(
        sa.text(
            "SELECT indexname, indexdef FROM pg_indexes "
            "WHERE schemaname = current_schema() AND tablename = :t AND indexname <> ALL(:c)"
        ),
        {"t": table, "c": unique_names},
    ).all()
    sequence_name = None  # the band keys have no id
    if table != minhash_keys.name:
        sequence = conn.execute(sa.text("SELECT pg_get_serial_sequence(:t, 'id')"), {"t": table})
        sequence_name = sequence.scalar_one()
    # names are simstore's own (from the catalog of simstore's tables), never user input
    conn.execute(sa.text(f"ALTER TABLE {table} RENAME TO {legacy}"))
    for name in unique_names:
        conn.execute(sa.text(f"ALTER TABLE {legacy} DROP CONSTRAINT {name}"))
    for name, _definition in indexes:
        conn.execute(sa.text(f"ALTER INDEX {name} RENAME TO {name}_l"))
    conn.execute(
        sa.text(
            f"CREATE TABLE {table} (LIKE {legacy} INCLUDING DEFAULTS) PARTITION BY RANGE ({column})"
        )
    )
    if sequence_name is None:
        # the band keys: a unique key would have to hold the time too (8 bytes more an entry);
        # each key row is written once, by the add that kept its row
        conn.execute(sa.text(f"CREATE INDEX {BAND_KEY_INDEX} ON {table} (band_key, ns_id, fp_id)"))
    else:
        conn.execute(sa.text(f"ALTER SEQUENCE {sequence_name} OWNED BY {table}.id"))
        conn.execute(sa.text(f"ALTER TABLE {table} ADD PRIMARY KEY (id, {column})"))
        key_constraint = f"uq_{table}_key"
        conn.execute(
            sa.text(
                f"ALTER TABLE {table} ADD CONSTRAINT {key_constraint} UNIQUE (key, ns_id, {column})"
            )
        )
    for _name, definition in indexes:
        conn.execute(sa.text(definition))  # the same definition, now on the partitioned parent
    conn.execute(
        sa.text(
            f"ALTER TABLE {table} ATTACH PARTITION {legacy} "
            f"FOR VALUES FROM (MINVALUE) TO ('{first.isoformat(sep=' ')}')"
        )
    )
    conn.execute(sa.text(f"CREATE TABLE {table}_p_default PARTITION OF {table} DEFAULT"))


def partition_names(bind: object, table: str) -> list[str]:
    """The partitions of ``table``, by name (``bind``: a URL, an Engine or a Connection)."""
    with connection_for(bind) as conn:
        return [
            str(name)
            for name in conn.execute(
                sa.text(
                    "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                    "WHERE i.inhparent = CAST(:t AS regclass) ORDER BY c.relname"
                ),
                {"t": table},
            ).scalars()
        ]


def _bounds(name: str, table: str, layout: Partitioning) -> tuple[datetime, datetime] | None:
    """[lower, upper) of a partition from its name (None for the DEFAULT partition)."""
    if name == f"{table}_p_legacy":
        return datetime.min, layout.first_boundary
    suffix = name.removeprefix(f"{table}_p")
    if not suffix.isdigit():
        return None
    lower = EPOCH + timedelta(seconds=int(suffix))
    return lower, lower + layout.interval


def make_ahead(conn: Connection, layout: Partitioning, now: datetime) -> list[str]:
    """Create the missing partitions from the window's start to ``AHEAD`` intervals ahead."""
    made = []
    start = max(layout.first_boundary, _floor(now - layout.keep, layout.interval))
    stop = _floor(now, layout.interval) + (AHEAD + 1) * layout.interval
    for table, column in TIME_COLUMNS.items():
        existing = set(partition_names(conn, table))
        lower = start
        while lower < stop:
            name = f"{table}_p{_seconds(lower)}"
            upper = lower + layout.interval
            if name not in existing and not _default_holds(conn, table, column, lower, upper):
                conn.execute(
                    sa.text(
                        f"CREATE TABLE {name} PARTITION OF {table} FOR VALUES "
                        f"FROM ('{lower.isoformat(sep=' ')}') TO ('{upper.isoformat(sep=' ')}')"
                    )
                )
                made.append(name)
            lower = upper
    return made


def _default_holds(
    conn: Connection, table: str, column: str, lower: datetime, upper: datetime
) -> bool:
    """Rows in the DEFAULT partition inside [lower, upper) block a partition for that range."""
    moment: sa.ColumnClause[Any] = sa.column(column)
    row = conn.execute(
        sa.select(sa.literal(1))
        .select_from(sa.table(f"{table}_p_default"))
        .where(moment >= lower, moment < upper)
        .limit(1)
    ).first()
    if row is not None:
        log.warning("rows of %s..%s sit in %s_p_default; no partition made", lower, upper, table)
    return row is not None


def drop_expired(conn: Connection, layout: Partitioning, now: datetime) -> int:
    """Drop the partitions that end at or before now - keep; the number of rows they held."""
    cutoff = now - layout.keep
    dropped = 0
    for table in TIME_COLUMNS:
        for name in partition_names(conn, table):
            bounds = _bounds(name, table, layout)
            if bounds is None or bounds[1] > cutoff:
                continue
            rows: Any = 0
            if table in ROW_TABLES:  # band keys are not counted (rows of them are no texts)
                rows = conn.execute(
                    sa.select(sa.func.count()).select_from(sa.table(name))
                ).scalar_one()
            conn.execute(sa.text(f"DROP TABLE {name}"))
            log.info("dropped partition %s (%d rows)", name, rows)
            dropped += int(rows)
    return dropped
