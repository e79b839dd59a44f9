"""SimStore: remember texts durably and answer "have I seen something almost identical?".

The facade: it checks its arguments and delegates (``docs/architecture.md`` draws the layers).
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Connection, Engine

from simstore.errors import BatchFailed
from simstore.io import handover
from simstore.io.handover import LoadReport
from simstore.io.ingest import Rejected
from simstore.io.ingest import ingest as ingest_records
from simstore.policy import _planning as planning
from simstore.policy.boilerplate import LineCounts
from simstore.policy.decide import Rule, decide_in_order
from simstore.policy.policies import Item, Policy, SimHashOnly, check_policy
from simstore.results import Decision, Judged, Match, Purged, Search, Stats
from simstore.storage import expiry, maintenance, reads
from simstore.storage._connections import for_store
from simstore.storage._finder import Finder
from simstore.storage._writer import Writer
from simstore.storage.namespaces import open_scope
from simstore.storage.retention import parse_duration, utc_naive
from simstore.text.presets import Preset
from simstore.validate import MAX_TEXT_LENGTH, check_int, check_key, check_radius

if TYPE_CHECKING:
    from simstore.io.report import Texts
    from simstore.policy.whatif import WhatIf

__all__ = ["BatchFailed", "Decision", "Match", "Search", "SimStore", "Stats"]


class SimStore:
    """Near-duplicate memory in a SQL database.

    :param bind: a URL, an Engine or a Connection (given one, simstore makes no second engine
        and never commits a transaction the caller began: it works inside it with savepoints;
        outside one, each write is its own committed transaction).
    :param preset: None adopts the namespace's recorded preset (``default`` for a new one).
    :param namespace: the namespace (created when missing).
    :param max_distance: the SimHash radius (fingerprints, unsigned rows, the SimHash policies).
    :param keep: the retention window (``"2d"``, a timedelta or seconds; None keeps everything).
    :param auto_upgrade: None upgrades SQLite on open and asks a server to be upgraded; a bool
        forces either way.
    :param partition: the length of a time partition (at least a minute).
    :param policy: the policy (``simstore.policy.policies``) or its name: None adopts the
        namespace's, another than the recorded one is refused (``PolicyMismatch``).
    :param lookup: SimHash lookups at radii <= 3 by ``"bands"``, ``"pairs"`` or ``"auto"``.
    :param max_text_length: the longest text accepted, in characters.
    :param synchronous_commit: False (PostgreSQL, a URL) does not wait for the WAL flush: a
        server crash may lose the last moments' adds, never half of one.
    :param group_commit: True writes concurrent adds together, one transaction for all that
        arrived during the previous commit (``simstore.storage._group``).
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
        self._connections = for_store(
            bind, synchronous_commit=synchronous_commit, group_commit=group_commit
        )
        # a store dropped without close() releases its connections, engine and checkpointer too
        # (the finalizer holds the connections, never the store: no cycle keeps a store alive)
        self._release = weakref.finalize(self, self._connections.close)
        self._release.atexit = False
        try:
            self.url, self.max_text_length = self._connections.url, max_text_length
            check_int("max_text_length", max_text_length, lowest=1)
            self.scope = scope = open_scope(
                self._connections,
                namespace,
                preset=preset,
                partition=partition,
                policy=None if policy is None else check_policy(policy),
                keep=None if keep is None else parse_duration(keep),
                max_distance=None if max_distance is None else check_radius(max_distance),
                auto_upgrade=auto_upgrade,
            )
            self.namespace, self.keep, self.ns_id = scope.namespace, scope.keep, scope.ns_id
            self.preset, self.policy = scope.preset, scope.policy
            self.max_distance, self.partition_seconds = scope.max_distance, scope.partition_seconds
            self._rule = Rule(scope.policy, scope.max_distance)
            self._planner = planning.Planner(
                scope.preset, scope.policy, scope.max_distance, max_text_length
            )
            self._writer = Writer(scope, Finder.of(scope, lookup), group_commit=group_commit)
            self._finder = self._writer.finder
        except BaseException:
            self._release()
            raise

    @property
    def engine(self) -> Engine:
        """The engine the store works through (the caller's, or the one made for a URL)."""
        return self._connections.engine

    def lookup_plan(self, radius: int | None = None, *, refresh: bool = False) -> str:
        """Which lookup a SimHash search at ``radius`` (default: the store's) takes now,
        ``"bands"`` or ``"pairs"``; ``refresh`` re-reads the table's size first."""
        checked = self.max_distance if radius is None else check_radius(radius)
        return self._finder.lookup_plan(self._connections, checked, refresh)

    def close(self) -> None:
        """Release the engine simstore made for a URL (a caller's engine is left alone); a store
        that is no longer referenced is released the same way without it."""
        self._release()

    def __enter__(self) -> SimStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

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
        item = self._planner.items([("query", text, fingerprint)], max_distance)[0]
        found = self._finder.query(self._connections, [item], utc_naive(now), self._rule)[0]
        policy = self.policy if item.planned else SimHashOnly(min_features=0)
        described = policy.describe(self.max_distance if item.planned else item.radius)
        return Search(item.fingerprint, item.radius, described, found[:limit] if limit else found)

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
        in_order: bool = False,
        keys: Sequence[str] | None = None,
    ) -> list[list[Match]]:
        """``query`` for many texts (str) or fingerprints (int): one list of matches per query,
        in order, each what ``query`` answers for it; looked up a batch at a time.

        :param in_order: also compare each query with the earlier queries of this call that
            ``add_many`` would keep, and decide them as it would (``simstore.policy.decide``):
            an empty list means the query would be kept, else its first match is the kept text
            (of the namespace, or an earlier query) it would be a duplicate of. Nothing is
            written; every query is held in memory until the end.
        :param keys: with ``in_order``, the queries' unique keys, which name a match among them
            (default ``"0"``, ``"1"``, ...).
        """
        check_int("limit", limit, lowest=1, optional=True)
        check_int("batch_size", batch_size, lowest=1)
        raw, moment = planning.query_triples(queries), utc_naive(now)
        if keys is not None or in_order:
            raw = planning.keyed_triples(raw, keys, in_order=in_order)
        found: list[list[Match]] = []
        planned: list[Item] = []
        least = self.policy.boilerplate_least
        # in order, each query counts the lines of the ones before it, as adds would
        counts = LineCounts(least) if in_order and least is not None else None
        for start in range(0, len(raw), batch_size):
            items = self._planner.items(raw[start : start + batch_size], max_distance)
            found.extend(self._finder.query(self._connections, items, moment, self._rule, counts))
            if in_order:
                planned.extend(items)
        if in_order:
            decided = decide_in_order(planned, [moment] * len(planned), self._rule, found=found)
            found = [matches or [] for matches in decided]
        return [matches[:limit] if limit else matches for matches in found]

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
        item = self._planner.items([(key, text, fingerprint)], max_distance)[0]
        return self._writer.write_one(item, utc_naive(at))

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
        (``close()`` it to stop early: batches it has not begun to yield are not written).

        Items are ``(key, text)`` pairs or mappings with ``key`` and ``text`` or ``fingerprint``
        (and optionally ``at``), decided in input order. A failed batch writes nothing
        (``BatchFailed.committed``: the items before it). ``workers`` >= 1 plans the next batches
        in that many processes while this one decides and writes (the same decisions).
        """
        check_int("batch_size", batch_size, lowest=1)
        check_int("workers", workers, lowest=0)
        batches = planning.read_batches(items, batch_size)
        planned = planning.planned_ahead(batches, self._planner.batches(max_distance), workers)
        try:
            yield from self._writer.add_planned(planned, at)
        finally:  # the planning workers end here, not whenever the collector finds them
            planned.close()

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
        return handover.load(self.scope, rows, at=at, batch_size=batch_size)

    def kept_text(self, key: str) -> str | None:
        """The normalised text kept for ``key`` (kept short texts only; None otherwise)."""
        return reads.kept_text(self.scope, check_key(key))

    def get(self, key: str) -> Decision | None:
        """The decision recorded for ``key`` (None if it was never added or has been purged)."""
        return self._writer.recorded(check_key(key))

    def near_misses(self, key: str, *, limit: int = 3) -> list[Judged]:
        """Why kept ``key`` was kept: its candidates when it was added, as the policy judges them,
        nearest its bars first (``Judged``: measure, score, threshold, reason). Reads only; a long
        text is judged by its signature (its text is not kept), as not mostly Chinese/Japanese,
        and a candidate its signature alone would match is said to have been told apart by the
        text (``KEPT_BY_ITS_TEXT``), never shown as matched."""
        check_int("limit", limit, lowest=1)
        return self._finder.near_misses(self.scope, check_key(key), self._rule)[:limit]

    def remove(self, key: str) -> bool:
        """Forget ``key`` (its kept row and its decision); True if there was anything to remove."""
        return maintenance.remove(self.scope, check_key(key))

    def purge(self, *, now: datetime | None = None, keep: str | timedelta | None = None) -> int:
        """Delete the partitions wholly older than the window, in bounded batches, then the
        oldest kept texts past the cap (``set_max_kept``); rows deleted (kept rows and decisions:
        ``purge_counts`` has them per table)."""
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
        written); None when there is neither a window (``keep`` None and the store has none)
        nor a cap."""
        window = self.keep if keep is None else parse_duration(keep)
        return maintenance.purge_scope(self.scope, window, utc_naive(now), dry_run=dry_run)

    def stats(self) -> Stats:
        """Counts and time span of the namespace."""
        return reads.stats(self.scope)

    def whatif(
        self,
        texts: Sequence[str] | None = None,
        *,
        keys: Sequence[str] | None = None,
        policy: str | None = None,
        options: Mapping[str, object] | None = None,
        sample: int = 1000,
    ) -> WhatIf:
        """What would flip under a proposed recipe: ``texts`` (or the latest ``sample`` kept
        texts the namespace stores, short texts only) decided under the namespace's recipe and
        under the change, DB-free (``simstore.policy.whatif``). Reads only.

        :param texts: the texts to decide, in input order (None: a sample of the kept texts).
        :param keys: their unique keys (default ``"0"``, ``"1"``, ...).
        :param policy: another policy's name to try (None: the namespace's, with ``options``).
        :param options: the options to change (``--policy-option`` names and values).
        :param sample: how many kept texts to read when ``texts`` is None.
        """
        from simstore.io import whatif

        return whatif.decide(
            self.scope, texts, keys=keys, policy=policy, options=options, sample=sample
        )

    @property
    def max_kept(self) -> int | None:
        """The namespace's cap on kept texts (None: none), as recorded in the database."""
        fill = expiry.fill_of(self.scope)
        return None if fill is None else fill.max_kept

    def set_max_kept(self, max_kept: int | None) -> None:
        """Cap the namespace at ``max_kept`` kept texts (None removes the cap); ``purge`` then
        evicts the oldest past it (``simstore.storage.expiry``).

        :param max_kept: a positive int, or None.
        """
        expiry.record_max_kept(self.scope, max_kept)

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
