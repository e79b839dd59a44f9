"""A namespace read whole for a batch engine that decides against it (``simstore.spark``): its
kept rows inside the window and every key it has a decision for.

Each is offered two ways: rows read here through SQLAlchemy, or the SQL text for an engine that
reads the database itself (Spark's JDBC source on PostgreSQL), compiled for the store's dialect
with its values inline, with the row-id range that engine splits its reads by.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa

from simstore.storage.retention import partition_of, window_start
from simstore.storage.schema import decisions, fingerprints
from simstore.storage.scope import Scope

KeptRow = tuple[int, str, int, str | None, bytes | None, datetime, bytes | None]
"""(rank, key, signed fingerprint, text, signature, added_at, packed_text): ``rank`` is the row
id, unique among the rows; a row has its text in ``text`` or ``packed_text``, or neither."""


class KeptQuery(NamedTuple):
    """The kept rows as one SQL text, in columns ``rank, key, fp, text, signature, moment,
    packed_text`` (``moment``: ``added_at`` in microseconds since the epoch, UTC), and the range
    of ``rank`` it covers (``low`` and ``high`` None when it holds no row), and its ``rows``."""

    sql: str
    low: int | None
    high: int | None
    rows: int


def _kept(scope: Scope, at: datetime) -> sa.Select[Any]:
    statement = sa.select(
        fingerprints.c.id,
        fingerprints.c.key,
        fingerprints.c.fp,
        fingerprints.c.text,
        fingerprints.c.signature,
        fingerprints.c.added_at,
        fingerprints.c.packed_text,
    ).where(fingerprints.c.ns_id == scope.ns_id)
    start = window_start(at, scope.keep)
    if start is not None:
        statement = statement.where(
            fingerprints.c.part >= partition_of(start, scope.partition_seconds),
            fingerprints.c.added_at >= start,
        )
    return statement


def _decided(scope: Scope) -> sa.CompoundSelect[Any]:
    kept = sa.select(fingerprints.c.key).where(fingerprints.c.ns_id == scope.ns_id)
    logged = sa.select(decisions.c.key).where(decisions.c.ns_id == scope.ns_id)
    return sa.union_all(kept, logged)


def _literal(scope: Scope, statement: sa.Select[Any] | sa.CompoundSelect[Any]) -> str:
    dialect = scope.connections.engine.dialect
    return str(statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))


def kept_rows(scope: Scope, at: datetime) -> list[KeptRow]:
    """The namespace's kept rows inside its window at ``at``."""
    with scope.connections.reading() as conn:
        return [
            (int(rank), str(key), int(fp), text, None if sig is None else bytes(sig), added_at,
             None if packed is None else bytes(packed))
            for rank, key, fp, text, sig, added_at, packed in conn.execute(_kept(scope, at))
        ]  # fmt: skip


def kept_query(scope: Scope, at: datetime) -> KeptQuery:
    """``kept_rows`` as SQL text for another reader of the database (PostgreSQL), with the range
    of row ids it covers (read now)."""
    statement = _kept(scope, at)
    numbered = statement.subquery()
    with scope.connections.reading() as conn:
        low, high, count = conn.execute(
            sa.select(sa.func.min(numbered.c.id), sa.func.max(numbered.c.id), sa.func.count())
        ).one()
    # added_at is UTC without a zone: its epoch is read as UTC, in microseconds, exactly
    moment = sa.cast(sa.extract("epoch", fingerprints.c.added_at) * 1_000_000, sa.BigInteger)
    selected = statement.with_only_columns(
        fingerprints.c.id.label("rank"),
        fingerprints.c.key,
        fingerprints.c.fp,
        fingerprints.c.text,
        fingerprints.c.signature,
        moment.label("moment"),
        fingerprints.c.packed_text,
    )
    return KeptQuery(
        _literal(scope, selected),
        None if low is None else int(low),
        None if high is None else int(high),
        int(count),
    )


def decided_keys(scope: Scope) -> list[str]:
    """Every key the namespace has a decision for (kept or duplicate)."""
    with scope.connections.reading() as conn:
        return [str(row[0]) for row in conn.execute(_decided(scope))]


def decided_keys_query(scope: Scope) -> str:
    """``decided_keys`` as SQL text (one column, ``key``) for another reader of the database."""
    return _literal(scope, _decided(scope))
