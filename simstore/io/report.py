"""``simstore report``: what a namespace decided, gathered with bounded memory for one HTML page.

``gather`` reads a namespace with SQL aggregates and bounded samples only (counts per day, score
and distance histograms per measure, the biggest clusters, the decisions nearest the policy's
thresholds), never the namespace itself, on every dialect. ``simstore.io._report_html`` renders the
result as one self-contained page: inline CSS and SVG, no script, nothing loaded from anywhere.

The store keeps the normalised text of short kept texts only, and never the text of a duplicate,
so the two sides of a decision can be shown only where they are known: a caller may pass
``texts``, the source records (a mapping, or a function given the keys it needs), and the page
says for each side what is and is not known.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from simstore.errors import InvalidInput, InvalidType
from simstore.io._report_html import page
from simstore.io._report_model import (
    DISTANCE_MEASURE,
    MAX_SAMPLE,
    SCORE_BINS,
    Cluster,
    Day,
    Histogram,
    Measure,
    Near,
    Refused,
    Report,
    Texts,
    Threshold,
)
from simstore.io.outputs import check_paths, replaced
from simstore.policy.policies import Item, Policy
from simstore.results import Judged
from simstore.storage.db import redact
from simstore.storage.retention import parse_duration, utc_naive
from simstore.storage.schema import decision_log, decisions, fingerprints, kept_text_of
from simstore.text._algorithms import default_normalise
from simstore.validate import check_int

if TYPE_CHECKING:
    from simstore.store import SimStore

__all__ = [
    "DISTANCE_MEASURE",
    "MAX_SAMPLE",
    "Report",
    "Texts",
    "gather",
    "render",
    "thresholds",
    "write",
]


def thresholds(
    policy: Policy, max_distance: int
) -> tuple[dict[str, tuple[Threshold, ...]], tuple[Threshold, ...]]:
    """The policy's score thresholds per measure, and its SimHash radii (for distance alone)."""
    scores, radii = policy.thresholds(max_distance)
    return (
        {measure: tuple(Threshold(*line) for line in lines) for measure, lines in scores.items()},
        tuple(Threshold(*line) for line in radii),
    )


def _check_since(since: str | timedelta | float | None, now: datetime) -> datetime | None:
    if since is None:
        return None
    return now - parse_duration(since)


def _check_texts(texts: object) -> Texts | None:
    if texts is None or isinstance(texts, Mapping) or callable(texts):
        return texts
    raise InvalidType(f"texts must be a mapping or a function of keys, not {type(texts).__name__}")


def gather(
    store: SimStore,
    *,
    since: str | timedelta | float | None = None,
    sample: int = 200,
    clusters: int = 10,
    texts: Texts | None = None,
    now: datetime | None = None,
) -> Report:
    """What the namespace decided (decided since ``now - since``, or ever), in bounded memory.

    ``sample`` is how many decisions nearest a threshold to show, ``clusters`` how many of the
    biggest clusters; ``texts`` the source texts by key (see ``Texts``), for the side-by-side view.
    """
    check_int("sample", sample, lowest=1, highest=MAX_SAMPLE)
    check_int("clusters", clusters, lowest=1, highest=MAX_SAMPLE)
    moment = utc_naive(now)
    start = _check_since(since, moment)
    source = _check_texts(texts)
    scores, radii = thresholds(store.policy, store.max_distance)
    reader = _Reader(store.ns_id, start)
    with store.connections.reading() as conn:
        kept_rows, kept_with_text = reader.kept_rows(conn)
        days = reader.days(conn)
        measures = reader.measures(conn)
        histograms = reader.histograms(conn, measures, scores, radii)
        biggest = reader.clusters(conn, clusters)
        nearest = reader.nearest(conn, measures, scores, radii, sample)
        orphaned = reader.orphaned(conn)
        nearest = _with_kept_texts(conn, store.ns_id, nearest)
        probe = reader.recent_kept(conn, PROBED_KEPT)
    refused = _refused(store, probe, sample)
    if source is not None:
        # one request for every key the page needs (the source may be a file read once)
        wanted = frozenset(key for near in nearest for key in (near.key, near.duplicate_of))
        wanted |= {c.key for c in biggest if c.text is None and c.kept_at is not None}
        found = _source_texts(source, wanted) if wanted else {}
        nearest = _with_source(nearest, found, store.policy, store.max_distance)
        biggest = _clusters_with_source(biggest, found, store.policy, store.max_distance)
    return Report(
        namespace=store.namespace,
        database=redact(store.url),
        preset=store.preset.label,
        policy=store.policy.describe(store.max_distance),
        generated_at=moment,
        since=start,
        kept_rows=kept_rows,
        kept_with_text=kept_with_text,
        decisions=sum(day.kept + day.duplicates for day in days),
        kept=sum(day.kept for day in days),
        duplicates=sum(day.duplicates for day in days),
        orphaned=orphaned,
        days=days,
        measures=measures,
        histograms=histograms,
        clusters=biggest,
        nearest=nearest,
        sample=sample,
        texts_given=source is not None,
        refused=refused,
        probed=len(probe),
    )


PROBED_KEPT = 200
"""Kept texts (the latest) whose nearest refused candidates the report looks for."""


def _refused(store: SimStore, keys: Sequence[str], sample: int) -> tuple[Refused, ...]:
    """The refused candidate nearest its bar of each kept key, nearest first (a query each)."""
    found: list[tuple[float, str, Refused]] = []
    for key in keys:
        for judged in store.near_misses(key, limit=1):
            if not judged.matched:
                found.append((judged.margin, key, _as_refused(key, judged)))
    found.sort(key=lambda entry: entry[:2])
    shown = [refused for _, _, refused in found[: min(sample, 50)]]
    texts = {key: store.kept_text(key) for r in shown for key in (r.key, r.candidate)}
    return tuple(
        dataclasses.replace(r, kept_text=texts[r.candidate], new_text=texts[r.key]) for r in shown
    )


def _as_refused(key: str, judged: Judged) -> Refused:
    measure = DISTANCE_MEASURE if judged.measure == "distance" else judged.measure
    return Refused(
        key, judged.key, measure, judged.score, judged.threshold, judged.reason, judged.added_at
    )


def render(report: Report) -> str:
    """The report as one self-contained HTML page (``simstore.io._report_html``)."""
    return page(report)


def write(
    store: SimStore,
    path: str | os.PathLike[str] | None = None,
    **options: Any,
) -> str:
    """Gather (``options`` as ``gather`` takes them) and render; write the page to ``path`` too
    (refused when it is the store's database file; replaced whole, never left half-written)."""
    if path is not None:
        check_paths({"the report's path": path}, database=store.engine.url)
    html = render(gather(store, **options))
    if path is not None:
        try:
            with replaced(path) as stream:
                stream.write(html)
        except (OSError, InvalidInput) as error:  # InvalidInput: no temporary file there
            raise InvalidInput(
                f"cannot write the report to {os.fspath(path)!r}: {error}"
            ) from error
    return html


def _day(value: object) -> str:
    """``date(decided_at)`` as the dialect returns it (text on SQLite, a date elsewhere)."""
    if isinstance(value, (date, datetime)):
        return f"{value:%Y-%m-%d}"
    return str(value)[:10]


def _score_bin(conn: Connection, score: Any) -> Any:
    """floor(score * SCORE_BINS) (SQLite may lack floor(): a cast truncates non-negative values;
    the other dialects' casts round, so they use floor)."""
    scaled = score * SCORE_BINS + 1e-9  # 0.57 * 100 is 56.99999999999999
    if conn.dialect.name == "sqlite":
        return sa.cast(scaled, sa.Integer)
    return sa.func.floor(scaled)


@dataclass(frozen=True)
class _Reader:
    """The report's queries over one namespace's decisions (decided at or after ``start``)."""

    ns_id: int
    start: datetime | None

    def _decided(self) -> list[Any]:
        where = [decisions.c.ns_id == self.ns_id]
        if self.start is not None:
            where.append(decisions.c.decided_at >= self.start)
        return where

    def _duplicates(self) -> list[Any]:
        return [*self._decided(), decisions.c.duplicate_of.is_not(None)]

    def kept_rows(self, conn: Connection) -> tuple[int, int]:
        where = [fingerprints.c.ns_id == self.ns_id]
        if self.start is not None:
            where.append(fingerprints.c.added_at >= self.start)
        rows, with_text = conn.execute(
            sa.select(
                sa.func.count(),
                # a row has its text in one of the two columns, or none
                sa.func.count(fingerprints.c.packed_text) + sa.func.count(fingerprints.c.text),
            ).where(*where)
        ).one()
        return int(rows), int(with_text)

    def recent_kept(self, conn: Connection, most: int) -> list[str]:
        """The keys of the latest ``most`` kept rows (added since ``start``)."""
        where = [fingerprints.c.ns_id == self.ns_id]
        if self.start is not None:
            where.append(fingerprints.c.added_at >= self.start)
        statement = (
            sa.select(fingerprints.c.key)
            .where(*where)
            .order_by(fingerprints.c.id.desc())
            .limit(most)
        )
        return [str(key) for key in conn.execute(statement).scalars()]

    def days(self, conn: Connection) -> tuple[Day, ...]:
        log = decision_log(self.ns_id)  # the kept rows stand for their decisions
        day = sa.func.date(log.c.decided_at)
        duplicate = sa.case((log.c.duplicate_of.is_not(None), 1), else_=0)
        since = [] if self.start is None else [log.c.decided_at >= self.start]
        rows = conn.execute(
            sa.select(day, sa.func.count(), sa.func.sum(duplicate))
            .where(*since)
            .group_by(day)
            .order_by(day)
        ).all()
        return tuple(
            Day(_day(value), int(count) - int(dups or 0), int(dups or 0))
            for value, count, dups in rows
        )

    def measures(self, conn: Connection) -> tuple[Measure, ...]:
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
        found = [
            Measure(
                measure or DISTANCE_MEASURE,
                int(count),
                None if low is None else float(low),
                None if high is None else float(high),
            )
            for measure, count, low, high in rows
        ]
        return tuple(sorted(found, key=lambda m: (-m.duplicates, m.measure)))

    def histograms(
        self,
        conn: Connection,
        measures: Iterable[Measure],
        scores: Mapping[str, tuple[Threshold, ...]],
        radii: tuple[Threshold, ...],
    ) -> tuple[Histogram, ...]:
        by_score: dict[str, dict[int, int]] = {}
        score_bin = _score_bin(conn, decisions.c.score)
        for measure, value, count in conn.execute(
            sa.select(decisions.c.measure, score_bin, sa.func.count())
            .where(*self._duplicates(), decisions.c.score.is_not(None))
            .group_by(decisions.c.measure, score_bin)
        ):
            bins = by_score.setdefault(measure or DISTANCE_MEASURE, {})
            # bin SCORE_BINS holds the scores of exactly 1.0 (exact copies), drawn apart
            index = min(max(int(value), 0), SCORE_BINS)
            bins[index] = bins.get(index, 0) + int(count)
        by_distance: dict[str, dict[int, int]] = {}
        for measure, distance, count in conn.execute(
            sa.select(decisions.c.measure, decisions.c.distance, sa.func.count())
            .where(*self._duplicates(), decisions.c.distance.is_not(None))
            .group_by(decisions.c.measure, decisions.c.distance)
        ):
            by_distance.setdefault(measure or DISTANCE_MEASURE, {})[int(distance)] = int(count)
        out: list[Histogram] = []
        for measure in measures:
            name = measure.measure
            if name in by_score:
                out.append(Histogram(name, "score", by_score[name], scores.get(name, ())))
            if name in by_distance:
                # the radii decide only what the distance decided (and, under simhash-verified,
                # bound the short texts' candidates); band keys find the minhash policy's
                drawn = radii if name == DISTANCE_MEASURE or not _by_bands(scores) else ()
                out.append(Histogram(name, "distance", by_distance[name], drawn))
        return tuple(out)

    def clusters(self, conn: Connection, limit: int) -> tuple[Cluster, ...]:
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
        return tuple(
            Cluster(key, int(count), added_at, last_at, kept_text_of(text, packed))
            for key, count, last_at, added_at, text, packed in rows
        )

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

    def nearest(
        self,
        conn: Connection,
        measures: Iterable[Measure],
        scores: Mapping[str, tuple[Threshold, ...]],
        radii: tuple[Threshold, ...],
        sample: int,
    ) -> tuple[Near, ...]:
        """The ``sample`` duplicates nearest a threshold, nearest first (at most ``sample``
        rows read per threshold: a top-N sort in the database)."""
        columns = (
            decisions.c.key,
            decisions.c.duplicate_of,
            decisions.c.decided_at,
            decisions.c.distance,
            decisions.c.measure,
            decisions.c.score,
        )
        found: dict[str, Near] = {}
        for measure in measures:
            name = measure.measure
            if name == DISTANCE_MEASURE:
                if not radii:
                    continue
                radius = max(radii, key=lambda threshold: threshold.value)
                statement = (
                    sa.select(*columns)
                    .where(*self._duplicates(), decisions.c.measure.is_(None))
                    .order_by(decisions.c.distance.desc(), decisions.c.key)
                    .limit(sample)
                )
                for row in conn.execute(statement):
                    margin = radius.value - (row.distance or 0)
                    # in bits; a bit of 64 weighs like a score step of 1/64 in the ranking
                    _keep_nearest(found, row, radius, margin, margin / 64)
                continue
            for threshold in scores.get(name, ()):
                statement = (
                    sa.select(*columns)
                    .where(*self._duplicates(), decisions.c.measure == name)
                    .order_by(sa.func.abs(decisions.c.score - threshold.value), decisions.c.key)
                    .limit(sample)
                )
                for row in conn.execute(statement):
                    margin = float(row.score) - threshold.value
                    _keep_nearest(found, row, threshold, margin, margin)
        ranked = sorted(found.values(), key=lambda near: (abs(_rank(near)), near.key))
        return tuple(ranked[:sample])


def _by_bands(scores: Mapping[str, tuple[Threshold, ...]]) -> bool:
    """Whether candidates come from MinHash band keys (the minhash policy), not a radius."""
    return "minhash" in scores


def _rank(near: Near) -> float:
    return near.margin / 64 if near.measure == DISTANCE_MEASURE else near.margin


def _keep_nearest(
    found: dict[str, Near], row: Any, threshold: Threshold, margin: float, rank: float
) -> None:
    """Record a row against ``threshold``, unless it lies nearer another threshold already."""
    earlier = found.get(row.key)
    if earlier is not None and abs(_rank(earlier)) <= abs(rank):
        return
    found[row.key] = Near(
        key=row.key,
        duplicate_of=row.duplicate_of,
        decided_at=row.decided_at,
        distance=None if row.distance is None else int(row.distance),
        measure=row.measure or DISTANCE_MEASURE,
        score=None if row.score is None else float(row.score),
        threshold=threshold,
        margin=margin,
    )


def _with_kept_texts(conn: Connection, ns_id: int, nearest: tuple[Near, ...]) -> tuple[Near, ...]:
    """The sampled pairs with the normalised texts kept for their kept keys (one query per
    chunk of keys)."""
    import dataclasses

    from simstore.storage._finder import chunks

    wanted = sorted({near.duplicate_of for near in nearest})
    kept: dict[str, str | None] = {}
    for chunk in chunks(wanted, 500):
        for key, text, packed in conn.execute(
            sa.select(fingerprints.c.key, fingerprints.c.text, fingerprints.c.packed_text).where(
                fingerprints.c.ns_id == ns_id, fingerprints.c.key.in_(chunk)
            )
        ):
            kept[key] = kept_text_of(text, packed)
    return tuple(
        dataclasses.replace(
            near, kept_text=kept.get(near.duplicate_of), kept_row=near.duplicate_of in kept
        )
        for near in nearest
    )


def compared_text(policy: Policy, text: str, max_distance: int) -> str:
    """A source text as the policy compares it (its normalised form)."""
    item = Item("report", 0, None, max_distance)
    policy.plan(item, text, max_distance)
    return item.normalised or item.text or default_normalise(text)


def _source_texts(texts: Texts, wanted: frozenset[str]) -> dict[str, str]:
    found = texts(wanted) if callable(texts) else {k: texts[k] for k in wanted if k in texts}
    for key, text in found.items():
        if not isinstance(text, str):
            raise InvalidType(f"the source text of {key!r} is {type(text).__name__}, not str")
    return dict(found)


def _clusters_with_source(
    clusters: tuple[Cluster, ...], found: Mapping[str, str], policy: Policy, max_distance: int
) -> tuple[Cluster, ...]:
    """Clusters whose kept text the store does not keep (long texts) get it from the source."""
    return tuple(
        dataclasses.replace(c, text=compared_text(policy, found[c.key], max_distance))
        if c.key in found and c.text is None
        else c
        for c in clusters
    )


def _with_source(
    nearest: tuple[Near, ...], found: Mapping[str, str], policy: Policy, max_distance: int
) -> tuple[Near, ...]:
    def compared(key: str) -> str | None:
        text = found.get(key)
        return None if text is None else compared_text(policy, text, max_distance)

    return tuple(
        dataclasses.replace(
            near, source_kept=compared(near.duplicate_of), source_new=compared(near.key)
        )
        for near in nearest
    )
