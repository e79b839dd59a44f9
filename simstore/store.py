"""SimStore: remember fingerprints durably and answer "have I seen something almost identical?".

One row per kept fingerprint (full value as a signed BIGINT plus four indexed 16-bit bands). A
query unions band-equality lookups (``simstore.probes``) and computes Hamming distances in Python;
under the default verification it also looks up MinHash band keys (``simstore.minhash``,
``simstore.verify``) and decides candidates by similarity.
Adds are check-then-insert under the locks of ``simstore.locking``, so two near-duplicates added at
the same moment leave exactly one kept. Every add is logged in ``simstore_decisions``.

Near-empty texts: a text with fewer than ``min_features`` features (see ``simstore.analyze``) only
matches fingerprints at distance 0, i.e. (barring hash collisions) the same normalised content.
Without that rule all short texts would sit a few bits apart and match each other by accident.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import namedtuple
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.engine import URL, Connection, Engine

from simstore import _prepared as prepared
from simstore import migrate, minhash, partitions
from simstore._algorithms import default_normalise
from simstore._finder import (
    LOOKUPS,
    Finder,
    Item,
    Kept,
    chunks,
    padded_params,
    sort_matches,
)
from simstore._version import __version__
from simstore.db import redact, resolve_bind, translate_errors
from simstore.encoding import check_fingerprint, from_signed, to_hex, to_signed
from simstore.errors import (
    BatchFailed,
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
from simstore.results import Decision, Match, Stats
from simstore.retention import parse_duration, partition_of, utc_naive, window_start
from simstore.schema import decisions, fingerprints, minhash_keys, namespaces
from simstore.verify import MinHashVerification, Policy, Verification

log = logging.getLogger("simstore")

MAX_KEY_LENGTH = 255
MAX_NAMESPACE_LENGTH = 255
BAND_LAYOUT = "4x16"
PURGE_BATCH_ROWS = 10_000
ANALYZE_BATCH_ROWS = 1_000  # add_many batches at least this big may refresh PostgreSQL statistics
DEFAULT_VERIFICATION = MinHashVerification()
_NO_MATCH = (None, None, None, None)  # duplicate_of, distance, measure, score of a kept item
# a simstore_decisions row as the driver returns it (columns in table order)
_DecisionRow = namedtuple("_DecisionRow", [column.name for column in decisions.c])  # type: ignore[misc]
__all__ = ["BatchFailed", "Decision", "Match", "SimStore", "Stats"]


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


def _check_key(key: object) -> str:
    if not isinstance(key, str):
        raise InvalidType(f"key must be a str, not {type(key).__name__}")
    if not key or len(key) > MAX_KEY_LENGTH:
        raise InvalidInput(f"key must have 1 to {MAX_KEY_LENGTH} characters, got {len(key)}")
    _check_text_value("key", key)
    return key


def _check_text_value(what: str, value: str) -> None:
    """NUL and lone surrogates cannot be stored by every driver: refuse them clearly."""
    if "\x00" in value:
        raise InvalidInput(f"{what} must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} must be valid Unicode text (it has a lone surrogate)") from None


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
    ``verification`` is the policy that decides (``simstore.verify``). The default,
    ``MinHashVerification()``, keeps a MinHash signature of every text and the normalised text of
    short ones, finds candidates by MinHash-LSH band keys as well as by SimHash, and decides them
    by similarity (exact for short texts). ``Verification(...)`` is the SimHash-only policy. None
    turns verification off; then texts with fewer than ``min_features`` features match only at
    distance 0. An explicit ``max_distance`` on ``add``/``query`` means plain SimHash at that
    radius.
    ``lookup`` picks how candidates are found for radii <= 3: ``"bands"`` (four 16-bit band
    lookups), ``"pairs"`` (the two 32-bit halves probed at radius 1: more seeks, almost no false
    candidates) or ``"auto"``, the cheaper of the two for the table's size (``simstore.probes``).
    All three find exactly the same matches.
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
        verification: Policy | None = DEFAULT_VERIFICATION,
        lookup: str = "auto",
    ) -> None:
        self._engine, self._connection = resolve_bind(bind)
        self._owns_engine = isinstance(bind, (str, URL))
        self._kept = threading.local()  # per-thread connections (_kept_connection)
        self.url = redact(self._bound_engine.url)
        if not isinstance(namespace, str):
            raise InvalidType(f"namespace must be a str, not {type(namespace).__name__}")
        if not namespace or len(namespace) > MAX_NAMESPACE_LENGTH:
            raise InvalidInput(f"namespace must have 1 to {MAX_NAMESPACE_LENGTH} characters")
        _check_text_value("namespace", namespace)
        self.namespace = namespace
        self.max_distance = _check_radius(max_distance)
        self.keep = None if keep is None else parse_duration(keep)
        if isinstance(min_features, bool) or not isinstance(min_features, int) or min_features < 0:
            raise InvalidInput("min_features must be a non-negative int")
        self.min_features = min_features
        partition_length = parse_duration(partition)
        if partition_length < timedelta(minutes=1):
            raise InvalidInput("partition must be at least one minute (partition numbers are INT)")
        self._partition_seconds = max(int(partition_length.total_seconds()), 1)
        self._dialect = self._bound_engine.dialect.name
        if verification is not None and not isinstance(
            verification, (Verification, MinHashVerification)
        ):
            raise InvalidType(
                "verification must be a simstore.verify.MinHashVerification, Verification or None"
            )
        self.verification = verification
        if lookup not in LOOKUPS:
            raise InvalidInput(f"lookup must be one of {', '.join(LOOKUPS)}, got {lookup!r}")
        self._prepare_schema(auto_upgrade)
        self.preset, self._ns_id = self._open_namespace(preset)
        self._warn_about_partitions()
        self._finder = Finder(
            self._ns_id, self.keep, self._partition_seconds, self.max_distance, verification, lookup
        )

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
            kept = self._kept_connection()
            if kept is not None and not kept.in_transaction():
                try:
                    with kept.begin():
                        yield kept
                except BaseException as error:
                    self._retire_after(kept, error)
                    raise
                return
            with self._engine.connect() as conn:
                if self._dialect != "sqlite":
                    # the check after the lock must see rows committed while we waited
                    conn = conn.execution_options(isolation_level="READ COMMITTED")
                with conn.begin():
                    yield conn

    @contextlib.contextmanager
    def _reading(self) -> Iterator[Connection]:
        """A connection for reads: on SQLite without SQLAlchemy's BEGIN/COMMIT bookkeeping.

        pysqlite never opens a transaction for a SELECT anyway (each statement reads its own
        snapshot, which ``simstore._finder`` allows for), so the begin/commit pair only cost time.
        """
        if self._connection is None and self._dialect == "sqlite":
            assert self._engine is not None  # noqa: S101
            with translate_errors(self._engine.url), self._engine.connect() as conn:
                yield conn
            return
        with self._transaction() as conn:
            yield conn

    def _kept_connection(self) -> Connection | None:
        """On a SQLite engine of simstore's own, this thread's kept connection (else None).

        Checking a connection out of SQLAlchemy's pool and back costs about as much as the
        lookups of a query at 1M rows, and a third of a single add. Queries and simstore's own
        transactions use it; pysqlite holds no transaction between them (nor between SELECTs),
        so a kept connection pins no snapshot and blocks no checkpoint.
        """
        if not (self._owns_engine and self._dialect == "sqlite" and self._engine is not None):
            return None
        kept: Connection | None = getattr(self._kept, "connection", None)
        if kept is None or kept.closed or kept.invalidated:
            with translate_errors(self._engine.url):
                kept = self._kept.connection = self._engine.connect()
        return kept

    def _retire_after(self, kept: Connection, error: BaseException) -> None:
        """Close a kept connection after an error, unless simstore's own checks raised it (the
        rollback left it clean): after a driver error its state is unknown."""
        if not isinstance(error, SimstoreError):
            self._kept.connection = None
            kept.close()

    def close(self) -> None:
        """Release the engine simstore made for a URL (a caller's engine is left alone)."""
        kept = getattr(self._kept, "connection", None)
        if kept is not None:
            self._kept.connection = None
            kept.close()
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
                            unsigned_rows=False,
                        )
                    )
            except exc.IntegrityError:
                continue  # another process created it first: read theirs
        raise SimstoreError(f"could not open namespace {self.namespace!r}")  # pragma: no cover

    def _warn_about_partitions(self) -> None:
        if self._dialect != "postgresql":
            return
        with self._transaction() as conn:
            layout = partitions.read(conn)
        if layout is not None and (self.keep is None or self.keep > layout.keep):
            log.warning(
                "namespace %r keeps %s, but the database's partitions are dropped after %s",
                self.namespace,
                self.keep or "everything",
                layout.keep,
            )

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

    def _items(self, raw: Sequence[tuple[Any, Any, Any]], max_distance: int | None) -> list[Item]:
        """Validate (key, text, fingerprint) triples, then fingerprint all their texts at once."""
        explicit = None if max_distance is None else _check_radius(max_distance)
        for key, text, value in raw:
            checked = _check_key(key)
            if (text is None) == (value is None):
                raise InvalidInput(f"give exactly one of text and fingerprint (key {checked!r})")
            if value is not None:
                check_fingerprint(value)
        texts = [text for _key, text, value in raw if value is None]
        analysed = iter(analyze_many(texts, preset=self.preset))
        items = []
        for key, text, value in raw:
            if value is not None:
                radius = self.max_distance if explicit is None else explicit
                items.append(Item(key, value, None, radius))
                continue
            result = next(analysed)
            items.append(
                self._plan(Item(key, result.fingerprint, result.features, 0), text, explicit)
            )
        self._sign([item for item in items if item.normalised is not None])
        return items

    @staticmethod
    def _sign(items: Sequence[Item]) -> None:
        """MinHash signatures and band keys of the items that need them, in one numpy pass."""
        if not items:
            return
        values = minhash.signatures([item.normalised or "" for item in items])
        keys = minhash.band_keys(values).tolist()
        for item, signature, band_keys in zip(items, values, keys, strict=True):
            item.signature = minhash.to_bytes(signature)
            item.band_keys = tuple(sorted(set(band_keys)))  # shared keys are counted once

    def _plan(self, item: Item, text: str, explicit: int | None) -> Item:
        """Radius and verification for a text item (an explicit max_distance overrides both)."""
        if explicit is not None:
            item.radius = explicit
        elif isinstance(self.verification, MinHashVerification):
            normalised = default_normalise(self.verification.prepare(text))
            item.radius = self.max_distance
            short = len(normalised) < self.verification.short_length
            item.text = normalised if short else None
            item.normalised = normalised  # signed with the rest of the batch (_sign)
        elif self.verification is not None:
            normalised = default_normalise(text)
            item.radius, item.threshold = self.verification.plan(len(normalised), self.max_distance)
            item.text = normalised if item.threshold is not None else None
        elif item.features is not None and item.features < self.min_features:
            item.radius = 0  # near-empty texts match only the same normalised content
        else:
            item.radius = self.max_distance
        return item

    def _now(self, at: datetime | None) -> datetime:
        return utc_naive(at)

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
        """Kept texts near a text or fingerprint (the same rule as ``add``), nearest first."""
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise InvalidInput(f"limit must be a positive int, got {limit!r}")
        item = self._items([("query", text, fingerprint)], max_distance)[0]
        moment = self._now(now)
        kept = self._kept_connection()
        if kept is None:
            with self._reading() as conn:
                matches = self._finder.find(conn, [item], [moment], fresh=False)[0]
        else:
            with translate_errors(self._bound_engine.url):
                try:
                    matches = self._finder.find(kept, [item], [moment], fresh=False)[0]
                except BaseException as error:
                    self._retire_after(kept, error)
                    raise
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
        item = self._items([(key, text, fingerprint)], max_distance)[0]
        moment = self._now(at)
        for _attempt in range(5):
            try:
                with self._transaction() as conn:
                    probe = None
                    if self._dialect == "postgresql" and item.radius <= BAND_LOCK_MAX_RADIUS:
                        probe = [
                            (band, value)
                            for band, values in band_values(item.fingerprint, item.radius).items()
                            for value in values
                        ]
                    lock_for_write(conn, self._ns_id, probe, item.key, item.band_keys)
                    return self._decide(conn, [item], [moment])[0]
            except exc.IntegrityError:
                # the same key raced in from elsewhere: the retry finds its decision
                log.debug("integrity error adding %r, retrying", item.key)
        raise SimstoreError(f"could not add key {item.key!r}")  # pragma: no cover

    def _earlier(self, conn: Connection, key: str) -> Any:
        return self._decisions_of(conn, [key]).get(key)

    def _replay(self, conn: Connection, row: Any, item: Item) -> Decision:
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
            match = Match(
                row.duplicate_of,
                value,
                (value ^ stored).bit_count(),
                kept.added_at,
                row.measure,
                row.score,
            )
        return Decision(item.key, stored, False, match, (match,) if match else ())

    def _decide(
        self, conn: Connection, items: Sequence[Item], moments: Sequence[datetime]
    ) -> list[Decision]:
        """Decide a batch in input order, under the caller's write lock, with few round trips.

        One query finds earlier decisions of the batch's keys, the finder matches every item
        against the kept rows at once, and kept items of the batch are indexed by band in memory,
        so an item also sees the items kept before it in the same batch. Rows are inserted last.
        """
        earlier = self._decisions_of(conn, [item.key for item in items])
        found = self._finder.find(conn, items, moments)
        kept_so_far = self._finder.batch_index()
        signed_items: list[tuple[str, int, tuple[int, ...]]] = []  # kept: key, part, band keys
        kept_at: dict[int, datetime] = {}  # batch position -> time, of the items kept so far
        decided: dict[str, Decision] = {}
        new_rows: list[tuple[Any, ...]] = []
        log_rows: list[tuple[Any, ...]] = []
        out: list[Decision] = []
        last_moment: datetime | None = None
        start: datetime | None = None
        part = 0
        for position, (item, moment, matches) in enumerate(zip(items, moments, found, strict=True)):
            if item.key in decided or item.key in earlier:
                prior = decided.get(item.key) or self._replay(conn, earlier[item.key], item)
                if prior.fingerprint != item.fingerprint:
                    raise KeyConflict(
                        f"key {item.key!r} appears twice with different fingerprints "
                        f"({to_hex(prior.fingerprint)} and {to_hex(item.fingerprint)})"
                    )
                out.append(prior)
                continue
            if moment != last_moment:  # a batch mostly shares one moment: work it out once
                last_moment, start = moment, window_start(moment, self.keep)
                part = partition_of(moment, self._partition_seconds)
            for other in kept_so_far.candidates(item):
                other_at = kept_at[other]
                if start is None or other_at >= start:
                    earlier_item = items[other]
                    kept = Kept(
                        earlier_item.key,
                        earlier_item.fingerprint,
                        other_at,
                        earlier_item.text,
                        earlier_item.signature,
                    )
                    match = self._finder.confirm(item, kept)
                    if match is not None:
                        matches.append(match)
            matches = sort_matches(matches)
            signed = to_signed(item.fingerprint)
            best = matches[0] if matches else None
            if best is None:
                kept_at[position] = moment
                kept_so_far.add(position, item)
                new_rows.append(
                    (
                        self._ns_id,
                        item.key,
                        signed,
                        *item.own_bands,
                        moment,
                        part,
                        item.text,
                        item.signature,
                    )
                )
                if item.band_keys:
                    signed_items.append((item.key, part, item.band_keys))
            outcome = (
                _NO_MATCH if best is None else (best.key, best.distance, best.measure, best.score)
            )
            log_rows.append((self._ns_id, item.key, signed, moment, part, best is None, *outcome))
            decision = Decision(item.key, item.fingerprint, best is None, best, tuple(matches))
            decided[item.key] = decision
            out.append(decision)
        if new_rows:
            if not self._finder.unsigned_rows and any(row[-1] is None for row in new_rows):
                self._mark_unsigned(conn)
            prepared.insert_into(conn.dialect, fingerprints).run_rows(conn, new_rows)
        if signed_items:
            self._insert_band_keys(conn, signed_items)
        if log_rows:
            prepared.insert_into(conn.dialect, decisions).run_rows(conn, log_rows)
        return out

    def _mark_unsigned(self, conn: Connection) -> None:
        """Record that the namespace now holds rows without a signature (before inserting them).

        The store caches the flag only once it is committed by someone: an update that finds it
        already set proves that; one that sets it may still roll back, and a cached true would then
        stop this store from ever setting it, so other stores would skip SimHash lookups they need.
        """
        changed = conn.execute(
            sa.update(namespaces)
            .where(namespaces.c.id == self._ns_id, namespaces.c.unsigned_rows == sa.false())
            .values(unsigned_rows=sa.true())
        ).rowcount
        if not changed:
            self._finder.unsigned_rows = True

    def _insert_band_keys(
        self, conn: Connection, kept: Sequence[tuple[str, int, tuple[int, ...]]]
    ) -> None:
        """The MinHash side-table rows of rows just inserted (their ids read back by key)."""
        ids: dict[str, int] = {}
        for chunk in chunks([key for key, _part, _keys in kept], prepared.MAX_IN):
            statement = prepared.ids_by_key(conn.dialect, prepared.padded(len(chunk)))
            params = {"ns": self._ns_id, **padded_params("k", chunk)}
            for row_id, key in statement.run(conn, params):
                ids[key] = int(row_id)
        rows = [
            (band_key, self._ns_id, part, ids[key])
            for key, part, band_keys in kept
            for band_key in band_keys
        ]
        prepared.insert_into(conn.dialect, minhash_keys).run_rows(conn, rows)

    def _decisions_of(self, conn: Connection, keys: Sequence[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for chunk in chunks(sorted(set(keys)), prepared.MAX_IN):
            statement = prepared.decisions_by_key(conn.dialect, prepared.padded(len(chunk)))
            for row in statement.run(conn, {"ns": self._ns_id, **padded_params("k", chunk)}):
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
        if isinstance(items, (str, bytes, Mapping)):
            raise InvalidType("add_many takes an iterable of items, not a single item")
        try:
            iterator = iter(items)
        except TypeError:
            raise InvalidType(f"add_many takes an iterable, not {type(items).__name__}") from None
        committed = 0
        batch: list[tuple[Any, Any, Any, Any]] = []
        for raw in iterator:
            try:
                batch.append(self._unpack(raw))
            except SimstoreError as error:
                raise BatchFailed(
                    f"item {committed + len(batch)} is malformed ({error}); its batch was not "
                    f"written ({committed} items before it are committed)",
                    committed,
                ) from error
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

    def _add_batch(
        self,
        raw: list[tuple[Any, Any, Any, Any]],
        max_distance: int | None,
        at: datetime | None,
        committed: int,
    ) -> list[Decision]:
        try:
            items = self._items(
                [(key, text, value) for key, text, value, _when in raw], max_distance
            )
            batch_moment = self._now(at)  # one transaction, one moment, unless an item says
            moments = [batch_moment if when is None else self._now(when) for *_item, when in raw]
            with self._transaction() as conn:
                lock_for_write(conn, self._ns_id, None)
                # each kept row is visible to the next item's search: in-batch order is input order
                decided = self._decide(conn, items, moments)
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
            # the tables, or their partitions when they are partitioned (simstore.partitions)
            stale = conn.exec_driver_sql(
                "SELECT relname FROM pg_stat_user_tables "
                "WHERE relname ~ '^simstore_(fingerprints|decisions|minhash)(_p[a-z0-9]+)?$' "
                "AND n_mod_since_analyze > 0.2 * GREATEST(n_live_tup, 10000)"
            ).scalars()
            tables = sorted(str(name) for name in stale)
            if tables:
                log.info("analyzing %s after a bulk load", ", ".join(tables))
                conn.exec_driver_sql(f"ANALYZE {', '.join(tables)}")  # names from the fixed set
                conn.commit()

    # --- public API: the rest -------------------------------------------------------------------

    def kept_text(self, key: str) -> str | None:
        """The normalised text kept for ``key`` (kept short texts only; None otherwise)."""
        checked = _check_key(key)
        with self._reading() as conn:
            return conn.execute(
                sa.select(fingerprints.c.text).where(
                    fingerprints.c.key == checked, fingerprints.c.ns_id == self._ns_id
                )
            ).scalar()

    def get(self, key: str) -> Decision | None:
        """The decision recorded for ``key`` (None if it was never added or has been purged)."""
        checked = _check_key(key)
        with self._reading() as conn:
            row = self._earlier(conn, checked)
            if row is None:
                return None
            return self._replay(conn, row, Item(checked, from_signed(int(row.fp)), None, 0))

    def remove(self, key: str) -> bool:
        """Forget ``key`` (its kept row and its decision); True if there was anything to remove."""
        checked = _check_key(key)
        with self._transaction() as conn:
            lock_for_write(conn, self._ns_id, None)
            row = conn.execute(
                sa.select(fingerprints.c.id, fingerprints.c.part).where(
                    fingerprints.c.ns_id == self._ns_id, fingerprints.c.key == checked
                )
            ).first()
            if row is not None:
                conn.execute(
                    sa.delete(minhash_keys).where(
                        minhash_keys.c.part == row.part,
                        minhash_keys.c.ns_id == self._ns_id,
                        minhash_keys.c.fp_id == row.id,
                    )
                )
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
        if self._dialect == "postgresql":
            with self._transaction() as conn:
                layout = partitions.read(conn)
                if layout is not None:  # whole partitions past the database's window go first
                    total += partitions.drop_expired(conn, layout, self._now(now))
                    partitions.make_ahead(conn, layout, self._now(now))
        self._purge_band_keys(cutoff)  # index rows of the purged rows: not counted as rows
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

    def _purge_band_keys(self, cutoff: int) -> int:
        """Delete the MinHash side rows of partitions before ``cutoff``, in bounded batches.

        Rows of one fingerprint lie together in the (part, ns_id, fp_id) index, so a batch is the
        fingerprints whose rows the first PURGE_BATCH_ROWS index entries name, all rows of each.
        """
        total = 0
        while True:
            with self._transaction() as conn:
                found = conn.execute(
                    sa.select(minhash_keys.c.part, minhash_keys.c.fp_id)
                    .where(minhash_keys.c.part < cutoff, minhash_keys.c.ns_id == self._ns_id)
                    .limit(PURGE_BATCH_ROWS)
                ).all()
                parts = sorted({int(part) for part, _fp_id in found})
                fp_ids = sorted({int(fp_id) for _part, fp_id in found})
                for chunk in chunks(fp_ids, prepared.MAX_IN):
                    total += conn.execute(
                        sa.delete(minhash_keys).where(
                            minhash_keys.c.part.in_(parts),
                            minhash_keys.c.ns_id == self._ns_id,
                            minhash_keys.c.fp_id.in_(chunk),
                        )
                    ).rowcount
            if len(found) < PURGE_BATCH_ROWS:
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
