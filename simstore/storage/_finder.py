"""Finding the kept fingerprints that match a batch of items (no writes, no locks).

One UNION of band lookups fetches every candidate of every item (index-only), the distances are
computed in Python (a numpy band join when every radius is at most 3), and only the rows that pass
get their key, time and kept text fetched. Under ``MinHashVerification`` the rows sharing enough
MinHash-LSH band keys with an item (``simstore_minhash``) are candidates too. A candidate then
matches when it lies inside the retention window and passes the item's policy (``confirm``).
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy.engine import Connection

from simstore.errors import InvalidInput
from simstore.policy._match import EXACT_BAND_RADIUS, near_pairs
from simstore.policy.boilerplate import LineCounts
from simstore.policy.decide import BandIndex, Rule
from simstore.policy.policies import Item, Kept, Policy
from simstore.policy.probes import PAIR_MAX_RADIUS, band_values, pair_radii, prefers_pairs
from simstore.results import Judged, Match, sort_matches
from simstore.storage import _prepared as prepared
from simstore.storage import memory, reads
from simstore.storage._connections import Connections
from simstore.storage.locking import require_namespace
from simstore.storage.retention import partition_of, window_start
from simstore.storage.schema import band_keys_in_row, stored_text_of
from simstore.storage.scope import Scope
from simstore.text import minhash
from simstore.text.edges import unmarked
from simstore.text.encoding import BAND_COUNT, MASK64, bands

LOOKUPS = ("auto", "bands", "pairs")
ROWS_REFRESH_SECONDS = 60.0
# candidate_lookup's shape and parameter names for one value in each of bands 0..r (radius r <= 3)
_ONE_VALUE_PER_BAND = [tuple((band, 1) for band in range(r + 1)) for r in range(BAND_COUNT)]
_SINGLE_VALUE_NAMES = tuple(f"v{i}_0" for i in range(BAND_COUNT))
UNSIGNED_REFRESH_SECONDS = 1.0
# the reason of a kept key's candidate that its stored row alone would match (``near_misses``)
KEPT_BY_ITS_TEXT = (
    "kept apart when added, by its whole text: its stored signature, which keeps a sample of "
    "a long text's names and numbers, does not tell them apart"
)
# from this many band-key candidates a numpy pass over their signatures, before they are made
# and confirmed, costs less than it saves (below it, confirming them is cheaper than the pass)
MANY_CANDIDATES = 16


def _sharing_values(
    rows: Sequence[Sequence[Any]], signature: bytes, least: int
) -> Sequence[Sequence[Any]]:
    """The rows (``prepared.rows_by_id``'s columns) whose signature shares at least ``least``
    values with ``signature``, counted in one numpy pass: a short text's band keys can lead to
    hundreds of rows that share one band and little else (making and confirming each: ~a sixth of
    such a query under a profiler). Rows without a signature of stored length are kept, for the
    policy. Only values are compared, not the sizes that follow them."""
    stored = [row[5] for row in rows]
    if any(value is None or not minhash.is_stored_signature(value) for value in stored):
        return rows
    values = minhash.VALUES
    matrix = np.frombuffer(b"".join(bytes(value[:values]) for value in stored), np.uint8)
    own = np.frombuffer(signature, np.uint8, count=values)
    equal = (matrix.reshape(len(rows), values) == own).sum(axis=1) >= least
    return [row for row, enough in zip(rows, equal.tolist(), strict=True) if enough]


@dataclass
class Finder:
    """The read side of a store: its namespace, window and lookup plan. What a candidate must
    pass is the policy's (``Policy.confirm``), given with every ``find``."""

    ns_id: int
    keep: timedelta | None
    partition_seconds: int
    lookup: str = "auto"  # "bands", "pairs" (radius <= 3) or "auto": the cheaper by table size
    namespace: str | None = None  # its name, for NamespaceDropped's message
    unsigned_rows: bool = field(default=False, init=False)  # cached once true (it never reverts)
    _unsigned_read_at: float = field(default=float("-inf"), init=False)
    _rows: int = field(default=0, init=False)
    _rows_read_at: float = field(default=float("-inf"), init=False)

    @classmethod
    def of(cls, scope: Scope, lookup: str = "auto") -> Finder:
        """The finder of an open namespace (``lookup``: one of ``LOOKUPS``)."""
        if lookup not in LOOKUPS:
            raise InvalidInput(f"lookup must be one of {', '.join(LOOKUPS)}, got {lookup!r}")
        return cls(scope.ns_id, scope.keep, scope.partition_seconds, lookup, scope.namespace)

    def lookup_plan(self, connections: Connections, radius: int, refresh: bool = False) -> str:
        """``"pairs"`` or ``"bands"``: how a SimHash lookup at ``radius`` goes now (``refresh``
        re-reads the table's size first)."""
        if refresh:
            self.forget_table_size()
        with connections.reading() as conn:
            return "pairs" if self.uses_pairs(conn, radius) else "bands"

    def forget_table_size(self) -> None:
        """Re-read the table's size at the next lookup (``uses_pairs``), not within a minute."""
        self._rows_read_at = float("-inf")

    def uses_pairs(self, conn: Connection, radius: int) -> bool:
        """Whether a lookup at ``radius`` goes through the pair plan (``policy.probes``)."""
        if radius > PAIR_MAX_RADIUS or self.lookup == "bands":
            return False
        return self.lookup == "pairs" or prefers_pairs(radius, self._table_rows(conn))

    def _table_rows(self, conn: Connection) -> int:
        """Rows in the table (all namespaces share the b0 and b2 indexes), re-read every minute.

        The id span is an index lookup at both ends on every dialect; it overcounts by the ids
        purged in between, which only errs towards the pair plan on a table that was big.
        """
        if time.monotonic() - self._rows_read_at > ROWS_REFRESH_SECONDS:
            span = prepared.id_span(conn.dialect).run(conn, {})[0]
            self._rows = 0 if span[0] is None else int(span[1]) - int(span[0]) + 1
            self._rows_read_at = time.monotonic()
        return self._rows

    def _has_unsigned_rows(self, conn: Connection, fresh: bool, unsigned: bool | None) -> bool:
        """Whether the namespace holds rows without a signature (read until it says yes).

        An add reads it (``fresh``) after its write locks, so it sees any committed unsigned row
        (``unsigned``: the add's lock statement read it already); a query, which has no isolation
        from concurrent adds anyway, re-reads it every second.
        """
        if self.unsigned_rows:
            return True
        if fresh and unsigned is not None:
            self.unsigned_rows = unsigned
        elif fresh:  # inside an add: a dropped namespace is an error
            self.unsigned_rows = require_namespace(conn, self.ns_id, self.namespace)
            self._unsigned_read_at = time.monotonic()
        elif time.monotonic() - self._unsigned_read_at > UNSIGNED_REFRESH_SECONDS:
            found = prepared.unsigned_rows(conn.dialect).run(conn, {"ns": self.ns_id})
            self.unsigned_rows = bool(found and found[0][0])  # dropped: nothing to find
            self._unsigned_read_at = time.monotonic()
        return self.unsigned_rows

    def find(
        self,
        conn: Connection,
        items: Sequence[Item],
        moments: Sequence[datetime],
        rule: Rule,
        fresh: bool = True,
        unsigned: bool | None = None,
    ) -> list[list[Match]]:
        """For each item, the kept rows that match it under ``rule``, best first (``fresh``:
        inside an add; ``unsigned``: the namespace's flag, if its lock statement read it)."""
        if len(items) == 1:
            return [self._find_one(conn, items[0], moments[0], rule, fresh, unsigned)]
        # Only rows kept without a signature are found by SimHash bands (Policy.by_radius; signed
        # ones by their band keys): a signed batch skips them while the namespace holds none.
        params = self._window_params(min(moments))
        near_ids: list[set[int]] = [set() for _ in items]
        if self._searches_bands(conn, items, fresh, unsigned):
            near_ids = self._near(items, self._simhash_rows(conn, items, params))
        by_keys: list[set[int]] = [set() for _ in items]
        if any(item.band_keys for item in items):
            by_keys = self._lsh_candidates(conn, items, params, rule.policy)
        details = self._row_details(conn, set().union(*near_ids, *by_keys))
        return [
            self._matches(item, moment, near, keyed, details, rule)
            for item, moment, near, keyed in zip(items, moments, near_ids, by_keys, strict=True)
        ]

    def _searches_bands(
        self, conn: Connection, items: Sequence[Item], fresh: bool, unsigned: bool | None = None
    ) -> bool:
        """Whether SimHash band lookups may find rows for ``items``: some item is unsigned (a
        fingerprint), or the namespace holds unsigned rows (the only rows bands find)."""
        if not all(item.band_keys for item in items):
            return True
        return self._has_unsigned_rows(conn, fresh, unsigned)

    def _simhash_rows(
        self, conn: Connection, items: Sequence[Item], params: Mapping[str, Any]
    ) -> dict[int, int]:
        """id -> unsigned fingerprint of the rows the items' SimHash band lookups find."""
        plans = {radius: self.uses_pairs(conn, radius) for radius in {i.radius for i in items}}
        per_band: list[set[int]] = [set() for _ in range(BAND_COUNT)]
        for item in items:
            if not plans[item.radius]:
                probe = band_values(item.fingerprint, item.radius, item.own_bands)
                for band, values in probe.items():
                    per_band[band].update(values)
        stored = {
            row_id: value & MASK64 for row_id, value in self._band_rows(conn, per_band, params)
        }
        for item in items:
            if plans[item.radius]:
                for row_id, value in self._pair_rows(conn, item, params):
                    stored[row_id] = value & MASK64
        return stored

    def _find_one(
        self,
        conn: Connection,
        item: Item,
        moment: datetime,
        rule: Rule,
        fresh: bool,
        unsigned: bool | None,
    ) -> list[Match]:
        """``find`` for one item (every query, every single add), with no batch bookkeeping."""
        near, keyed, details = self._candidates_one(
            conn, item, self._window_params(moment), rule, fresh, unsigned
        )
        if not details:
            return []
        return self._matches(item, moment, near, keyed, details, rule)

    def query(
        self,
        connections: Connections,
        items: Sequence[Item],
        moment: datetime,
        rule: Rule,
        counts: LineCounts | None = None,
    ) -> list[list[Match]]:
        """What a query finds for ``items`` at ``moment``: one read, no write locks (not
        ``fresh``). A query does not read the namespace row: after a drop it finds nothing
        (the drop deleted the rows, and a namespace id is never reused). ``counts``: the memory
        of boilerplate of the queries before these in one call decided in order, which these
        count too (nothing is written); else a query counts nothing."""
        moments = [moment] * len(items)

        def find(conn: Connection) -> list[list[Match]]:
            memory.remember(
                conn, self.ns_id, rule.policy, items, moments, keep=self.keep,
                partition_seconds=self.partition_seconds, count=counts is not None,
                counts=counts,
            )  # fmt: skip
            return self.find(conn, items, moments, rule, fresh=False)

        return connections.read(find)

    def near_misses(self, scope: Scope, key: str, rule: Rule) -> list[Judged]:
        """Kept ``key``'s candidates when it was added (rows written before its own), as the
        policy judges them, nearest its bars first; ``InvalidInput`` when ``key`` is not kept."""
        with scope.connections.reading() as conn:
            row = reads.kept_row(conn, scope, key)
            if row is None:
                raise InvalidInput(f"{key!r} is not a kept key of namespace {scope.namespace!r}")
            judged = self.judged(conn, row.item, row.added_at, rule, row.id)
        # a kept key was refused by every candidate when it was added; one its row now matches
        # was refused by what the row does not hold (a long text's names past the sample its
        # signature keeps): said so, not shown as a duplicate
        judged = [
            dataclasses.replace(j, matched=False, reason=KEPT_BY_ITS_TEXT) if j.matched else j
            for j in judged
        ]
        return sorted(judged, key=lambda j: (j.matched, j.margin, j.key))

    def judged(
        self, conn: Connection, item: Item, moment: datetime, rule: Rule, before_id: int
    ) -> list[Judged]:
        """Every candidate of one item kept before row ``before_id`` (rows are numbered in the
        order they were written), as the policy judges it at ``moment`` (``explain``); those
        outside the retention window included and said to be (no write, no lock)."""
        near, keyed, details = self._candidates_one(conn, item, {"ns": self.ns_id}, rule, False)
        start = window_start(moment, self.keep)
        found = []
        for row_id in sorted(near | keyed):
            if row_id >= before_id:
                continue
            kept = details.get(row_id)
            if kept is None or (
                row_id not in keyed and not rule.policy.by_radius(item, kept.signature)
            ):
                continue
            judged = rule.policy.judge(item, kept, rule.max_distance)
            if start is not None and kept.added_at < start:
                judged = dataclasses.replace(
                    judged, matched=False, reason="outside the retention window"
                )
            found.append(judged)
        return found

    def _candidates_one(
        self,
        conn: Connection,
        item: Item,
        params: Mapping[str, Any],
        rule: Rule,
        fresh: bool,
        unsigned: bool | None = None,
    ) -> tuple[set[int], set[int], dict[int, Kept]]:
        """One item's candidate ids by SimHash (``near``) and by band keys (``keyed``) and
        their rows. Most band candidates of a single item are far from it: they are dropped as
        they are read."""
        near: set[int] = set()
        if self._searches_bands(conn, [item], fresh, unsigned):
            if self.uses_pairs(conn, item.radius):
                rows = self._pair_rows(conn, item, params)
            elif item.radius <= EXACT_BAND_RADIUS:  # equality on bands 0..r: one statement
                shape = _ONE_VALUE_PER_BAND[item.radius]
                statement = prepared.candidate_lookup(conn.dialect, shape, "cutoff" in params)
                size = len(shape)
                own = dict(zip(_SINGLE_VALUE_NAMES[:size], item.own_bands[:size], strict=True))
                rows = statement.run(conn, {**params, **own})
            else:
                probe = band_values(item.fingerprint, item.radius, item.own_bands)
                per_band = [probe.get(band, set()) for band in range(BAND_COUNT)]
                rows = self._band_rows(conn, per_band, params)
            query, radius = item.fingerprint, item.radius
            near = {
                row_id for row_id, value in rows if ((value ^ query) & MASK64).bit_count() <= radius
            }
        details: dict[int, Kept] = {}
        keyed: set[int] = set()
        if item.band_keys:  # candidates by band keys come with their details: one round trip
            keyed, details = self._sharing_keys(conn, item, params, rule.policy)
        if near - keyed:
            details.update(self._row_details(conn, near - keyed))
        return near, keyed, details

    def _matches(
        self,
        item: Item,
        moment: datetime,
        near: set[int],
        keyed: set[int],
        details: Mapping[int, Kept],
        rule: Rule,
    ) -> list[Match]:
        """The candidates ``near`` (by SimHash) and ``keyed`` (by band keys) that match ``item``."""
        policy, max_distance = rule
        start = window_start(moment, self.keep)
        candidates = []
        for row_id in near | keyed:
            kept = details.get(row_id)
            if kept is None or (start is not None and kept.added_at < start):
                continue
            if row_id not in keyed and not policy.by_radius(item, kept.signature):
                continue
            candidates.append(kept)
        # all at once (one numpy pass over the signatures): a short text's band keys can lead to
        # thousands of kept look-alikes, and confirming them one by one was most of such a query
        decided = policy.confirm_many([item] * len(candidates), candidates, max_distance)
        return sort_matches([match for match in decided if match is not None])

    def _sharing_keys(
        self, conn: Connection, item: Item, params: Mapping[str, Any], policy: Policy
    ) -> tuple[set[int], dict[int, Kept]]:
        """The ids of the rows sharing enough of one item's band keys (``Policy.min_shared``; the
        database counts), and what confirming them needs of those whose signature shares enough
        values with the item's to match at all (``Policy.least_equal_values``)."""
        keys = item.band_keys  # distinct (Policy.sign)
        statement = prepared.rows_sharing_band_keys(conn.dialect, len(keys), "cutoff" in params)
        values = {f"k{j}": key for j, key in enumerate(keys)}
        found = statement.run(conn, {**params, **values, "least": policy.min_shared(item)})
        ids = {int(row[0]) for row in found}
        least = policy.least_equal_values()
        if least is not None and item.signature is not None and len(found) >= MANY_CANDIDATES:
            return ids, self._as_kept(_sharing_values(found, item.signature, least))
        return ids, self._as_kept(found)

    def _lsh_candidates(
        self, conn: Connection, items: Sequence[Item], params: Mapping[str, Any], policy: Policy
    ) -> list[set[int]]:
        """For each item of a batch, the rows sharing enough of its band keys
        (``Policy.min_shared``)."""
        wanted = sorted({key for item in items for key in item.band_keys})
        holders: dict[int, list[int]] = {}
        if band_keys_in_row(conn.dialect):
            found_rows = prepared.band_key_array_lookup(conn.dialect).run(
                conn, {"ns": params["ns"], "keys": wanted}
            )
        else:
            found_rows = []
            for chunk in prepared.chunks(wanted, prepared.MAX_IN):
                statement = prepared.band_key_lookup(conn.dialect, prepared.padded(len(chunk)))
                found_rows += statement.run(conn, {**params, **prepared.padded_params("k", chunk)})
        for band_key, row_id in found_rows:
            holders.setdefault(int(band_key), []).append(int(row_id))
        found: list[set[int]] = []
        for item in items:
            hits = [row_id for key in item.band_keys if key in holders for row_id in holders[key]]
            least = policy.min_shared(item)
            if least <= 1 or len(hits) < least:  # most items: no holder, or any one will do
                found.append(set(hits) if least <= len(hits) else set())
                continue
            found.append({row_id for row_id, count in Counter(hits).items() if count >= least})
        return found

    def _window_params(self, now: datetime) -> dict[str, Any]:
        """``ns`` and, when there is a retention window, the first partition inside it."""
        params: dict[str, Any] = {"ns": self.ns_id}
        start = window_start(now, self.keep)
        if start is not None:
            params["cutoff"] = partition_of(start, self.partition_seconds)
        return params

    def _pair_rows(
        self, conn: Connection, item: Item, params: Mapping[str, Any]
    ) -> list[tuple[int, int]]:
        """(id, signed fingerprint) of the rows the pair plan finds for one item."""
        shape = tuple(pair_radii(item.radius))
        statement = prepared.pair_lookup(conn.dialect, shape, "cutoff" in params)
        return statement.run(conn, {**params, **prepared.pair_params(shape, item.own_bands)})

    def _band_rows(
        self, conn: Connection, per_band: Sequence[set[int]], params: Mapping[str, Any]
    ) -> list[tuple[int, int]]:
        """(id, signed fingerprint) of the rows whose band ``b`` holds one of ``per_band[b]``
        (a row found in several bands comes back once per band)."""
        windowed = "cutoff" in params
        lists = [
            (band, chunk)
            for band, values in enumerate(per_band)
            for chunk in prepared.chunks(sorted(values), prepared.MAX_IN)
        ]
        if not lists:  # every item went through the pair plan
            return []
        # One statement per (band, padded size) keeps the compiled shapes few; a single item's
        # lists (all of one size) go out as one UNION ALL, one round trip.
        sizes = {prepared.padded(len(chunk)) for _band, chunk in lists}
        groups = [lists] if len(sizes) == 1 and len(lists) <= 4 else [[entry] for entry in lists]
        rows: list[tuple[int, int]] = []
        for group in groups:
            bound = dict(params)
            for i, (_band, chunk) in enumerate(group):
                bound.update(prepared.padded_params(f"v{i}_", chunk))
            shape = tuple((band, prepared.padded(len(chunk))) for band, chunk in group)
            rows += prepared.candidate_lookup(conn.dialect, shape, windowed).run(conn, bound)
        return rows

    @staticmethod
    def _near(items: Sequence[Item], stored: dict[int, int]) -> list[set[int]]:
        """For each item, the stored row ids within its radius (numpy join when radii <= 3)."""
        if all(item.radius <= EXACT_BAND_RADIUS for item in items):
            row_ids = list(stored)
            positions = near_pairs(
                [item.fingerprint for item in items],
                [item.radius for item in items],
                list(stored.values()),
            )
            return [{row_ids[position] for position in found} for found in positions]
        index = BandIndex()
        for row_id, value in stored.items():
            index.add(row_id, bands(value))
        return [
            {
                row_id
                for row_id in index.lookup(band_values(item.fingerprint, item.radius))
                if (stored[row_id] ^ item.fingerprint).bit_count() <= item.radius
            }
            for item in items
        ]

    def _row_details(self, conn: Connection, ids: set[int]) -> dict[int, Kept]:
        """Key, value, time, kept text and signature of rows, as they are now.

        Outside a transaction (pysqlite opens none for reads) a purge and an add may run between
        the lookup and this read, and SQLite reuses the rowid of a deleted last row: so candidates
        are confirmed on what this read returns, never on what the lookup saw.
        """
        found: dict[int, Kept] = {}
        for chunk in prepared.chunks(sorted(ids), prepared.MAX_IN):
            statement = prepared.rows_by_id(conn.dialect, prepared.padded(len(chunk)))
            found.update(
                self._as_kept(
                    statement.run(conn, {"ns": self.ns_id, **prepared.padded_params("i", chunk)})
                )
            )
        return found

    @staticmethod
    def _as_kept(rows: Iterable[Sequence[Any]]) -> dict[int, Kept]:
        """``prepared.rows_by_id``'s rows by id."""
        found: dict[int, Kept] = {}
        for row_id, key, added_at, text, value, signature, packed in rows:
            stored = stored_text_of(text, None if packed is None else bytes(packed))
            compared, whole = (None, None) if stored is None else unmarked(stored)[:2]
            found[int(row_id)] = Kept(
                key,
                int(value) & MASK64,
                prepared.as_datetime(added_at),
                compared,
                None if signature is None else bytes(signature),
                whole,
            )
        return found
