"""What an audit of one namespace reads: the report's aggregates and bounded samples
(``simstore.io.report``) and the exports' streams (``simstore.io.export``).

Everything here reads; nothing writes. The report's queries (``Decided``) run on a connection
the caller holds for the whole page, so that its counts agree with each other; each reads SQL
aggregates or a top-N sample, never the namespace itself. The exports stream one query each in
batches of ``BATCH_ROWS`` rows. Rows come back as plain tuples; the layers above give them their
meaning.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from simstore.storage.schema import decision_log, decisions, fingerprints, kept_text_of
from simstore.storage.scope import Scope

BATCH_ROWS = 1000  # rows an export holds at once
IN_KEYS = 500  # keys in one IN list


class Sampled(NamedTuple):
    """A duplicate decision read as a sample: the pair, when, and what decided it."""

    key: str
    duplicate_of: str
    decided_at: datetime
    distance: int | None
    measure: str | None  # None: the distance alone decided
    score: float | None


class ClusterRow(NamedTuple):
    """A kept key with the count of its recorded duplicates plus one, and its kept row's time and
    text (``added_at`` None: the kept row has since been removed or purged)."""

    key: str
    size: int
    last_at: datetime
    added_at: datetime | None
    text: str | None


def _day(value: object) -> str:
    """``date(decided_at)`` as the dialect returns it (text on SQLite, a date elsewhere)."""
    if isinstance(value, (date, datetime)):
        return f"{value:%Y-%m-%d}"
    return str(value)[:10]


def _bin(conn: Connection, score: Any, bins: int) -> Any:
    """floor(score * bins) (SQLite may lack floor(): a cast truncates non-negative values; the
    other dialects' casts round, so they use floor)."""
    scaled = score * bins + 1e-9  # 0.57 * 100 is 56.99999999999999
    if conn.dialect.name == "sqlite":
        return sa.cast(scaled, sa.Integer)
    return sa.func.floor(scaled)


def _sampled(rows: Iterable[Any]) -> list[Sampled]:
    return [
        Sampled(
            row.key,
            row.duplicate_of,
            row.decided_at,
            None if row.distance is None else int(row.distance),
            row.measure,
            None if row.score is None else float(row.score),
        )
        for row in rows
    ]


_SAMPLED = (
    decisions.c.key,
    decisions.c.duplicate_of,
    decisions.c.decided_at,
    decisions.c.distance,
    decisions.c.measure,
    decisions.c.score,
)


@dataclass(frozen=True)
class Decided:
    """The report's queries over namespace ``ns_id``'s decisions made at or after ``start``
    (None: ever); the kept rows stand for the decisions that kept them."""

    ns_id: int
    start: datetime | None

    def _decided(self) -> list[Any]:
        where = [decisions.c.ns_id == self.ns_id]
        if self.start is not None:
            where.append(decisions.c.decided_at >= self.start)
        return where

    def _duplicates(self) -> list[Any]:
        return [*self._decided(), decisions.c.duplicate_of.is_not(None)]

    def _kept(self) -> list[Any]:
        where = [fingerprints.c.ns_id == self.ns_id]
        if self.start is not None:
            where.append(fingerprints.c.added_at >= self.start)
        return where

    def kept_rows(self, conn: Connection) -> tuple[int, int]:
        """Kept rows added since ``start``, and how many of them keep their normalised text."""
        rows, with_text = conn.execute(
            sa.select(
                sa.func.count(),
                # a row has its text in one of the two columns, or none
                sa.func.count(fingerprints.c.packed_text) + sa.func.count(fingerprints.c.text),
            ).where(*self._kept())
        ).one()
        return int(rows), int(with_text)

    def recent_kept(self, conn: Connection, most: int) -> list[str]:
        """The keys of the latest ``most`` kept rows (added since ``start``), latest first."""
        statement = (
            sa.select(fingerprints.c.key)
            .where(*self._kept())
            .order_by(fingerprints.c.id.desc())
            .limit(most)
        )
        return [str(key) for key in conn.execute(statement).scalars()]

    def per_day(self, conn: Connection) -> list[tuple[str, int, int]]:
        """(day as YYYY-MM-DD in UTC, kept, duplicates) for each day with a decision, by day."""
        log = decision_log(self.ns_id)
        day = sa.func.date(log.c.decided_at)
        duplicate = sa.case((log.c.duplicate_of.is_not(None), 1), else_=0)
        since = [] if self.start is None else [log.c.decided_at >= self.start]
        rows = conn.execute(
            sa.select(day, sa.func.count(), sa.func.sum(duplicate))
            .where(*since)
            .group_by(day)
            .order_by(day)
        ).all()
        return [
            (_day(value), int(count) - int(dups or 0), int(dups or 0))
            for value, count, dups in rows
        ]

    def per_measure(
        self, conn: Connection
    ) -> list[tuple[str | None, int, float | None, float | None]]:
        """(measure, duplicates, lowest score, highest score) per measure of the duplicates
        (measure None: the distance alone decided)."""
        rows = conn.execute(
            sa.select(
                decisions.c.measure,
                sa.func.count(),
                sa.func.min(decisions.c.score),
                sa.func.max(decisions.c.score),
            )
            .where(*self._duplicates())
            .group_by(decisions.c.measure)
        ).all()
        return [
            (
                measure,
                int(count),
                None if low is None else float(low),
                None if high is None else float(high),
            )
            for measure, count, low, high in rows
        ]

    def score_bins(self, conn: Connection, bins: int) -> list[tuple[str | None, int, int]]:
        """(measure, floor(score * bins), duplicates) of the scored duplicates."""
        score_bin = _bin(conn, decisions.c.score, bins)
        rows = conn.execute(
            sa.select(decisions.c.measure, score_bin, sa.func.count())
            .where(*self._duplicates(), decisions.c.score.is_not(None))
            .group_by(decisions.c.measure, score_bin)
        )
        return [(measure, int(value), int(count)) for measure, value, count in rows]

    def distances(self, conn: Connection) -> list[tuple[str | None, int, int]]:
        """(measure, SimHash distance, duplicates) of the duplicates with a distance."""
        rows = conn.execute(
            sa.select(decisions.c.measure, decisions.c.distance, sa.func.count())
            .where(*self._duplicates(), decisions.c.distance.is_not(None))
            .group_by(decisions.c.measure, decisions.c.distance)
        )
        return [(measure, int(distance), int(count)) for measure, distance, count in rows]

    def clusters(self, conn: Connection, limit: int) -> list[ClusterRow]:
        """The ``limit`` kept keys with the most duplicates, biggest first (then by key)."""
        size = (sa.func.count() + 1).label("size")
        biggest = (
            sa.select(
                decisions.c.duplicate_of.label("kept_key"),
                size,
                sa.func.max(decisions.c.decided_at).label("last_at"),
            )
            .where(*self._duplicates())
            .group_by(decisions.c.duplicate_of)
            .order_by(size.desc(), decisions.c.duplicate_of)
            .limit(limit)
            .subquery()
        )
        rows = conn.execute(
            sa.select(
                biggest.c.kept_key,
                biggest.c.size,
                biggest.c.last_at,
                fingerprints.c.added_at,
                fingerprints.c.text,
                fingerprints.c.packed_text,
            )
            .select_from(
                biggest.outerjoin(
                    fingerprints,
                    sa.and_(
                        fingerprints.c.ns_id == self.ns_id,
                        fingerprints.c.key == biggest.c.kept_key,
                    ),
                )
            )
            .order_by(biggest.c.size.desc(), biggest.c.kept_key)
        ).all()
        return [
            ClusterRow(key, int(count), last_at, added_at, kept_text_of(text, packed))
            for key, count, last_at, added_at, text, packed in rows
        ]

    def orphaned(self, conn: Connection) -> int:
        """Duplicates whose kept row has since been removed or purged."""
        kept = sa.exists().where(
            fingerprints.c.ns_id == self.ns_id, fingerprints.c.key == decisions.c.duplicate_of
        )
        return int(
            conn.execute(
                sa.select(sa.func.count()).where(*self._duplicates(), sa.not_(kept))
            ).scalar_one()
        )

    def farthest(self, conn: Connection, sample: int) -> list[Sampled]:
        """The ``sample`` duplicates the distance alone decided, farthest first (a top-N sort
        in the database)."""
        statement = (
            sa.select(*_SAMPLED)
            .where(*self._duplicates(), decisions.c.measure.is_(None))
            .order_by(decisions.c.distance.desc(), decisions.c.key)
            .limit(sample)
        )
        return _sampled(conn.execute(statement))

    def nearest(self, conn: Connection, measure: str, value: float, sample: int) -> list[Sampled]:
        """The ``sample`` duplicates of ``measure`` whose score lies nearest ``value``, nearest
        first (a top-N sort in the database)."""
        statement = (
            sa.select(*_SAMPLED)
            .where(*self._duplicates(), decisions.c.measure == measure)
            .order_by(sa.func.abs(decisions.c.score - value), decisions.c.key)
            .limit(sample)
        )
        return _sampled(conn.execute(statement))


def kept_texts(conn: Connection, ns_id: int, keys: Sequence[str]) -> dict[str, str | None]:
    """The kept keys among ``keys`` with the normalised text kept for each (None: a long text);
    a key missing from the result has no kept row."""
    wanted = sorted(set(keys))
    kept: dict[str, str | None] = {}
    for first in range(0, len(wanted), IN_KEYS):
        for key, text, packed in conn.execute(
            sa.select(fingerprints.c.key, fingerprints.c.text, fingerprints.c.packed_text).where(
                fingerprints.c.ns_id == ns_id,
                fingerprints.c.key.in_(wanted[first : first + IN_KEYS]),
            )
        ):
            kept[key] = kept_text_of(text, packed)
    return kept


def _stream(scope: Scope, statement: sa.Select[Any]) -> Iterator[tuple[Any, ...]]:
    with scope.connections.reading() as conn:
        for row in conn.execution_options(yield_per=BATCH_ROWS).execute(statement):
            yield tuple(row)


def decision_rows(scope: Scope) -> Iterator[tuple[Any, ...]]:
    """Every recorded decision of the namespace (kept rows stand for theirs) as (key, signed
    fingerprint, inserted, duplicate_of, distance, measure, score, decided_at), by time; at one
    moment the kept before the duplicates, each in the order they were written."""
    table = decision_log(scope.ns_id)
    statement = sa.select(
        table.c.key, table.c.fp, table.c.inserted, table.c.duplicate_of, table.c.distance,
        table.c.measure, table.c.score, table.c.decided_at,
    ).order_by(table.c.decided_at, sa.desc(table.c.inserted), table.c.id)  # fmt: skip
    return _stream(scope, statement)


def kept_rows(scope: Scope) -> Iterator[tuple[str, int, datetime, str | None]]:
    """Every kept row of the namespace as (key, signed fingerprint, added_at, normalised text or
    None), in the order they were written."""
    statement = (
        sa.select(
            fingerprints.c.key,
            fingerprints.c.fp,
            fingerprints.c.added_at,
            fingerprints.c.text,
            fingerprints.c.packed_text,
        )
        .where(fingerprints.c.ns_id == scope.ns_id)
        .order_by(fingerprints.c.id)
    )
    for key, fp, added_at, text, packed in _stream(scope, statement):
        yield key, int(fp), added_at, kept_text_of(text, packed)


def cluster_members(scope: Scope) -> Iterator[tuple[str, str]]:
    """Every decided key as (its cluster's kept key, key): by cluster, the kept key first (when it
    is still kept), then its duplicates by key."""
    table = decision_log(scope.ns_id)
    head = sa.func.coalesce(table.c.duplicate_of, table.c.key)
    statement = sa.select(head, table.c.key, table.c.inserted).order_by(
        head, sa.desc(table.c.inserted), table.c.key
    )
    for cluster, key, _inserted in _stream(scope, statement):
        yield cluster, key


def recorded_duplicate_of(scope: Scope, key: str) -> str | None:
    """The key that ``key``'s decision names as its match, as recorded (None: kept, or unknown),
    even when that key has since been removed or purged."""
    with scope.connections.reading() as conn:
        found: str | None = conn.execute(
            sa.select(decisions.c.duplicate_of).where(
                decisions.c.ns_id == scope.ns_id, decisions.c.key == key
            )
        ).scalar()
    return found
