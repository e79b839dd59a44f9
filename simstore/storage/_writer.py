"""Writing a batch: decide each item in input order under the write lock, then insert its rows.

The caller (``SimStore.add`` / ``add_many``) holds the locks of ``simstore.storage.locking``. One
query
finds earlier decisions of the batch's keys (a key added again replays its decision), the finder
matches every item against the kept rows at once, and the items kept so far in the batch are
indexed in memory, so an item also sees the items kept before it. Rows are inserted last.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from simstore.errors import KeyConflict
from simstore.policy.policies import Item, Kept
from simstore.results import Decision, Match, sort_matches
from simstore.storage import _prepared as prepared
from simstore.storage._finder import BatchIndex, Finder, Rule, chunks, padded_params
from simstore.storage.retention import partition_of, window_start
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
from simstore.text.encoding import from_signed, to_hex, to_signed


class Writer:
    """The write side of a namespace (its id, window and partition length)."""

    def __init__(
        self, ns_id: int, keep: timedelta | None, partition_seconds: int, finder: Finder
    ) -> None:
        self.ns_id = ns_id
        self.keep = keep
        self.partition_seconds = partition_seconds
        self.finder = finder

    def decide(
        self,
        conn: Connection,
        items: Sequence[Item],
        moments: Sequence[datetime],
        rule: Rule,
        unsigned: bool | None = None,
    ) -> list[Decision]:
        """Decide and write a batch in input order (the caller holds the write locks;
        ``unsigned``: the namespace's flag, if the lock statement read it)."""
        earlier = self.decisions_of(conn, [item.key for item in items])
        found = self._find_new(conn, items, moments, rule, unsigned, earlier)
        kept_so_far = BatchIndex(rule.policy)
        kept_at: dict[int, datetime] = {}  # batch position -> time, of the items kept so far
        decided: dict[str, Decision] = {}
        kept_rows: list[FingerprintRow] = []
        signed: list[tuple[str, int, tuple[int, ...]]] = []  # kept: key, part, band keys
        log_rows: list[DecisionRow] = []
        out: list[Decision] = []
        last_moment: datetime | None = None
        start: datetime | None = None
        part = 0
        in_row = band_keys_in_row(conn.dialect)
        for position, (item, moment, matches) in enumerate(zip(items, moments, found, strict=True)):
            if item.key in decided or item.key in earlier:
                out.append(self._again(conn, item, decided.get(item.key), earlier.get(item.key)))
                continue
            if moment != last_moment:  # a batch mostly shares one moment: work it out once
                last_moment, start = moment, window_start(moment, self.keep)
                part = partition_of(moment, self.partition_seconds)
            for other in kept_so_far.candidates(item):
                if start is None or kept_at[other] >= start:
                    match = rule.policy.confirm(
                        item, _kept(items[other], kept_at[other]), rule.max_distance
                    )
                    if match is not None:
                        matches.append(match)
            matches = sort_matches(matches)
            best = matches[0] if matches else None
            fp = to_signed(item.fingerprint)
            if best is None:
                kept_at[position] = moment
                kept_so_far.add(position, item)
                row = FingerprintRow(
                    self.ns_id, item.key, fp, *item.own_bands, moment, part, None,
                    item.signature, list(item.band_keys) if in_row and item.band_keys else None,
                    item.signature is None, pack_text(item.text),
                )  # fmt: skip
                kept_rows.append(row)
                if item.band_keys and not in_row:
                    signed.append((item.key, part, item.band_keys))
            else:  # a kept text's row is its decision's record
                log_rows.append(_decision_row(self.ns_id, item.key, fp, moment, part, best))
            recorded = None if best is None else best.key
            decision = Decision(
                item.key, item.fingerprint, best is None, best, tuple(matches), False, recorded
            )
            decided[item.key] = decision
            out.append(decision)
        self._insert(conn, kept_rows, signed, log_rows)
        return out

    def _find_new(
        self,
        conn: Connection,
        items: Sequence[Item],
        moments: Sequence[datetime],
        rule: Rule,
        unsigned: bool | None,
        earlier: Mapping[str, DecisionRow],
    ) -> list[list[Match]]:
        """The finder's matches of the items whose key has no recorded decision (a key added
        before replays its decision, so looking its text up again would be thrown away: a
        re-run ingest spent half its time there); an empty list for the others."""
        new = [position for position, item in enumerate(items) if item.key not in earlier]
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

    def _insert(
        self,
        conn: Connection,
        kept_rows: Sequence[FingerprintRow],
        signed: Sequence[tuple[str, int, tuple[int, ...]]],
        log_rows: Sequence[DecisionRow],
    ) -> None:
        row_id = None
        if kept_rows:
            if not self.finder.unsigned_rows and any(r.signature is None for r in kept_rows):
                self._mark_unsigned(conn)
            row_id = prepared.insert_into(conn.dialect, fingerprints).run_rows(conn, kept_rows)
        if signed:
            # one kept row (every single add): its id is the insert's, not read back by key
            known = {signed[0][0]: row_id} if len(kept_rows) == 1 and row_id else {}
            self._insert_band_keys(conn, signed, known)
        if log_rows:
            prepared.insert_into(conn.dialect, decisions).run_rows(conn, log_rows)

    def _mark_unsigned(self, conn: Connection) -> None:
        """Record that the namespace now holds rows without a signature (before inserting them).

        The flag is cached only once it is committed by someone: an update that finds it already
        set proves that; one that sets it may still roll back, and a cached true would then stop
        this store from ever setting it, so other stores would skip SimHash lookups they need.
        """
        changed = conn.execute(
            sa.update(namespaces)
            .where(namespaces.c.id == self.ns_id, namespaces.c.unsigned_rows == sa.false())
            .values(unsigned_rows=sa.true())
        ).rowcount
        if not changed:
            self.finder.unsigned_rows = True

    def _insert_band_keys(
        self,
        conn: Connection,
        kept: Sequence[tuple[str, int, tuple[int, ...]]],
        known: Mapping[str, int],
    ) -> None:
        """The MinHash side-table rows of rows just inserted (ids not ``known`` read back by
        key)."""
        ids: dict[str, int] = dict(known)
        unknown = [key for key, _part, _keys in kept if key not in ids]
        for chunk in chunks(unknown, prepared.MAX_IN):
            statement = prepared.ids_by_key(conn.dialect, prepared.padded(len(chunk)))
            params = {"ns": self.ns_id, **padded_params("k", chunk)}
            for row_id, key in statement.run(conn, params):
                ids[key] = int(row_id)
        ns_id = self.ns_id
        rows = [  # BandKeyRow's order, as plain tuples: a batch has ~16 a kept text
            (band_key, ns_id, row_id)
            for key, _part, band_keys in kept
            for row_id in (ids[key],)
            for band_key in band_keys
        ]
        prepared.insert_into(conn.dialect, minhash_keys).run_rows(conn, rows)

    def decisions_of(self, conn: Connection, keys: Sequence[str]) -> dict[str, DecisionRow]:
        """The recorded decisions of these keys (as rows; a kept row stands for its own)."""
        found: dict[str, DecisionRow] = {}
        for chunk in chunks(sorted(set(keys)), prepared.MAX_IN):
            statement = prepared.decisions_by_key(conn.dialect, prepared.padded(len(chunk)))
            for row in statement.run(conn, {"ns": self.ns_id, **padded_params("k", chunk)}):
                decision = DecisionRow(*row[1:])  # the row without its id
                found[decision.key] = decision
        return found

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


def _kept(item: Item, added_at: datetime) -> Kept:
    return Kept(item.key, item.fingerprint, added_at, item.text, item.signature)


def _decision_row(
    ns_id: int, key: str, fp: int, moment: datetime, part: int, best: Match
) -> DecisionRow:
    return DecisionRow(
        ns_id, key, fp, moment, part, False, best.key, best.distance, best.measure, best.score
    )
