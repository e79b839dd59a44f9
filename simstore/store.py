"""SimStore: remember texts durably and answer "have I seen something almost identical?".

The facade: it checks its arguments and delegates. Planning a text is ``simstore.policy``, the
in-order decision ``simstore.policy.decide``, locks, transactions and SQL ``simstore.storage``.
"""

from __future__ import annotations

import functools
import logging
import os
import weakref
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import exc
from sqlalchemy.engine import Connection, Engine

from simstore.errors import (
    BatchFailed,
    InvalidInput,
    InvalidType,
    NamespaceDropped,
    SimstoreError,
)
from simstore.io import handover
from simstore.io.handover import LoadReport
from simstore.io.ingest import Rejected
from simstore.io.ingest import ingest as ingest_records
from simstore.policy._planning import planned_ahead
from simstore.policy.batch import plan_items
from simstore.policy.policies import Item, Policy, SimHashOnly, check_policy
from simstore.policy.probes import band_values
from simstore.results import Decision, Judged, Match, Purged, Search, Stats
from simstore.storage import maintenance, reads
from simstore.storage._connections import CommitOutcomeUnknown, Connections, decisions_landed
from simstore.storage._finder import LOOKUPS, Finder, Rule
from simstore.storage._group import GroupCommit
from simstore.storage._writer import Writer
from simstore.storage.db import check_relaxed_commit
from simstore.storage.locking import BAND_LOCK_MAX_RADIUS, lock_for_write, require_namespace
from simstore.storage.namespaces import open_namespace, prepare_schema, warn_about_partitions
from simstore.storage.retention import parse_duration, partition_of, utc_naive
from simstore.storage.scope import Scope
from simstore.text.encoding import from_signed
from simstore.text.fingerprint import ensure_available
from simstore.text.presets import Preset
from simstore.validate import (
    MAX_NAMESPACE_LENGTH,
    MAX_TEXT_LENGTH,
    check_bool,
    check_int,
    check_key,
    check_name,
    check_radius,
)

if TYPE_CHECKING:
    from simstore.io.report import Texts

log = logging.getLogger("simstore")

ANALYZE_BATCH_ROWS = 1_000  # add_many batches at least this big may refresh PostgreSQL statistics
__all__ = ["BatchFailed", "Decision", "Match", "Search", "SimStore", "Stats"]


class SimStore:
    """Near-duplicate memory in a SQL database.

    ``bind`` is a URL, an Engine or a Connection (simstore never makes a second engine when given
    one and never commits a caller's transaction: it works inside it with savepoints).
    ``preset`` None adopts the namespace's recorded preset (``default`` for a new namespace).
    ``keep`` is the retention window (``"2d"``, a timedelta or seconds; None keeps everything).
    ``auto_upgrade`` None upgrades SQLite databases on open and asks servers to be upgraded with
    ``simstore db upgrade``; True or False forces either way.
    ``policy`` decides (``simstore.policy.policies``): ``MinHashVerification()``,
    ``SimHashVerification(...)`` or ``SimHashOnly(min_features=...)``, or one's name. A namespace
    records the policy it was made with (every parameter): None adopts it (the default policy
    for a new namespace), another one is refused (``PolicyMismatch``).
    ``max_distance`` is the SimHash radius: it decides fingerprints and unsigned rows under every
    policy and texts under the SimHash policies (a radius given with a text to ``add``/``query``
    is refused under ``MinHashVerification``, whose knob is its threshold). The SimHash
    policies' namespaces record it: None uses the recorded one (3 for a new namespace), another
    one is refused (``PolicyMismatch``); a query may still search wider with its own.
    ``lookup`` picks how SimHash candidates are found for radii <= 3: ``"bands"``, ``"pairs"``
    or ``"auto"`` (``simstore.policy.probes``); all three find exactly the same matches.
    ``max_text_length`` is the longest text accepted, in characters (longer ones are refused
    with InvalidInput; default ``simstore.validate.MAX_TEXT_LENGTH``, one million).
    ``synchronous_commit`` False (PostgreSQL, a URL only) trades the last instants of durability
    for speed: the store's sessions commit without waiting for the server's WAL flush, so a
    crash of the server may lose the adds of its last moments (never half of one, never a
    corrupt table); the default leaves each commit as durable as the server is configured.
    ``group_commit`` True: adds that threads make at the same time are written together, one
    transaction and one commit for all that arrived while the previous one committed (each
    ``add`` still returns its own decision only after the commit; ``simstore.storage._group``).
    """

    def __init__(
        self,
        bind: str | Engine | Connection | Any,
        *,
        preset: str | Preset | None = None,
        namespace: str = "default",
        max_distance: int | None = None,
        keep: str | timedelta | float | None = None,
        auto_upgrade: bool | None = None,
        partition: str | timedelta | float = "1h",
        policy: Policy | str | None = None,
        lookup: str = "auto",
        max_text_length: int = MAX_TEXT_LENGTH,
        synchronous_commit: bool = True,
        group_commit: bool = False,
    ) -> None:
        if not check_bool("synchronous_commit", synchronous_commit):
            check_relaxed_commit(bind)
        if check_bool("group_commit", group_commit) and isinstance(bind, Connection):
            raise InvalidInput(
                "group_commit needs a URL or an Engine: adds on a Connection of yours are "
                "committed when you commit it"
            )
        self._connections = Connections(bind, synchronous_commit=synchronous_commit)
        # a store dropped without close() releases its connections, engine and checkpointer too
        # (the finalizer holds the connections, never the store: no cycle keeps a store alive)
        self._release = weakref.finalize(self, self._connections.close)
        self._release.atexit = False
        try:
            self.url = self._connections.url
            self.namespace = check_name("namespace", namespace, MAX_NAMESPACE_LENGTH)
            radius = None if max_distance is None else check_radius(max_distance)
            check_int("max_text_length", max_text_length, lowest=1)
            self.max_text_length = max_text_length
            self.keep = None if keep is None else parse_duration(keep)
            requested = None if policy is None else check_policy(policy)
            partition_length = parse_duration(partition)
            if partition_length < timedelta(minutes=1):
                raise InvalidInput(
                    "partition must be at least one minute (partition numbers are INT)"
                )
            if lookup not in LOOKUPS:
                raise InvalidInput(f"lookup must be one of {', '.join(LOOKUPS)}, got {lookup!r}")
            if preset is not None:
                ensure_available(preset)  # before a file or a namespace is made
            prepare_schema(self._connections, auto_upgrade)
            opened = open_namespace(
                self._connections,
                namespace,
                preset,
                max(int(partition_length.total_seconds()), 1),
                requested,
                radius,
            )
            self.max_distance = opened.max_distance
            self.preset = opened.preset
            self.policy = opened.policy
            self.partition_seconds = opened.partition_seconds
            self.ns_id = opened.id
            warn_about_partitions(self._connections, namespace, self.keep)
            self.scope = Scope(
                self._connections,
                opened.id,
                self.namespace,
                opened.partition_seconds,
                self.keep,
                opened.preset,
                opened.policy,
                self.max_distance,
            )
            self._finder = Finder(opened.id, self.keep, opened.partition_seconds, lookup, namespace)
            self._writer = Writer(opened.id, self.keep, opened.partition_seconds, self._finder)
            self._group = GroupCommit(self._write_batch, self._write_one) if group_commit else None
        except BaseException:
            self._release()
            raise

    @property
    def engine(self) -> Engine:
        """The engine the store works through (the caller's, or the one made for a URL)."""
        return self._connections.engine

    @property
    def connections(self) -> Connections:
        """The store's connection scopes (``simstore.storage._connections``), for diagnostics."""
        return self._connections

    def lookup_plan(self, radius: int | None = None, *, refresh: bool = False) -> str:
        """Which plan a SimHash lookup at ``radius`` (default: the store's) takes now, ``"bands"``
        or ``"pairs"`` (``simstore.policy.probes``); ``refresh`` re-reads the table's size first."""
        checked = self.max_distance if radius is None else check_radius(radius)
        if refresh:
            self._finder.forget_table_size()
        with self._connections.reading() as conn:
            return "pairs" if self._finder.uses_pairs(conn, checked) else "bands"

    def close(self) -> None:
        """Release the engine simstore made for a URL (a caller's engine is left alone); a store
        that is no longer referenced is released the same way without it."""
        self._release()

    def __enter__(self) -> SimStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- deciding ------------------------------------------------------------------------------

    def _items(self, raw: Sequence[tuple[Any, Any, Any]], max_distance: int | None) -> list[Item]:
        return _plan(
            raw, self.preset, self.policy, self.max_distance, max_distance, self.max_text_length
        )

    def _rule(self) -> Rule:
        return Rule(self.policy, self.max_distance)

    def _find(self, items: list[Item], moment: datetime, conn: Connection) -> list[list[Match]]:
        """What a query finds for ``items`` at ``moment`` (no write locks: not ``fresh``).

        A query is one round trip, so it does not read the namespace row: after a drop it finds
        nothing (the drop deleted the rows, and a namespace id is never reused); writes, ``get``
        and ``stats`` raise ``NamespaceDropped``."""
        return self._finder.find(conn, items, [moment] * len(items), self._rule(), fresh=False)

    def _require_namespace(self, conn: Connection) -> None:
        """Raise ``NamespaceDropped`` when the store's namespace has been dropped."""
        require_namespace(conn, self.ns_id, self.namespace)

    def search(
        self,
        text: str | None = None,
        *,
        fingerprint: int | None = None,
        max_distance: int | None = None,
        limit: int | None = None,
        now: datetime | None = None,
    ) -> Search:
        """``query``, with the fingerprint it looked for and the policy that decided."""
        check_int("limit", limit, lowest=1, optional=True)
        item = self._items([("query", text, fingerprint)], max_distance)[0]
        found = self._connections.read(functools.partial(self._find, [item], utc_naive(now)))
        matches = found[0][:limit] if limit else found[0]
        if item.planned:
            described = self.policy.describe(self.max_distance)
        else:
            described = SimHashOnly(min_features=0).describe(item.radius)
        return Search(item.fingerprint, item.radius, described, matches)

    def query(
        self,
        text: str | None = None,
        *,
        fingerprint: int | None = None,
        max_distance: int | None = None,
        limit: int | None = None,
        now: datetime | None = None,
    ) -> list[Match]:
        """Kept texts near a text or fingerprint (the same rule as ``add``), best first."""
        found = self.search(
            text, fingerprint=fingerprint, max_distance=max_distance, limit=limit, now=now
        )
        return found.matches

    def query_many(
        self,
        queries: Iterable[str | int],
        *,
        max_distance: int | None = None,
        limit: int | None = None,
        now: datetime | None = None,
        batch_size: int = 1000,
    ) -> list[list[Match]]:
        """``query`` for many texts (str) or fingerprints (int) at once: one list of matches per
        query, in order, each what ``query`` answers for it. Candidates are looked up a batch at
        a time (the lookups ``add_many`` makes, without writing)."""
        check_int("limit", limit, lowest=1, optional=True)
        check_int("batch_size", batch_size, lowest=1)
        if isinstance(queries, (str, bytes, Mapping)):
            raise InvalidType("query_many takes an iterable of texts or fingerprints, not one")
        raw: list[tuple[str, str | None, int | None]] = []
        for query in queries:
            if isinstance(query, str):
                raw.append(("query", query, None))
            elif isinstance(query, int) and not isinstance(query, bool):
                raw.append(("query", None, query))
            else:
                kind = type(query).__name__
                raise InvalidType(f"query_many takes texts (str) or fingerprints (int), not {kind}")
        moment = utc_naive(now)
        found: list[list[Match]] = []
        for start in range(0, len(raw), batch_size):
            items = self._items(raw[start : start + batch_size], max_distance)
            batch = self._connections.read(functools.partial(self._find, items, moment))
            found.extend(matches[:limit] if limit else matches for matches in batch)
        return found

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
        moment = utc_naive(at)
        partition_of(moment, self.partition_seconds)  # refuses a time past the partition numbers
        if self._group is not None:
            return self._group.add(item, moment)
        return self._write_one(item, moment)

    def _write_one(self, item: Item, moment: datetime) -> Decision:
        """One add in its own transaction, under the locks of its probes and keys."""
        probe = None
        if self._connections.dialect == "postgresql" and item.radius <= BAND_LOCK_MAX_RADIUS:
            probe = [
                (band, value)
                for band, values in band_values(item.fingerprint, item.radius).items()
                for value in values
            ]
        rule = self._rule()

        def decide(conn: Connection) -> Decision:
            unsigned = lock_for_write(
                conn, self.ns_id, probe, item.key, item.band_keys, namespace=self.namespace
            )
            return self._writer.decide(conn, [item], [moment], rule, unsigned)[0]

        for _attempt in range(5):
            try:
                return self._connections.write(decide, decisions_landed(self.ns_id, self.namespace))
            except exc.IntegrityError:
                # the same key raced in from elsewhere: the retry finds its decision
                log.debug("integrity error adding %r, retrying", item.key)
        raise SimstoreError(f"could not add key {item.key!r}")  # pragma: no cover

    def _write_batch(self, items: Sequence[Item], moments: Sequence[datetime]) -> list[Decision]:
        """A batch in one transaction, in order, under the namespace's exclusive lock."""
        rule = self._rule()

        def decide(conn: Connection) -> list[Decision]:
            unsigned = lock_for_write(conn, self.ns_id, None, namespace=self.namespace)
            return self._writer.decide(conn, items, moments, rule, unsigned)

        return self._connections.write(decide, decisions_landed(self.ns_id, self.namespace))

    def add_many(
        self,
        items: Iterable[tuple[str, str] | Mapping[str, Any]],
        *,
        batch_size: int = 1000,
        max_distance: int | None = None,
        at: datetime | None = None,
        workers: int = 0,
    ) -> Generator[Decision, None, None]:
        """Add many items, one transaction per batch; yields a Decision per item in input order
        (``close()`` it to stop early: batches whose decisions it has not begun to yield are not
        written).

        Items are ``(key, text)`` pairs or mappings with ``key`` and ``text`` or ``fingerprint``
        (and optionally ``at``). Near-duplicates inside a batch resolve in input order. If a batch
        fails, nothing of it is written and ``BatchFailed.committed`` says how many items were
        (``NamespaceDropped`` comes as itself: the namespace was dropped after the store opened).
        ``workers`` >= 1: the next batches are fingerprinted and signed in that many worker
        processes while this one decides and writes (0: all in this process; the decisions are
        the same; worth it for thousands of texts, with a core free for each worker).
        """
        check_int("batch_size", batch_size, lowest=1)
        check_int("workers", workers, lowest=0)
        if isinstance(items, (str, bytes, Mapping)):
            raise InvalidType("add_many takes an iterable of items, not a single item")
        try:
            iterator = iter(items)
        except TypeError:
            raise InvalidType(f"add_many takes an iterable, not {type(items).__name__}") from None
        plan = functools.partial(
            _plan_batch,
            preset=self.preset,
            policy=self.policy,
            store_radius=self.max_distance,
            max_distance=max_distance,
            max_text_length=self.max_text_length,
        )
        committed = 0
        for batch, planned in planned_ahead(_read_batches(iterator, batch_size), plan, workers):
            if isinstance(batch, Exception):
                raise batch
            yield from self._add_batch(batch, planned, at, committed)
            committed += len(batch)

    def _add_batch(
        self,
        raw: list[RawItem],
        planned: Callable[[], list[Item]],
        at: datetime | None,
        committed: int,
    ) -> list[Decision]:
        try:
            items = planned()
            batch_moment = utc_naive(at)  # one transaction, one moment, unless an item says
            moments = [batch_moment if when is None else utc_naive(when) for *_, when in raw]
            for moment in set(moments):
                partition_of(moment, self.partition_seconds)  # before anything is written
            decided = self._write_batch(items, moments)
            if len(raw) >= ANALYZE_BATCH_ROWS:
                maintenance.refresh_statistics(self._connections)
            return decided
        except NamespaceDropped:
            raise  # not a bad batch: nothing more can be written through this store
        except (SimstoreError, exc.IntegrityError) as error:
            unknown = isinstance(error, CommitOutcomeUnknown)
            raise BatchFailed(
                f"batch starting at item {committed} "
                f"{'may or may not have been written' if unknown else 'was not written'}: {error} "
                f"({committed} items before it are committed)",
                committed,
            ) from error

    def ingest(
        self,
        records: Iterable[Any],
        *,
        batch_size: int = 1000,
        strict: bool = False,
        workers: int = 0,
    ) -> Iterator[Decision | Rejected]:
        """``add_many`` that loses only the bad records: a failed batch is retried item by item,
        and each record yields its Decision or a ``Rejected`` (``simstore.io.ingest``)."""
        return ingest_records(self, records, batch_size=batch_size, strict=strict, workers=workers)

    def load(
        self, rows: Iterable[Any], *, at: datetime | None = None, batch_size: int = 5_000
    ) -> LoadReport:
        """Write a batch result (``simstore.spark`` or ``simstore.policy.batch``) in bulk, so online
        dedup continues from it; keys already stored are skipped (``simstore.io.handover``)."""
        return handover.load(self, rows, at=at, batch_size=batch_size)

    # --- reading and upkeep --------------------------------------------------------------------

    def kept_text(self, key: str) -> str | None:
        """The normalised text kept for ``key`` (kept short texts only; None otherwise)."""
        return reads.kept_text(self.scope, check_key(key))

    def get(self, key: str) -> Decision | None:
        """The decision recorded for ``key`` (None if it was never added or has been purged)."""
        checked = check_key(key)
        with self._connections.reading() as conn:
            row = self._writer.decisions_of(conn, [checked]).get(checked)
            self._require_namespace(conn)
            if row is None:
                return None
            item = Item(checked, from_signed(int(row.fp)), None, 0)
            return self._writer.replay(conn, row, item)

    def near_misses(self, key: str, *, limit: int = 3) -> list[Judged]:
        """Why kept ``key`` was kept: the candidates it had when it was added (rows written
        before its own), as the policy judges them, nearest its bars first (``Judged``:
        measure, score, threshold and reason; a row outside the retention window says so).
        Reads only.

        A long text's own text is not kept, so its candidates are judged by their signatures,
        as when it was added; whether it was mostly Chinese or Japanese (which picks the long
        threshold) is not kept either, and is taken as no."""
        checked = check_key(key)
        check_int("limit", limit, lowest=1)
        with self._connections.reading() as conn:
            row = reads.kept_row(conn, self.scope, checked)
            if row is None:
                raise InvalidInput(f"{checked!r} is not a kept key of namespace {self.namespace!r}")
            judged = self._finder.judged(conn, row.item, row.added_at, self._rule(), row.id)
        judged.sort(key=lambda j: (j.matched, j.margin, j.key))
        return judged[:limit]

    def remove(self, key: str) -> bool:
        """Forget ``key`` (its kept row and its decision); True if there was anything to remove."""
        return maintenance.remove(
            self._connections, self.ns_id, check_key(key), namespace=self.namespace
        )

    def purge(self, *, now: datetime | None = None, keep: str | timedelta | None = None) -> int:
        """Delete the partitions wholly older than the window, in bounded batches; rows deleted
        (kept rows and decisions: ``purge_counts`` has them per table)."""
        purged = self.purge_counts(now=now, keep=keep)
        return 0 if purged is None else purged.rows

    def purge_counts(
        self,
        *,
        now: datetime | None = None,
        keep: str | timedelta | None = None,
        dry_run: bool = False,
    ) -> Purged | None:
        """``purge`` with what it deleted per table (``dry_run``: what it would delete, nothing
        written); None when there is no window (``keep`` None and the store has none)."""
        if not isinstance(dry_run, bool):
            raise InvalidType(f"dry_run must be a bool, not {type(dry_run).__name__}")
        window = self.keep if keep is None else parse_duration(keep)
        if window is None:
            return None
        with self._connections.reading() as conn:
            self._require_namespace(conn)
        return maintenance.purge(
            self._connections,
            self.ns_id,
            self.partition_seconds,
            window,
            utc_naive(now),
            self.namespace,
            dry_run=dry_run,
        )

    def stats(self) -> Stats:
        """Counts and time span of the namespace."""
        return reads.stats(self.scope)

    def report(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        since: str | timedelta | float | None = None,
        sample: int = 200,
        clusters: int = 10,
        texts: Texts | None = None,
        now: datetime | None = None,
    ) -> str:
        """What the namespace decided, as one self-contained HTML page (``simstore.io.report``):
        returned, and written to ``path`` when given. ``since`` limits it to recent decisions;
        ``texts`` (source texts by key) shows both sides of the sampled pairs."""
        from simstore.io import report as reporting

        return reporting.write(
            self.scope, path, near_misses=self.near_misses, since=since, sample=sample,
            clusters=clusters, texts=texts, now=now,
        )  # fmt: skip


def _unpack(raw: object) -> tuple[Any, Any, Any, Any]:
    """An add_many item as (key, text, fingerprint, at)."""
    if isinstance(raw, Mapping):
        unknown = set(raw) - {"key", "text", "fingerprint", "at"}
        if unknown:
            raise InvalidInput(f"unknown item fields {sorted(unknown)}")
        return raw.get("key"), raw.get("text"), raw.get("fingerprint"), raw.get("at")
    if isinstance(raw, tuple) and len(raw) == 2:
        return raw[0], raw[1], None, None
    raise InvalidInput("add_many items are (key, text) pairs or mappings with a key")


RawItem = tuple[Any, Any, Any, Any]  # an add_many item unpacked: key, text, fingerprint, at


def _read_batches(items: Iterator[object], size: int) -> Iterator[list[RawItem] | BatchFailed]:
    """add_many's items in batches of ``size``; a malformed item ends them with its BatchFailed
    (raised in its turn, after the batches before it are written)."""
    committed = 0
    batch: list[RawItem] = []
    for raw in items:
        try:
            batch.append(_unpack(raw))
        except SimstoreError as error:
            failure = BatchFailed(
                f"item {committed + len(batch)} is malformed ({error}); its batch was not "
                f"written ({committed} items before it are committed)",
                committed,
            )
            failure.__cause__ = error
            yield failure
            return
        if len(batch) >= size:
            yield batch
            committed += len(batch)
            batch = []
    if batch:
        yield batch


def _plan(
    raw: Sequence[tuple[Any, Any, Any]],
    preset: Preset,
    policy: Policy,
    store_radius: int,
    max_distance: int | None,
    max_text_length: int = MAX_TEXT_LENGTH,
) -> list[Item]:
    """The items of (key, text, fingerprint) triples; ``max_distance``: the caller's radius.

    ``plan_items`` refuses a text with no features (empty, white space, only symbols) and a
    text longer than ``max_text_length``."""
    explicit = None if max_distance is None else check_radius(max_distance)
    return plan_items(
        raw,
        preset=preset,
        policy=policy,
        max_distance=store_radius,
        explicit=explicit,
        max_text_length=max_text_length,
    )


def _plan_batch(
    raw: Sequence[RawItem],
    *,
    preset: Preset,
    policy: Policy,
    store_radius: int,
    max_distance: int | None,
    max_text_length: int = MAX_TEXT_LENGTH,
) -> list[Item]:
    """``_plan`` of an add_many batch (module level: a worker process runs it)."""
    triples = [(key, text, value) for key, text, value, _at in raw]
    items = _plan(triples, preset, policy, store_radius, max_distance, max_text_length)
    for item in items:  # signed: not needed again, and not worth a trip back from a worker
        item.normalised = None
    return items
