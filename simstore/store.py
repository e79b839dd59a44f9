"""SimStore: remember fingerprints durably and answer "have I seen something almost identical?".

One row per kept fingerprint (full value as a signed BIGINT plus four indexed 16-bit bands). A
query unions band-equality lookups (``simstore.probes``) and computes Hamming distances in Python.
Adds are check-then-insert under the locks of ``simstore.locking``, so two near-duplicates added at
the same moment leave exactly one kept. Every add is logged in ``simstore_decisions``.

Near-empty texts: a text with fewer than ``min_features`` features (see ``simstore.analyze``) only
matches fingerprints at distance 0, i.e. (barring hash collisions) the same normalised content.
Without that rule all short texts would sit a few bits apart and match each other by accident.
"""

from __future__ import annotations

import contextlib
import logging
from collections import namedtuple
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.engine import URL, Connection, Engine

from simstore import _prepared as prepared
from simstore import migrate
from simstore._match import EXACT_BAND_RADIUS, near_pairs
from simstore._version import __version__
from simstore.db import redact, resolve_bind, translate_errors
from simstore.encoding import bands, check_fingerprint, from_signed, to_hex, to_signed
from simstore.errors import (
    InvalidInput,
    InvalidType,
    KeyConflict,
    PresetMismatch,
    SchemaOutOfDate,
    SimstoreError,
)
from simstore.fingerprint import analyze_many
from simstore.locking import BAND_LOCK_MAX_RADIUS, lock_for_write
from simstore.presets import Preset, get_preset
from simstore.probes import MAX_RADIUS, band_values
from simstore.retention import parse_duration, partition_of, utc_naive, window_start
from simstore.schema import BAND_COLUMNS, decisions, fingerprints, namespaces

log = logging.getLogger("simstore")

MAX_KEY_LENGTH = 255
MAX_NAMESPACE_LENGTH = 255
BAND_LAYOUT = "4x16"
PURGE_BATCH_ROWS = 10_000
ANALYZE_BATCH_ROWS = 1_000  # add_many batches at least this big may refresh PostgreSQL statistics


@dataclass(frozen=True)
class Match:
    """A kept fingerprint near the one asked about."""

    key: str
    fingerprint: int
    distance: int
    added_at: datetime

    @property
    def hex(self) -> str:
        return to_hex(self.fingerprint)


@dataclass(frozen=True)
class Decision:
    """The outcome of one add: kept (``inserted``) or a near-duplicate of ``duplicate_of``."""

    key: str
    fingerprint: int
    inserted: bool
    duplicate_of: Match | None = None
    matches: tuple[Match, ...] = field(default=())

    @property
    def hex(self) -> str:
        return to_hex(self.fingerprint)


@dataclass(frozen=True)
class Stats:
    """What a namespace holds."""

    namespace: str
    preset: str
    kept: int
    decisions: int
    duplicates: int
    oldest: datetime | None
    newest: datetime | None
    partitions: int


class BatchFailed(SimstoreError):
    """A batch of ``add_many`` failed and was not written; ``committed`` items before it were."""

    def __init__(self, message: str, committed: int) -> None:
        super().__init__(message)
        self.committed = committed


@dataclass
class _Item:
    key: str
    fingerprint: int
    features: int | None


# a simstore_decisions row as the driver returns it (columns in table order)
_DecisionRow = namedtuple("_DecisionRow", [column.name for column in decisions.c])  # type: ignore[misc]


class _BandIndex:
    """In-memory band -> positions index, for matching candidates against many probes at once."""

    def __init__(self) -> None:
        self._bands: list[dict[int, list[int]]] = [{} for _ in BAND_COLUMNS]

    def add(self, position: int, fingerprint: int) -> None:
        for band, value in enumerate(bands(fingerprint)):
            self._bands[band].setdefault(value, []).append(position)

    def lookup(self, probe: Mapping[int, Iterable[int]]) -> set[int]:
        found: set[int] = set()
        for band, values in probe.items():
            table = self._bands[band]
            for value in values:
                found.update(table.get(value, ()))
        return found


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


def _chunks(values: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for first in range(0, len(values), size):
        yield values[first : first + size]


def _padded_params(prefix: str, values: Sequence[Any]) -> dict[str, Any]:
    """Bind values for an IN list padded (by repeating the last value) to a power-of-two size."""
    size = prepared.padded(len(values))
    return {f"{prefix}{j}": values[min(j, len(values) - 1)] for j in range(size)}


def _check_key(key: object) -> str:
    if not isinstance(key, str):
        raise InvalidType(f"key must be a str, not {type(key).__name__}")
    if not key or len(key) > MAX_KEY_LENGTH:
        raise InvalidInput(f"key must have 1 to {MAX_KEY_LENGTH} characters, got {len(key)}")
    if "\x00" in key:
        raise InvalidInput("key must not contain NUL characters")
    return key


def _check_radius(radius: object) -> int:
    if isinstance(radius, bool) or not isinstance(radius, int):
        raise InvalidType(f"max_distance must be an int, not {type(radius).__name__}")
    if not 0 <= radius <= MAX_RADIUS:
        raise InvalidInput(f"max_distance must lie in 0..{MAX_RADIUS}, got {radius}")
    return radius


class SimStore:
    """Near-duplicate memory in a SQL database.

    ``bind`` is a URL, an Engine or a Connection (simstore never makes a second engine when given
    one and never commits a caller's transaction: it works inside it with savepoints).
    ``preset`` None adopts the namespace's recorded preset (``default`` for a new namespace).
    ``keep`` is the retention window (``"2d"``, a timedelta or seconds; None keeps everything).
    ``auto_upgrade`` None upgrades SQLite databases on open and asks servers to be upgraded with
    ``simstore db upgrade``; True or False forces either way.
    """

    def __init__(
        self,
        bind: str | Engine | Connection | Any,
        *,
        preset: str | Preset | None = None,
        namespace: str = "default",
        max_distance: int = 3,
        keep: str | timedelta | float | None = None,
        auto_upgrade: bool | None = None,
        partition: str | timedelta | float = "1h",
        min_features: int = 3,
    ) -> None:
        self._engine, self._connection = resolve_bind(bind)
        self._owns_engine = isinstance(bind, (str, URL))
        self.url = redact(self._bound_engine.url)
        if not isinstance(namespace, str):
            raise InvalidType(f"namespace must be a str, not {type(namespace).__name__}")
        if not namespace or len(namespace) > MAX_NAMESPACE_LENGTH or "\x00" in namespace:
            raise InvalidInput(f"namespace must have 1 to {MAX_NAMESPACE_LENGTH} characters")
        self.namespace = namespace
        self.max_distance = _check_radius(max_distance)
        self.keep = None if keep is None else parse_duration(keep)
        if isinstance(min_features, bool) or not isinstance(min_features, int) or min_features < 0:
            raise InvalidInput("min_features must be a non-negative int")
        self.min_features = min_features
        partition_length = parse_duration(partition)
        self._partition_seconds = max(int(partition_length.total_seconds()), 1)
        self._dialect = self._bound_engine.dialect.name
        self._prepare_schema(auto_upgrade)
        self.preset, self._ns_id = self._open_namespace(preset)

    # --- connection plumbing ----------------------------------------------------------------

    @property
    def _bound_engine(self) -> Engine:
        if self._connection is not None:
            return self._connection.engine
        assert self._engine is not None  # noqa: S101 - resolve_bind sets exactly one
        return self._engine

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """A transaction of simstore's own, or a savepoint inside the caller's."""
        with translate_errors(self._bound_engine.url):
            if self._connection is not None:
                conn = self._connection
                if conn.in_transaction() and self._dialect == "sqlite":
                    _start_pysqlite_transaction(conn)
                scope = conn.begin_nested() if conn.in_transaction() else conn.begin()
                with scope:
                    yield conn
                return
            assert self._engine is not None  # noqa: S101
            with self._engine.connect() as conn:
                if self._dialect != "sqlite":
                    # the check after the lock must see rows committed while we waited
                    conn = conn.execution_options(isolation_level="READ COMMITTED")
                with conn.begin():
                    yield conn

    @contextlib.contextmanager
    def _reading(self) -> Iterator[Connection]:
        with self._transaction() as conn:
            yield conn

    def close(self) -> None:
        """Release the engine simstore made for a URL (a caller's engine is left alone)."""
        if self._owns_engine and self._engine is not None:
            self._engine.dispose()

    def __enter__(self) -> SimStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- opening -------------------------------------------------------------------------------

    def _prepare_schema(self, auto_upgrade: bool | None) -> None:
        target = self._connection if self._connection is not None else self._engine
        upgrade = self._dialect == "sqlite" if auto_upgrade is None else auto_upgrade
        try:
            migrate.check(target)
        except SchemaOutOfDate:
            if not upgrade:
                raise
            log.info("upgrading simstore schema in %s", self.url)
            migrate.upgrade(target)

    def _open_namespace(self, wanted: str | Preset | None) -> tuple[Preset, int]:
        requested = None if wanted is None else get_preset(wanted)
        for _attempt in range(3):
            with self._transaction() as conn:
                row = conn.execute(
                    sa.select(namespaces).where(namespaces.c.name == self.namespace)
                ).first()
            if row is not None:
                return self._adopt(row, requested), int(row.id)
            chosen = requested or get_preset("default")
            try:
                with self._transaction() as conn:
                    conn.execute(
                        sa.insert(namespaces).values(
                            name=self.namespace,
                            preset_name=chosen.name,
                            preset_version=chosen.version,
                            preset_params=chosen.params_json(),
                            band_layout=BAND_LAYOUT,
                            partition_seconds=self._partition_seconds,
                            created_with=__version__,
                            created_at=utc_naive(None),
                        )
                    )
            except exc.IntegrityError:
                continue  # another process created it first: read theirs
        raise SimstoreError(f"could not open namespace {self.namespace!r}")  # pragma: no cover

    def _adopt(self, row: Any, requested: Preset | None) -> Preset:
        recorded = f"{row.preset_name}@{row.preset_version} {row.preset_params}"
        self._partition_seconds = int(row.partition_seconds)
        if requested is None:
            try:
                base = get_preset(row.preset_name)
            except SimstoreError as error:
                raise PresetMismatch(
                    f"namespace {self.namespace!r} uses preset {recorded}, unknown to simstore "
                    f"{__version__}"
                ) from error
            requested = base
            if base.params_json() != row.preset_params:
                import json

                requested = base.with_params(**json.loads(row.preset_params))
        mine = f"{requested.name}@{requested.version} {requested.params_json()}"
        if mine != recorded:
            raise PresetMismatch(
                f"namespace {self.namespace!r} in {self.url} was made with preset {recorded}; "
                f"refusing fingerprints made with {mine}"
            )
        if row.band_layout != BAND_LAYOUT:
            raise SchemaOutOfDate(f"namespace uses band layout {row.band_layout}")
        return requested

    # --- inputs ------------------------------------------------------------------------------

    def _item(self, key: object, text: object, fingerprint: object) -> _Item:
        checked_key = _check_key(key)
        if (text is None) == (fingerprint is None):
            raise InvalidInput(f"give exactly one of text and fingerprint (key {checked_key!r})")
        if fingerprint is not None:
            return _Item(checked_key, check_fingerprint(fingerprint), None)
        result = analyze_many([text], preset=self.preset)[0]  # type: ignore[list-item]
        return _Item(checked_key, result.fingerprint, result.features)

    def _radius_for(self, item: _Item, max_distance: int | None) -> int:
        radius = self.max_distance if max_distance is None else _check_radius(max_distance)
        if item.features is not None and item.features < self.min_features:
            return 0
        return radius

    def _now(self, at: datetime | None) -> datetime:
        return utc_naive(at)

    # --- candidates ----------------------------------------------------------------------------

    def _candidates(
        self, conn: Connection, wanted: Sequence[tuple[int, int]], now: datetime
    ) -> dict[int, int]:
        """Rows (id -> unsigned fingerprint) having one of the (band, value) pairs ``wanted``."""
        per_band: dict[int, set[int]] = {}
        for band, value in wanted:
            per_band.setdefault(band, set()).add(value)
        start = window_start(now, self.keep)
        params: dict[str, Any] = {"ns": self._ns_id}
        if start is not None:
            params["cutoff"] = partition_of(start, self._partition_seconds)
        lists = [
            (band, chunk)
            for band, values in sorted(per_band.items())
            for chunk in _chunks(sorted(values), prepared.MAX_IN)
        ]
        found: dict[int, int] = {}
        for first in range(0, len(lists), prepared.MAX_SELECTS):
            group = lists[first : first + prepared.MAX_SELECTS]
            values = dict(params)
            for i, (_band, chunk) in enumerate(group):
                values.update(_padded_params(f"v{i}_", chunk))
            shape = tuple((band, prepared.padded(len(chunk))) for band, chunk in group)
            statement = prepared.candidate_lookup(conn.dialect, shape, start is not None)
            for row in statement.run(conn, values):
                found[int(row[0])] = from_signed(int(row[1]))
        return found

    def _details(
        self, conn: Connection, near: dict[int, int], fingerprint: int, now: datetime
    ) -> list[Match]:
        """Key and time of the rows that passed the distance filter; drops rows out of window."""
        start = window_start(now, self.keep)
        found = [
            Match(key, near[row_id], (near[row_id] ^ fingerprint).bit_count(), added_at)
            for row_id, (key, added_at) in self._row_details(conn, set(near)).items()
            if start is None or added_at >= start
        ]
        found.sort(key=lambda match: (match.distance, match.added_at, match.key))
        return found

    def _search(
        self, conn: Connection, fingerprint: int, radius: int, now: datetime
    ) -> list[Match]:
        wanted = [
            (band, value)
            for band, values in band_values(fingerprint, radius).items()
            for value in values
        ]
        rows = self._candidates(conn, wanted, now)
        near = {
            row_id: value
            for row_id, value in rows.items()
            if (value ^ fingerprint).bit_count() <= radius
        }
        return self._details(conn, near, fingerprint, now)

    # --- public API: query ----------------------------------------------------------------------

    def query(
        self,
        text: str | None = None,
        *,
        fingerprint: int | None = None,
        max_distance: int | None = None,
        limit: int | None = None,
        now: datetime | None = None,
    ) -> list[Match]:
        """Kept fingerprints within ``max_distance`` of a text or fingerprint, nearest first."""
        item = self._item("query", text, fingerprint)
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise InvalidInput(f"limit must be a positive int, got {limit!r}")
        radius = self._radius_for(item, max_distance)
        with self._reading() as conn:
            matches = self._search(conn, item.fingerprint, radius, self._now(now))
        return matches[:limit] if limit else matches

    # --- public API: add --------------------------------------------------------------------------

    def add(
        self,
        text: str | None = None,
        *,
        key: str,
        fingerprint: int | None = None,
        at: datetime | None = None,
        max_distance: int | None = None,
    ) -> Decision:
        """Check and insert in one atomic step: kept, or a near-duplicate of an earlier key."""
        item = self._item(key, text, fingerprint)
        radius = self._radius_for(item, max_distance)
        moment = self._now(at)
        for _attempt in range(5):
            try:
                with self._transaction() as conn:
                    probe = None
                    if radius <= BAND_LOCK_MAX_RADIUS:
                        probe = [
                            (band, value)
                            for band, values in band_values(item.fingerprint, radius).items()
                            for value in values
                        ]
                    lock_for_write(conn, self._ns_id, probe)
                    return self._decide(conn, [(item, radius, moment)])[0]
            except exc.IntegrityError:
                # the same key raced in from elsewhere: the retry finds its decision
                log.debug("integrity error adding %r, retrying", item.key)
        raise SimstoreError(f"could not add key {item.key!r}")  # pragma: no cover

    def _earlier(self, conn: Connection, key: str) -> Any:
        return self._decisions_of(conn, [key]).get(key)

    def _replay(self, conn: Connection, row: Any, item: _Item) -> Decision:
        stored = from_signed(int(row.fp))
        if stored != item.fingerprint:
            raise KeyConflict(
                f"key {item.key!r} was added before with fingerprint {to_hex(stored)}, "
                f"now with {to_hex(item.fingerprint)}"
            )
        if row.inserted:
            return Decision(item.key, stored, True)
        kept = conn.execute(
            sa.select(fingerprints.c.fp, fingerprints.c.added_at).where(
                fingerprints.c.ns_id == self._ns_id, fingerprints.c.key == row.duplicate_of
            )
        ).first()
        match = None
        if kept is not None:
            value = from_signed(int(kept.fp))
            match = Match(row.duplicate_of, value, (value ^ stored).bit_count(), kept.added_at)
        return Decision(item.key, stored, False, match, (match,) if match else ())

    def _decide(
        self, conn: Connection, batch: Sequence[tuple[_Item, int, datetime]]
    ) -> list[Decision]:
        """Decide a batch in input order, under the caller's write lock, with few round trips.

        One query finds earlier decisions of the batch's keys, one UNION finds every stored
        candidate of every item, and kept items of the batch are indexed by band in memory, so an
        item also sees the items kept before it in the same batch. Rows are inserted at the end.
        """
        earlier = self._decisions_of(conn, [item.key for item, _radius, _moment in batch])
        probes = [band_values(item.fingerprint, radius) for item, radius, _moment in batch]
        wanted = {
            (band, value) for probe in probes for band, values in probe.items() for value in values
        }
        stored = self._candidates(conn, sorted(wanted), min(moment for _i, _r, moment in batch))
        near_ids = self._near_stored(batch, probes, stored)
        details = self._row_details(conn, set().union(*near_ids))

        kept_index = _BandIndex()
        kept: list[Match] = []
        decided: dict[str, Decision] = {}
        new_rows: list[dict[str, Any]] = []
        log_rows: list[dict[str, Any]] = []
        out: list[Decision] = []
        for (item, radius, moment), probe, ids in zip(batch, probes, near_ids, strict=True):
            if item.key in decided or item.key in earlier:
                prior = decided.get(item.key) or self._replay(conn, earlier[item.key], item)
                if prior.fingerprint != item.fingerprint:
                    raise KeyConflict(
                        f"key {item.key!r} appears twice with different fingerprints "
                        f"({to_hex(prior.fingerprint)} and {to_hex(item.fingerprint)})"
                    )
                out.append(prior)
                continue
            start = window_start(moment, self.keep)
            matches = [
                Match(
                    details[i][0],
                    stored[i],
                    (stored[i] ^ item.fingerprint).bit_count(),
                    details[i][1],
                )
                for i in ids
                if i in details and (start is None or details[i][1] >= start)
            ]
            for index in kept_index.lookup(probe):
                other = kept[index]
                distance = (other.fingerprint ^ item.fingerprint).bit_count()
                if distance <= radius and (start is None or other.added_at >= start):
                    matches.append(Match(other.key, other.fingerprint, distance, other.added_at))
            matches.sort(key=lambda match: (match.distance, match.added_at, match.key))
            part = partition_of(moment, self._partition_seconds)
            best = matches[0] if matches else None
            if best is None:
                kept_index.add(len(kept), item.fingerprint)
                kept.append(Match(item.key, item.fingerprint, 0, moment))
                new_rows.append(
                    {
                        "ns_id": self._ns_id,
                        "key": item.key,
                        "fp": to_signed(item.fingerprint),
                        **dict(zip(BAND_COLUMNS, bands(item.fingerprint), strict=True)),
                        "added_at": moment,
                        "part": part,
                    }
                )
            log_rows.append(
                {
                    "ns_id": self._ns_id,
                    "key": item.key,
                    "fp": to_signed(item.fingerprint),
                    "decided_at": moment,
                    "part": part,
                    "inserted": best is None,
                    "duplicate_of": None if best is None else best.key,
                    "distance": None if best is None else best.distance,
                }
            )
            decision = Decision(item.key, item.fingerprint, best is None, best, tuple(matches))
            decided[item.key] = decision
            out.append(decision)
        if new_rows:
            prepared.insert_into(conn.dialect, fingerprints).run_many(conn, new_rows)
        if log_rows:
            prepared.insert_into(conn.dialect, decisions).run_many(conn, log_rows)
        return out

    @staticmethod
    def _near_stored(
        batch: Sequence[tuple[_Item, int, datetime]],
        probes: Sequence[Mapping[int, Iterable[int]]],
        stored: dict[int, int],
    ) -> list[set[int]]:
        """For each item, the stored row ids within its radius (numpy join when radii <= 3)."""
        if all(radius <= EXACT_BAND_RADIUS for _item, radius, _moment in batch):
            row_ids = list(stored)
            positions = near_pairs(
                [item.fingerprint for item, _radius, _moment in batch],
                [radius for _item, radius, _moment in batch],
                list(stored.values()),
            )
            return [{row_ids[position] for position in found} for found in positions]
        index = _BandIndex()
        for row_id, value in stored.items():
            index.add(row_id, value)
        return [
            {
                row_id
                for row_id in index.lookup(probe)
                if (stored[row_id] ^ item.fingerprint).bit_count() <= radius
            }
            for (item, radius, _moment), probe in zip(batch, probes, strict=True)
        ]

    def _row_details(self, conn: Connection, ids: set[int]) -> dict[int, tuple[str, datetime]]:
        found: dict[int, tuple[str, datetime]] = {}
        for chunk in _chunks(sorted(ids), prepared.MAX_IN):
            statement = prepared.rows_by_id(conn.dialect, prepared.padded(len(chunk)))
            for row in statement.run(conn, _padded_params("i", chunk)):
                found[int(row[0])] = (row[1], prepared.as_datetime(row[2]))
        return found

    def _decisions_of(self, conn: Connection, keys: Sequence[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for chunk in _chunks(sorted(set(keys)), prepared.MAX_IN):
            statement = prepared.decisions_by_key(conn.dialect, prepared.padded(len(chunk)))
            for row in statement.run(conn, {"ns": self._ns_id, **_padded_params("k", chunk)}):
                decision: Any = _DecisionRow._make(row)
                found[decision.key] = decision
        return found

    def add_many(
        self,
        items: Iterable[tuple[str, str] | Mapping[str, Any]],
        *,
        batch_size: int = 1000,
        max_distance: int | None = None,
        at: datetime | None = None,
    ) -> Iterator[Decision]:
        """Add many items, one transaction per batch; yields a Decision per item in input order.

        Items are ``(key, text)`` pairs or mappings with ``key`` and ``text`` or ``fingerprint``
        (and optionally ``at``). Near-duplicates inside a batch resolve in input order. If a batch
        fails, nothing of it is written and ``BatchFailed.committed`` says how many items were.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInput(f"batch_size must be a positive int, got {batch_size!r}")
        committed = 0
        batch: list[tuple[Any, Any, Any, Any]] = []
        for raw in items:
            batch.append(self._unpack(raw))
            if len(batch) >= batch_size:
                yield from self._add_batch(batch, max_distance, at, committed)
                committed += len(batch)
                batch = []
        if batch:
            yield from self._add_batch(batch, max_distance, at, committed)

    @staticmethod
    def _unpack(raw: object) -> tuple[Any, Any, Any, Any]:
        if isinstance(raw, Mapping):
            unknown = set(raw) - {"key", "text", "fingerprint", "at"}
            if unknown:
                raise InvalidInput(f"unknown item fields {sorted(unknown)}")
            return raw.get("key"), raw.get("text"), raw.get("fingerprint"), raw.get("at")
        if isinstance(raw, tuple) and len(raw) == 2:
            return raw[0], raw[1], None, None
        raise InvalidInput("add_many items are (key, text) pairs or mappings with a key")

    def _prepare(
        self, raw: list[tuple[Any, Any, Any, Any]], at: datetime | None
    ) -> list[tuple[_Item, datetime]]:
        """Validate a whole batch before any of it is written; fingerprint its texts at once."""
        for key, text, fp, _when in raw:
            checked = _check_key(key)
            if (text is None) == (fp is None):
                raise InvalidInput(f"give exactly one of text and fingerprint (key {checked!r})")
            if fp is not None:
                check_fingerprint(fp)
        texts = [text for _key, text, fp, _when in raw if fp is None]
        analysed = iter(analyze_many(texts, preset=self.preset))
        prepared = []
        for key, _text, fp, when in raw:
            if fp is None:
                result = next(analysed)
                item = _Item(key, result.fingerprint, result.features)
            else:
                item = _Item(key, fp, None)
            prepared.append((item, self._now(when or at)))
        return prepared

    def _add_batch(
        self,
        raw: list[tuple[Any, Any, Any, Any]],
        max_distance: int | None,
        at: datetime | None,
        committed: int,
    ) -> list[Decision]:
        try:
            prepared = self._prepare(raw, at)
            with self._transaction() as conn:
                lock_for_write(conn, self._ns_id, None)
                # each kept row is visible to the next item's search: in-batch order is input order
                decided = self._decide(
                    conn,
                    [
                        (item, self._radius_for(item, max_distance), moment)
                        for item, moment in prepared
                    ],
                )
            if len(raw) >= ANALYZE_BATCH_ROWS:
                self._refresh_statistics()
            return decided
        except (SimstoreError, exc.IntegrityError) as error:
            raise BatchFailed(
                f"batch starting at item {committed} was not written: {error} "
                f"({committed} items before it are committed)",
                committed,
            ) from error

    def _refresh_statistics(self) -> None:
        """ANALYZE simstore's tables after bulk loads when PostgreSQL's statistics lag far behind.

        Without statistics (autovacuum off, or not yet run after a bulk load) PostgreSQL takes a
        large table for a tiny one and answers key and band lookups by scanning whole namespaces:
        measured here, batch times grew from 2 s to 26 s within 60k rows. This is what autovacuum's
        analyze would do (at a 20% change threshold); ANALYZE blocks neither readers nor writers.
        """
        if self._dialect != "postgresql" or self._connection is not None:
            return
        assert self._engine is not None  # noqa: S101
        with translate_errors(self._engine.url), self._engine.connect() as conn:
            stale = conn.exec_driver_sql(
                "SELECT relname FROM pg_stat_user_tables WHERE relname IN "
                "('simstore_fingerprints', 'simstore_decisions') "
                "AND n_mod_since_analyze > 0.2 * GREATEST(n_live_tup, 10000)"
            ).scalars()
            tables = sorted(str(name) for name in stale)
            if tables:
                log.info("analyzing %s after a bulk load", ", ".join(tables))
                conn.exec_driver_sql(f"ANALYZE {', '.join(tables)}")  # names from the fixed set
                conn.commit()

    # --- public API: the rest -------------------------------------------------------------------

    def get(self, key: str) -> Decision | None:
        """The decision recorded for ``key`` (None if it was never added or has been purged)."""
        checked = _check_key(key)
        with self._reading() as conn:
            row = self._earlier(conn, checked)
            if row is None:
                return None
            return self._replay(conn, row, _Item(checked, from_signed(int(row.fp)), None))

    def remove(self, key: str) -> bool:
        """Forget ``key`` (its kept row and its decision); True if there was anything to remove."""
        checked = _check_key(key)
        with self._transaction() as conn:
            lock_for_write(conn, self._ns_id, None)
            removed = conn.execute(
                sa.delete(fingerprints).where(
                    fingerprints.c.ns_id == self._ns_id, fingerprints.c.key == checked
                )
            ).rowcount
            removed += conn.execute(
                sa.delete(decisions).where(
                    decisions.c.ns_id == self._ns_id, decisions.c.key == checked
                )
            ).rowcount
        return removed > 0

    def purge(self, *, now: datetime | None = None, keep: str | timedelta | None = None) -> int:
        """Delete the partitions wholly older than the window, in bounded batches; rows deleted."""
        window = self.keep if keep is None else parse_duration(keep)
        if window is None:
            return 0
        start = window_start(self._now(now), window)
        assert start is not None  # noqa: S101
        cutoff = partition_of(start, self._partition_seconds)
        total = 0
        for table in (fingerprints, decisions):
            while True:
                with self._transaction() as conn:
                    ids = [
                        row[0]
                        for row in conn.execute(
                            sa.select(table.c.id)
                            .where(table.c.ns_id == self._ns_id, table.c.part < cutoff)
                            .limit(PURGE_BATCH_ROWS)
                        )
                    ]
                    if ids:
                        conn.execute(sa.delete(table).where(table.c.id.in_(ids)))
                total += len(ids)
                if len(ids) < PURGE_BATCH_ROWS:
                    break
        log.info("purged %d rows older than %s from %s", total, start, self.namespace)
        return total

    def stats(self) -> Stats:
        """Counts and time span of the namespace."""
        with self._reading() as conn:
            kept, oldest, newest, parts = conn.execute(
                sa.select(
                    sa.func.count(),
                    sa.func.min(fingerprints.c.added_at),
                    sa.func.max(fingerprints.c.added_at),
                    sa.func.count(sa.distinct(fingerprints.c.part)),
                ).where(fingerprints.c.ns_id == self._ns_id)
            ).one()
            logged, duplicates = conn.execute(
                sa.select(
                    sa.func.count(),
                    sa.func.coalesce(sa.func.sum(sa.case((decisions.c.inserted, 0), else_=1)), 0),
                ).where(decisions.c.ns_id == self._ns_id)
            ).one()
        return Stats(
            self.namespace,
            self.preset.label,
            int(kept),
            int(logged),
            int(duplicates),
            oldest,
            newest,
            int(parts),
        )
