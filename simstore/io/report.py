"""``simstore report``: what a namespace decided, gathered with bounded memory for one HTML page.

``gather`` reads a namespace with SQL aggregates and bounded samples only (counts per day, score
and distance histograms per measure, the biggest clusters, the decisions nearest the policy's
thresholds), never the namespace itself, on every dialect; the queries are
``simstore.storage.audit``'s. ``simstore.io._report_html`` renders the result as one
self-contained page: inline CSS and SVG, no script, nothing loaded from anywhere.

The store keeps the normalised text of short kept texts only, and never the text of a duplicate,
so the two sides of a decision can be shown only where they are known: a caller may pass
``texts``, the source records (a mapping, or a function given the keys it needs), and the page
says for each side what is and is not known.

Each refused pair says which option of the policy (or of the store: ``max_distance``, ``keep``)
would have merged it: the pair is judged again with that option changed, so the page never
names a change that the policy's other rules would still refuse.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

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
    NearMisses,
    Refused,
    Report,
    Texts,
    Threshold,
)
from simstore.io.outputs import check_paths, replaced
from simstore.policy.policies import Item, Policy
from simstore.results import Judged
from simstore.storage import audit, reads
from simstore.storage.db import redact
from simstore.storage.reads import KeptRow
from simstore.storage.retention import format_duration, parse_duration, utc_naive
from simstore.storage.scope import Scope
from simstore.text._algorithms import default_normalise
from simstore.validate import check_int

__all__ = [
    "DISTANCE_MEASURE",
    "MAX_SAMPLE",
    "NearMisses",
    "Report",
    "Texts",
    "gather",
    "merging_option",
    "render",
    "thresholds",
    "write",
    "write_page",
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
    scope: Scope,
    *,
    near_misses: NearMisses,
    since: str | timedelta | float | None = None,
    sample: int = 200,
    clusters: int = 10,
    texts: Texts | None = None,
    now: datetime | None = None,
) -> Report:
    """What the namespace decided (decided since ``now - since``, or ever), in bounded memory.

    :param scope: the open namespace (``SimStore.scope``).
    :param near_misses: a kept key's candidates as the policy judges them, nearest its bars
        first (``SimStore.near_misses``): the refused pairs come from it.
    :param since: only what was decided within this long before ``now``.
    :param sample: how many decisions nearest a threshold to show.
    :param clusters: how many of the biggest clusters to show.
    :param texts: the source texts by key (see ``Texts``), for the side-by-side views.
    :param now: the report's moment (default: now).
    """
    check_int("sample", sample, lowest=1, highest=MAX_SAMPLE)
    check_int("clusters", clusters, lowest=1, highest=MAX_SAMPLE)
    moment = utc_naive(now)
    start = _check_since(since, moment)
    source = _check_texts(texts)
    policy, radius = scope.policy, scope.max_distance
    scores, radii = thresholds(policy, radius)
    decided = audit.Decided(scope.ns_id, start)
    with scope.connections.reading() as conn:
        kept_rows, kept_with_text = decided.kept_rows(conn)
        days = tuple(Day(*day) for day in decided.per_day(conn))
        measures = _measures(decided.per_measure(conn))
        histograms = _histograms(decided, conn, measures, scores, radii)
        biggest = tuple(
            Cluster(row.key, row.size, row.added_at, row.last_at, row.text)
            for row in decided.clusters(conn, clusters)
        )
        nearest = _nearest(decided, conn, measures, scores, radii, sample)
        orphaned = decided.orphaned(conn)
        kept = audit.kept_texts(conn, scope.ns_id, [near.duplicate_of for near in nearest])
        probe = decided.recent_kept(conn, PROBED_KEPT)
    nearest = tuple(
        dataclasses.replace(
            near, kept_text=kept.get(near.duplicate_of), kept_row=near.duplicate_of in kept
        )
        for near in nearest
    )
    refused = _refused(scope, near_misses, probe, sample)
    if source is not None:
        # one request for every key the page needs (the source may be a file read once)
        wanted = frozenset(key for near in nearest for key in (near.key, near.duplicate_of))
        wanted |= {c.key for c in biggest if c.text is None and c.kept_at is not None}
        # a refused pair's texts where the store keeps none (long texts)
        wanted |= {r.key for r in refused if r.new_text is None}
        wanted |= {r.candidate for r in refused if r.kept_text is None}
        found = _source_texts(source, wanted) if wanted else {}
        compared = {key: compared_text(policy, text, radius) for key, text in found.items()}
        nearest = tuple(
            dataclasses.replace(
                near, source_kept=compared.get(near.duplicate_of), source_new=compared.get(near.key)
            )
            for near in nearest
        )
        # clusters whose kept text the store does not keep (long texts) get it from the source
        biggest = tuple(
            dataclasses.replace(c, text=compared[c.key])
            if c.key in compared and c.text is None
            else c
            for c in biggest
        )
        refused = tuple(
            dataclasses.replace(
                r, source_kept=compared.get(r.candidate), source_new=compared.get(r.key)
            )
            for r in refused
        )
    return Report(
        namespace=scope.namespace,
        database=redact(scope.connections.url),
        preset=scope.preset.label,
        policy=policy.describe(radius),
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


def _refused(
    scope: Scope, near_misses: NearMisses, keys: Sequence[str], sample: int
) -> tuple[Refused, ...]:
    """The refused candidate nearest its bar of each kept key, nearest first (a query each),
    with the texts the store keeps and the option that would have merged each."""
    found: list[tuple[float, str, Judged]] = []
    for key in keys:
        for judged in near_misses(key)[:1]:
            if not judged.matched:
                found.append((judged.margin, key, judged))
    found.sort(key=lambda entry: entry[:2])
    shown = found[: min(sample, 50)]
    with scope.connections.reading() as conn:
        rows = {
            key: reads.kept_row(conn, scope, key)
            for _, new, judged in shown
            for key in (new, judged.key)
        }
    out = []
    for _, key, judged in shown:
        new, old = rows[key], rows[judged.key]
        option = None if new is None or old is None else merging_option(scope, new, old, judged)
        measure = DISTANCE_MEASURE if judged.measure == "distance" else judged.measure
        out.append(
            Refused(
                key,
                judged.key,
                measure,
                judged.score,
                judged.threshold,
                judged.reason,
                judged.added_at,
                kept_text=None if old is None else old.item.text,
                new_text=None if new is None else new.item.text,
                merged_by=option,
            )
        )
    return tuple(out)


NO_OPTION = "no one change of an option found that merges it"
_STEPS = 3  # options changed one after another at the most (a look-alike's two count as one)
_PLACES = re.compile(r"look-alike: (\d+) replaced word")
# the policy's bars a refused score may lie under, in the order a report names them
_BARS = ("threshold", "long_threshold", "cjk_long_threshold", "prefilter")


def merging_option(scope: Scope, new: KeptRow, old: KeptRow, judged: Judged) -> str:
    """Which option, changed, would have merged kept ``new`` with its refused candidate ``old``
    (``judged``, the policy's verdict), as ``name=value (now value)``; ``NO_OPTION`` when no
    change found does.

    Each change is checked by judging the pair again with it (the policy's other rules may still
    refuse the pair: then the next change they ask for is added, a few at the most). A score
    under its bar lowers the bar to the score (two places, rounded down), a look-alike merges its
    identity swaps (``merge_identity_swaps``; under the rule that counts words, allows its
    replaced words and numbers that differ), a distance widens the radius, and a candidate
    outside the retention window asks for a longer ``keep``.
    """
    policy, radius, item, kept = scope.policy, scope.max_distance, new.item, old.as_kept()
    changes: list[str] = []
    if judged.reason == "outside the retention window":
        age = new.added_at - old.added_at
        longer = _longer_than(age)
        now = "none" if scope.keep is None else format_duration(scope.keep)
        changes.append(f"keep={format_duration(longer)} (now {now})")
        judged = policy.judge(item, kept, radius)
        if judged.matched:
            return " and ".join(changes)
    for _ in range(_STEPS):
        options = _options(policy, judged)
        distance = options.pop("max_distance", None)
        if not options and distance is None:
            break
        try:
            changed = dataclasses.replace(policy, **options) if options else policy  # type: ignore[type-var]
        except (InvalidInput, TypeError):
            break
        changes += [
            f"{name}={_shown(v)} (now {_shown(getattr(policy, name))})"
            for name, v in options.items()
        ]
        if distance is not None:
            changes.append(f"max_distance={distance} (now {radius})")
            radius = distance
        policy = changed
        judged = policy.judge(dataclasses.replace(item, radius=radius), kept, radius)
        if judged.matched:
            return " and ".join(changes)
    return NO_OPTION


def _options(policy: Policy, judged: Judged) -> dict[str, Any]:
    """The options that the reason ``judged`` gives asks to change (``max_distance``: the
    store's radius)."""
    reason = judged.reason
    if judged.measure == "distance":
        return {"max_distance": judged.distance} if judged.distance > judged.threshold else {}
    places = _PLACES.match(reason)
    if reason.startswith("look-alike") and places is None:
        # Chinese words other than nouns at more places than an edit holds: that many places
        words = reason.count(" (words)")
        if words and words == reason.count(" -> ") and getattr(policy, "cjk_replaced", None):
            return {"cjk_replaced": words}
        # the identity rule named what differs (a number, a name, ...): merging such swaps is
        # one option
        if getattr(policy, "merge_identity_swaps", True) is False:
            return {"merge_identity_swaps": True}
        return {}
    if places is not None:
        count = int(places.group(1))
        if reason.endswith("in the opening"):
            return _present(policy, {"max_opening_replaced": count})
        wanted: dict[str, Any] = {}
        allowed = getattr(policy, "max_replaced", None)
        if allowed is not None and count > allowed:
            wanted["max_replaced"] = count
        if "numbers differ" in reason:
            wanted["numbers_matter"] = False
        return _present(policy, wanted)
    if "under" in reason:
        lowered = math.floor(judged.score * 100) / 100
        for name in _BARS:
            if getattr(policy, name, None) == judged.threshold and lowered < judged.threshold:
                return {name: lowered}
    return {}


def _present(policy: Policy, options: dict[str, Any]) -> dict[str, Any]:
    """The options that the policy has (a policy's own subclass may lack some)."""
    return {name: value for name, value in options.items() if hasattr(policy, name)}


def _shown(value: object) -> str:
    return "true" if value is True else "false" if value is False else f"{value}"


def _longer_than(age: timedelta) -> timedelta:
    """The shortest whole number of days (of hours, under a day) longer than ``age``."""
    unit = timedelta(days=1) if age >= timedelta(days=1) else timedelta(hours=1)
    return unit * (age // unit + 1)


def render(report: Report) -> str:
    """The report as one self-contained HTML page (``simstore.io._report_html``)."""
    return page(report)


def write(
    scope: Scope,
    path: str | os.PathLike[str] | None = None,
    **options: Any,
) -> str:
    """Gather (``options`` as ``gather`` takes them: ``near_misses`` and the rest) and render;
    write the page to ``path`` too (refused when it is the store's database file; replaced
    whole, never left half-written)."""
    if path is not None:
        check_paths({"the report's path": path}, database=scope.connections.engine.url)
    html = render(gather(scope, **options))
    if path is not None:
        write_page(path, html)
    return html


def write_page(path: str | os.PathLike[str], html: str) -> None:
    """Write a page to ``path``, replaced whole, never left half-written (check the path with
    ``check_paths`` first)."""
    try:
        with replaced(path) as stream:
            stream.write(html)
    except (OSError, InvalidInput) as error:  # InvalidInput: no temporary file there
        raise InvalidInput(f"cannot write the report to {os.fspath(path)!r}: {error}") from error


def _measures(
    rows: Iterable[tuple[str | None, int, float | None, float | None]],
) -> tuple[Measure, ...]:
    found = [
        Measure(measure or DISTANCE_MEASURE, count, low, high) for measure, count, low, high in rows
    ]
    return tuple(sorted(found, key=lambda m: (-m.duplicates, m.measure)))


def _histograms(
    decided: audit.Decided,
    conn: Connection,
    measures: Iterable[Measure],
    scores: Mapping[str, tuple[Threshold, ...]],
    radii: tuple[Threshold, ...],
) -> tuple[Histogram, ...]:
    by_score: dict[str, dict[int, int]] = {}
    for measure, value, count in decided.score_bins(conn, SCORE_BINS):
        bins = by_score.setdefault(measure or DISTANCE_MEASURE, {})
        # bin SCORE_BINS holds the scores of exactly 1.0 (exact copies), drawn apart
        index = min(max(value, 0), SCORE_BINS)
        bins[index] = bins.get(index, 0) + count
    by_distance: dict[str, dict[int, int]] = {}
    for measure, distance, count in decided.distances(conn):
        by_distance.setdefault(measure or DISTANCE_MEASURE, {})[distance] = count
    out: list[Histogram] = []
    for shown in measures:
        name = shown.measure
        if name in by_score:
            out.append(Histogram(name, "score", by_score[name], scores.get(name, ())))
        if name in by_distance:
            # the radii decide only what the distance decided (and, under simhash-verified,
            # bound the short texts' candidates); band keys find the minhash policy's
            drawn = radii if name == DISTANCE_MEASURE or not _by_bands(scores) else ()
            out.append(Histogram(name, "distance", by_distance[name], drawn))
    return tuple(out)


def _nearest(
    decided: audit.Decided,
    conn: Connection,
    measures: Iterable[Measure],
    scores: Mapping[str, tuple[Threshold, ...]],
    radii: tuple[Threshold, ...],
    sample: int,
) -> tuple[Near, ...]:
    """The ``sample`` duplicates nearest a threshold, nearest first (at most ``sample`` rows read
    per threshold: a top-N sort in the database)."""
    found: dict[str, Near] = {}
    for measure in measures:
        name = measure.measure
        if name == DISTANCE_MEASURE:
            if not radii:
                continue
            radius = max(radii, key=lambda threshold: threshold.value)
            for row in decided.farthest(conn, sample):
                margin = radius.value - (row.distance or 0)
                # in bits; a bit of 64 weighs like a score step of 1/64 in the ranking
                _keep_nearest(found, row, radius, margin, margin / 64)
            continue
        for threshold in scores.get(name, ()):
            for row in decided.nearest(conn, name, threshold.value, sample):
                margin = (row.score or 0.0) - threshold.value
                _keep_nearest(found, row, threshold, margin, margin)
    ranked = sorted(found.values(), key=lambda near: (abs(_rank(near)), near.key))
    return tuple(ranked[:sample])


def _by_bands(scores: Mapping[str, tuple[Threshold, ...]]) -> bool:
    """Whether candidates come from MinHash band keys (the minhash policy), not a radius."""
    return "minhash" in scores


def _rank(near: Near) -> float:
    return near.margin / 64 if near.measure == DISTANCE_MEASURE else near.margin


def _keep_nearest(
    found: dict[str, Near], row: audit.Sampled, threshold: Threshold, margin: float, rank: float
) -> None:
    """Record a row against ``threshold``, unless it lies nearer another threshold already."""
    earlier = found.get(row.key)
    if earlier is not None and abs(_rank(earlier)) <= abs(rank):
        return
    found[row.key] = Near(
        key=row.key,
        duplicate_of=row.duplicate_of,
        decided_at=row.decided_at,
        distance=row.distance,
        measure=row.measure or DISTANCE_MEASURE,
        score=row.score,
        threshold=threshold,
        margin=margin,
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
