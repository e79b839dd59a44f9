"""Writing: a batch decided in input order under the write lock, and a batch result loaded as it
was decided elsewhere; both insert their rows through ``insert_rows``.

The caller holds the locks of ``simstore.storage.locking``. One query finds earlier decisions of
the batch's keys (a key added again replays its decision), the finder finds and confirms every
new item's matches among the kept rows at once, and ``simstore.policy.decide`` decides the batch
in input order (each item also sees the items kept before it). Rows are inserted last.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.engine import Connection

from simstore.errors import BatchFailed, InvalidInput, KeyConflict, NamespaceDropped, SimstoreError
from simstore.policy._planning import RawItem
from simstore.policy.boilerplate import stored_text
from simstore.policy.decide import Rule, decide_in_order
from simstore.policy.policies import Item
from simstore.results import Decision, Match
from simstore.storage import _prepared as prepared
from simstore.storage import memory
from simstore.storage._connections import CommitOutcomeUnknown, decisions_landed
from simstore.storage._finder import Finder
from simstore.storage._group import GroupCommit
from simstore.storage.expiry import move_to_last_sighting
from simstore.storage.locking import lock_for_add, lock_for_write, require_namespace
from simstore.storage.maintenance import refresh_statistics
from simstore.storage.retention import partition_of, utc_naive, window_start
from simstore.storage.schema import (
    DecisionRow,
    FingerprintRow,
    band_keys_in_row,
    decisions,
    fingerprints,
    minhash_keys,
    namespaces,
    pack_text,
)
from simstore.storage.scope import Scope
from simstore.text.encoding import bands, from_signed, to_hex, to_signed

log = logging.getLogger("simstore")

ANALYZE_BATCH_ROWS = 1_000  # add_many batches at least this big may refresh PostgreSQL statistics
ADD_ATTEMPTS = 5  # an add whose key races in from elsewhere is decided again, at most this often


class DecidedRow(NamedTuple):
    """One text of a batch result, decided elsewhere (``simstore.spark``, ``policy.batch``).

    ``fingerprint`` is unsigned; ``text``, ``signature`` and ``band_keys`` matter for kept rows
    only; a duplicate names its kept text (``duplicate_of``) and how it was confirmed.
    ``segments``: the text's line keys (``simstore.text.edges.segments`` of its whole comparison
    text), kept or not, which the store's memory of boilerplate counts (none: None or empty)."""

    key: str
    kept: bool
    fingerprint: int
    text: str | None = None
    signature: bytes | None = None
    band_keys: Sequence[int] | None = None
    duplicate_of: str | None = None
    distance: int | None = None
    measure: str | None = None
    score: float | None = None
    segments: Sequence[int] | None = None


class Writer:
    """The write side of an open namespace: adds under their locks, retried when a key races in,
    and loads of batch results."""

    def __init__(self, scope: Scope, finder: Finder, *, group_commit: bool = False) -> None:
        self.scope = scope
        self.ns_id = scope.ns_id
        self.keep = scope.keep
        self.partition_seconds = scope.partition_seconds
        self.finder = finder
        self.rule = Rule(scope.policy, scope.max_distance)
        # after a COMMIT that lost its connection: whether its decisions are in the database
        self._landed = decisions_landed(scope.ns_id, scope.namespace)
        self._group = GroupCommit(self.write_batch, self._write_alone) if group_commit else None

    def write_one(self, item: Item, moment: datetime) -> Decision:
        """One add: in its own transaction, or with the adds other threads make meanwhile
        (group commit)."""
        partition_of(moment, self.partition_seconds)  # refuses a time past the partition numbers
        if self._group is not None:
            return self._group.write(item, moment)
        return self._write_alone(item, moment)

    def _write_alone(self, item: Item, moment: datetime) -> Decision:
        """One add in its own transaction, under the locks of its probes and keys."""

        def decide(conn: Connection) -> Decision:
            unsigned = lock_for_add(conn, self.ns_id, item, namespace=self.scope.namespace)
            return self.decide(conn, [item], [moment], self.rule, unsigned, exclusive=False)[0]

        for _attempt in range(ADD_ATTEMPTS):
            try:
                return self.scope.connections.write(decide, self._landed)
            except exc.IntegrityError:
                # the same key raced in from elsewhere: the retry finds its decision
                log.debug("integrity error adding %r, retrying", item.key)
        raise SimstoreError(f"could not add key {item.key!r}")  # pragma: no cover

    def write_batch(self, items: Sequence[Item], moments: Sequence[datetime]) -> list[Decision]:
        """A batch in one transaction, in order, under the namespace's exclusive lock."""

        def decide(conn: Connection) -> list[Decision]:
            unsigned = lock_for_write(conn, self.ns_id, None, namespace=self.scope.namespace)
            return self.decide(conn, items, moments, self.rule, unsigned)

        return self.scope.connections.write(decide, self._landed)

    def add_planned(
        self,
        batches: Iterable[tuple[list[RawItem] | Exception, Callable[[], list[Item]]]],
        at: datetime | None,
    ) -> Iterator[Decision]:
        """``add_many``'s batches (each with the function that plans it), in order, one
        transaction each; a malformed item's ``BatchFailed`` is raised in its turn."""
        committed = 0
        for batch, planned in batches:
            if isinstance(batch, Exception):
                raise batch
            yield from self._add_planned(batch, planned, at, committed)
            committed += len(batch)

    def _add_planned(
        self,
        raw: Sequence[RawItem],
        planned: Callable[[], list[Item]],
        at: datetime | None,
        committed: int,
    ) -> list[Decision]:
        """An ``add_many`` batch (``raw``, its items from ``planned()``) at ``at`` or each item's
        own time; a failure of the batch is ``BatchFailed`` (``committed``: items before it)."""
        try:
            items = planned()
            batch_moment = utc_naive(at)  # one transaction, one moment, unless an item says
            moments = [batch_moment if when is None else utc_naive(when) for *_, when in raw]
            for moment in set(moments):
                partition_of(moment, self.partition_seconds)  # before anything is written
            decided = self.write_batch(items, moments)
            if len(raw) >= ANALYZE_BATCH_ROWS:
                refresh_statistics(self.scope.connections)
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

    def decide(
        self,
        conn: Connection,
        items: Sequence[Item],
        moments: Sequence[datetime],
        rule: Rule,
        unsigned: bool | None = None,
        *,
        exclusive: bool = True,
    ) -> list[Decision]:
        """Decide and write a batch in input order (the caller holds the write locks, the
        namespace's exclusive one unless ``exclusive`` is False; ``unsigned``: the namespace's
        flag, if the lock statement read it)."""
        earlier = self.decisions_of(conn, [item.key for item in items])
        again = _seen_before(items, earlier)
        counts = memory.remember(
            conn, self.ns_id, rule.policy, items, moments, keep=self.keep,
            partition_seconds=self.partition_seconds, skip=again,
        )  # fmt: skip
        found = self._find_new(conn, items, moments, rule, unsigned, again)
        starts = None if self.keep is None else _window_starts(moments, self.keep)
        decided = decide_in_order(
            items, moments, rule, found=found, window_starts=starts, skip=again
        )
        rows = _Rows(self.ns_id, self.partition_seconds, band_keys_in_row(conn.dialect))
        by_key: dict[str, Decision] = {}
        out: list[Decision] = []
        seen: dict[str, datetime] = {}  # kept texts stored before: their latest sighting
        for item, moment, matches in zip(items, moments, decided, strict=True):
            if matches is None:
                out.append(self._again(conn, item, by_key.get(item.key), earlier.get(item.key)))
                continue
            best = matches[0] if matches else None
            if best is None:
                rows.keep(item.key, item.fingerprint, moment, stored_text(item), item.signature,
                          item.band_keys, item.own_bands)  # fmt: skip
            else:
                rows.log(item.key, item.fingerprint, moment, best)
                if self.scope.policy.expire_by_last_seen:
                    _sighted(rows, seen, best.key, moment)
            decision = Decision(
                item.key,
                item.fingerprint,
                best is None,
                best,
                tuple(matches),
                False,
                None if best is None else best.key,
            )
            by_key[item.key] = decision
            out.append(decision)
        if insert_rows(conn, self.ns_id, rows, unsigned_known=self.finder.unsigned_rows):
            self.finder.unsigned_rows = True
        move_to_last_sighting(conn, self.ns_id, self.partition_seconds, seen, exclusive=exclusive)
        if counts is not None:
            memory.write_counts(conn, self.ns_id, counts.added)
        return out

    def _find_new(
        self,
        conn: Connection,
        items: Sequence[Item],
        moments: Sequence[datetime],
        rule: Rule,
        unsigned: bool | None,
        again: Collection[int],
    ) -> list[list[Match]]:
        """The finder's matches of the items decided now (a key seen before replays its
        decision, so looking its text up again would be thrown away: a re-run ingest spent
        half its time there); an empty list for the others."""
        new = [position for position in range(len(items)) if position not in again]
        found: list[list[Match]] = [[] for _ in items]
        if not new:
            return found
        matches = self.finder.find(
            conn, [items[p] for p in new], [moments[p] for p in new], rule, unsigned=unsigned
        )
        for position, their in zip(new, matches, strict=True):
            found[position] = their
        return found

    def _again(
        self, conn: Connection, item: Item, in_batch: Decision | None, row: DecisionRow | None
    ) -> Decision:
        """A key seen before: its earlier decision, if the fingerprint is the same."""
        prior = self.replay(conn, row, item) if in_batch is None else in_batch
        if prior.fingerprint != item.fingerprint:
            raise KeyConflict(
                f"key {item.key!r} appears twice with different fingerprints "
                f"({to_hex(prior.fingerprint)} and {to_hex(item.fingerprint)})"
            )
        return dataclasses.replace(prior, replayed=True)

    def decisions_of(self, conn: Connection, keys: Sequence[str]) -> dict[str, DecisionRow]:
        """The recorded decisions of these keys (as rows; a kept row stands for its own)."""
        return decisions_of(conn, self.ns_id, keys)

    def recorded(self, key: str) -> Decision | None:
        """The decision recorded for ``key`` (None: never added, or purged)."""
        with self.scope.connections.reading() as conn:
            row = self.decisions_of(conn, [key]).get(key)
            require_namespace(conn, self.ns_id, self.scope.namespace)
            if row is None:
                return None
            return self.replay(conn, row, Item(key, from_signed(int(row.fp)), None, 0))

    def replay(self, conn: Connection, row: DecisionRow | None, item: Item) -> Decision:
        """The Decision a recorded row stands for (the key was added with this fingerprint)."""
        assert row is not None  # noqa: S101 - callers pass a key that has a decision
        stored = from_signed(int(row.fp))
        if stored != item.fingerprint:
            raise KeyConflict(
                f"key {item.key!r} was added before with fingerprint {to_hex(stored)}, "
                f"now with {to_hex(item.fingerprint)}"
            )
        if row.inserted:
            return Decision(item.key, stored, True, replayed=True)
        kept = conn.execute(
            sa.select(fingerprints.c.fp, fingerprints.c.added_at).where(
                fingerprints.c.ns_id == self.ns_id, fingerprints.c.key == row.duplicate_of
            )
        ).first()
        match = None
        if kept is not None:
            value = from_signed(int(kept.fp))
            assert row.duplicate_of is not None  # noqa: S101 - a duplicate names its match
            distance = (value ^ stored).bit_count()
            match = Match(row.duplicate_of, value, distance, kept.added_at, row.measure, row.score)
        matches = (match,) if match else ()
        return Decision(item.key, stored, False, match, matches, True, row.duplicate_of)


def decisions_of(conn: Connection, ns_id: int, keys: Sequence[str]) -> dict[str, DecisionRow]:
    """The recorded decisions of these keys in namespace ``ns_id`` (as rows; a kept row stands
    for its own)."""
    found: dict[str, DecisionRow] = {}
    for chunk in prepared.chunks(sorted(set(keys))):
        statement = prepared.decisions_by_key(conn.dialect, prepared.padded(len(chunk)))
        params = {"ns": ns_id, **prepared.padded_params("k", chunk)}
        for row in statement.run(conn, params):
            decision = DecisionRow(*row[1:])  # the row without its id
            found[decision.key] = decision
    return found


def load_decided(scope: Scope, rows: Sequence[DecidedRow], moment: datetime) -> list[DecidedRow]:
    """Write rows decided elsewhere, all at ``moment``, in one transaction under the namespace's
    exclusive lock: the rows whose key the namespace holds no decision for. A known key with the
    same fingerprint is skipped, with another one refused (``KeyConflict``); a key twice in
    ``rows`` is refused. Under a policy with the memory of boilerplate, the rows written count
    their ``segments`` in ``moment``'s partition, as adds at that moment count theirs. The rows
    written."""
    partition_of(moment, scope.partition_seconds)  # refuses a time past the partition numbers
    given: dict[str, int] = {}
    for row in rows:
        if row.key in given:
            raise InvalidInput(f"key {row.key!r} appears twice in the load")
        given[row.key] = row.fingerprint
    with scope.connections.transaction() as conn:
        lock_for_write(conn, scope.ns_id, None, namespace=scope.namespace)
        known = decisions_of(conn, scope.ns_id, list(given))
        for key, recorded in known.items():
            stored = from_signed(int(recorded.fp))
            if stored != given[key]:
                raise KeyConflict(
                    f"key {key!r} is in the store with fingerprint {to_hex(stored)}, "
                    f"the load has {to_hex(given[key])}"
                )
        table = _Rows(scope.ns_id, scope.partition_seconds, band_keys_in_row(conn.dialect))
        fresh = [row for row in rows if row.key not in known]
        seen: dict[str, datetime] = {}  # kept texts stored before: sighted at ``moment``
        for row in fresh:
            if row.kept:
                table.keep(row.key, row.fingerprint, moment, row.text, row.signature,
                           tuple(row.band_keys or ()))  # fmt: skip
            else:
                assert row.duplicate_of is not None and row.distance is not None  # noqa: S101
                # only the match's key, distance, measure and score are written
                match = Match(row.duplicate_of, 0, row.distance, moment, row.measure, row.score)
                table.log(row.key, row.fingerprint, moment, match)
                if scope.policy.expire_by_last_seen:
                    _sighted(table, seen, row.duplicate_of, moment)
        insert_rows(conn, scope.ns_id, table, unsigned_known=False)
        move_to_last_sighting(conn, scope.ns_id, scope.partition_seconds, seen, exclusive=True)
        if scope.policy.boilerplate_least is not None:
            part = partition_of(moment, scope.partition_seconds)
            added = Counter((part, key) for row in fresh for key in set(row.segments or ()))
            memory.write_counts(conn, scope.ns_id, added)
    return fresh


def _sighted(rows: _Rows, seen: dict[str, datetime], key: str, moment: datetime) -> None:
    """Kept text ``key`` was seen again at ``moment`` (expiry by last sighting): a row of this
    write moves with it now; a stored one is noted in ``seen`` (``move_to_last_sighting``)."""
    if not rows.sighted(key, moment) and (key not in seen or seen[key] < moment):
        seen[key] = moment


def _seen_before(items: Sequence[Item], earlier: Mapping[str, DecisionRow]) -> set[int]:
    """Positions whose key has a recorded decision, or comes again later in the batch."""
    seen: set[str] = set()
    again: set[int] = set()
    for position, item in enumerate(items):
        if item.key in earlier or item.key in seen:
            again.add(position)
        seen.add(item.key)
    return again


def _window_starts(moments: Sequence[datetime], keep: timedelta) -> list[datetime | None]:
    """Each moment's window start (a batch mostly shares one moment: worked out once)."""
    starts: dict[datetime, datetime | None] = {}
    return [
        starts[m] if m in starts else starts.setdefault(m, window_start(m, keep)) for m in moments
    ]


class _Rows:
    """The rows one write inserts: kept rows, their band keys, and duplicates' decisions."""

    def __init__(self, ns_id: int, partition_seconds: int, keys_in_row: bool) -> None:
        self.ns_id = ns_id
        self.partition_seconds = partition_seconds
        self.keys_in_row = keys_in_row
        self.kept: list[FingerprintRow] = []
        self.signed: list[tuple[str, tuple[int, ...]]] = []  # kept: key, band keys (side table)
        self.logged: list[DecisionRow] = []
        self._kept_at: dict[str, int] = {}  # a kept row's place in ``kept``, by key
        self._moment: datetime | None = None
        self._part = 0

    def _part_of(self, moment: datetime) -> int:
        if moment != self._moment:
            self._moment, self._part = moment, partition_of(moment, self.partition_seconds)
        return self._part

    def keep(
        self,
        key: str,
        fingerprint: int,
        moment: datetime,
        text: str | None,
        signature: bytes | None,
        band_keys: tuple[int, ...],
        own_bands: Sequence[int] | None = None,
    ) -> None:
        in_row = list(band_keys) if self.keys_in_row and band_keys else None
        b0, b1, b2, b3 = bands(fingerprint) if own_bands is None else own_bands
        self._kept_at[key] = len(self.kept)
        self.kept.append(
            FingerprintRow(
                self.ns_id, key, to_signed(fingerprint), b0, b1, b2, b3, moment,
                self._part_of(moment), None, signature, in_row, signature is None,
                pack_text(text),
            )
        )  # fmt: skip
        if band_keys and not self.keys_in_row:
            self.signed.append((key, band_keys))

    def sighted(self, key: str, moment: datetime) -> bool:
        """Whether ``key`` is a row kept by this write (then moved to ``moment`` if that is
        later: expiry by last sighting)."""
        place = self._kept_at.get(key)
        if place is None:
            return False
        row = self.kept[place]
        if row.added_at < moment:
            self.kept[place] = row._replace(added_at=moment, part=self._part_of(moment))
        return True

    def log(self, key: str, fingerprint: int, moment: datetime, best: Match) -> None:
        self.logged.append(
            DecisionRow(
                self.ns_id, key, to_signed(fingerprint), moment, self._part_of(moment), False,
                best.key, best.distance, best.measure, best.score,
            )
        )  # fmt: skip


def insert_rows(conn: Connection, ns_id: int, rows: _Rows, *, unsigned_known: bool) -> bool:
    """Insert one write's rows; True when the namespace is known (committed) to hold unsigned
    rows (``unsigned_known``: the caller knows it already and skips the flag's update).

    The flag is set before an unsigned row is inserted. A caller caches it only once it is
    committed by someone: an update that finds it already set proves that; one that sets it may
    still roll back, and a cached true would then stop this store from ever setting it, so other
    stores would skip SimHash lookups they need."""
    committed_flag = unsigned_known
    row_id = None
    if rows.kept:
        if not unsigned_known and any(row.signature is None for row in rows.kept):
            changed = conn.execute(
                sa.update(namespaces)
                .where(namespaces.c.id == ns_id, namespaces.c.unsigned_rows == sa.false())
                .values(unsigned_rows=sa.true())
            ).rowcount
            committed_flag = not changed
        row_id = prepared.insert_into(conn.dialect, fingerprints).run_rows(conn, rows.kept)
    if rows.signed:
        # one kept row (every single add): its id is the insert's, not read back by key
        known = {rows.signed[0][0]: row_id} if len(rows.kept) == 1 and row_id else {}
        _insert_band_keys(conn, ns_id, rows.signed, known)
    if rows.logged:
        prepared.insert_into(conn.dialect, decisions).run_rows(conn, rows.logged)
    return committed_flag


def _insert_band_keys(
    conn: Connection,
    ns_id: int,
    kept: Sequence[tuple[str, tuple[int, ...]]],
    known: Mapping[str, int],
) -> None:
    """The MinHash side-table rows of rows just inserted (ids not ``known`` read back by key)."""
    ids: dict[str, int] = dict(known)
    unknown = [key for key, _keys in kept if key not in ids]
    for chunk in prepared.chunks(unknown):
        statement = prepared.ids_by_key(conn.dialect, prepared.padded(len(chunk)))
        params = {"ns": ns_id, **prepared.padded_params("k", chunk)}
        for row_id, key in statement.run(conn, params):
            ids[key] = int(row_id)
    # BandKeyRow's order, as plain tuples (a batch has ~24 a kept text), sorted: the table is
    # its primary key (SQLite WITHOUT ROWID, InnoDB's clustered index), so a batch's inserts walk
    # the B-tree once, left to right, instead of a page at random per row
    rows = sorted(
        (band_key, ns_id, row_id)
        for key, band_keys in kept
        for row_id in (ids[key],)
        for band_key in band_keys
    )
    prepared.insert_into(conn.dialect, minhash_keys).run_rows(conn, rows)
