"""Expiry by last sighting, and capped namespaces (``max_kept``).

**Expiry by last sighting** (the recipe option ``expire_by_last_seen``): when an add finds a
duplicate, its kept text moves to the duplicate's time. The kept row's ``added_at`` and time
partition (``part``) become that time, in the add's own transaction, by one UPDATE on the row's
unique key (``move_to_last_sighting``); a row only ever moves forward. Everything that reads a
row's time then agrees without knowing about the option: the window filter and row purges by
``part``, a partitioned PostgreSQL database's partition drops by ``added_at`` (the UPDATE moves
the row to the partition of its new time, its band keys inside it), a cap's eviction by ``part``.
The MinHash band keys of ``simstore_minhash`` carry no time and stay as they are. So a kept text
that keeps recurring stays inside the window; one not seen for the window goes, whenever it was
first kept. ``added_at`` of such a namespace's kept texts is their last sighting.

Atomic and safe with concurrent writers: the move is part of the add's transaction (it commits
with the duplicate's decision, or neither does). Batches, hand-over loads and removals hold the
namespace's exclusive lock. Single adds on PostgreSQL may run side by side, so an add first takes
an advisory lock of its kept text (``_sighting_lock``, a key space of its own, taken after every
other lock of the add and released at its commit): two adds that sight one kept text move it one
after the other, each UPDATE with a snapshot taken after the other's commit (a row moved to
another partition by a concurrent UPDATE would otherwise fail the second). MySQL/MariaDB and
SQLite serialise a namespace's adds already. A row purge of such a namespace takes the
namespace's exclusive lock for each of its batches (``simstore.storage.maintenance``), so it never
deletes a row an add has just moved, nor that row's band keys.

**A capped namespace** (``max_kept``, a setting in ``simstore_settings``, changeable at any time):
``purge`` (``SimStore.purge``, ``simstore purge``) evicts the kept texts past the cap, oldest
time partitions first, whole, and the oldest rows of the partition that crosses the cap, so that
``max_kept`` remain. Adds never check the cap (a count a write would cost more than the add), so
a namespace passes its cap between purges by what was added meanwhile.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from simstore.storage import _prepared as prepared
from simstore.storage.db import connection_for
from simstore.storage.locking import lock_for_write, require_namespace
from simstore.storage.retention import partition_of
from simstore.storage.schema import fingerprints, namespaces, settings
from simstore.storage.scope import Scope
from simstore.validate import check_int

_MAX_KEPT = "max_kept:"  # + the namespace id: a settings row per capped namespace
_SIGHTING = b"last-seen"  # the advisory key space of kept texts being moved


def _sighting_lock(ns_id: int, key: str) -> int:
    """A signed 64-bit PostgreSQL advisory key for moving kept text ``key`` (its own digest
    personalisation: never one of ``simstore.storage.locking``'s keys)."""
    digest = hashlib.blake2b(f"{ns_id}:{key}".encode(), digest_size=8, person=_SIGHTING)
    return int.from_bytes(digest.digest(), "big", signed=True)


def move_to_last_sighting(
    conn: Connection,
    ns_id: int,
    partition_seconds: int,
    seen: Mapping[str, datetime],
    *,
    exclusive: bool,
) -> int:
    """Move the kept rows ``seen`` names (key -> the latest duplicate's naive UTC time) to that
    time and its partition, where it is later than theirs; how many were asked to move.
    ``exclusive``: the caller holds the namespace's exclusive lock (else, on PostgreSQL, each
    row's sighting lock is taken first, in key order)."""
    if not seen:
        return 0
    ordered = sorted(seen.items())
    if conn.dialect.name == "postgresql" and not exclusive:
        lock = prepared.sighting_lock(conn.dialect)
        for key, _moment in ordered:
            lock.run(conn, {"k": _sighting_lock(ns_id, key)})
    statement = prepared.move_kept(conn.dialect)
    values = [
        {"ns": ns_id, "k": key, "m": moment, "p": partition_of(moment, partition_seconds)}
        for key, moment in ordered
    ]
    statement.run_rows(conn, [tuple(row[name] for name in statement.names) for row in values])
    return len(values)


class Fill(NamedTuple):
    """How full a capped namespace is."""

    namespace: str
    kept: int
    max_kept: int

    @property
    def share(self) -> float:
        """kept / max_kept."""
        return self.kept / self.max_kept

    def shown(self) -> str:
        """``950 of 1000 kept (95%)``."""
        return f"{self.kept} of {self.max_kept} kept ({self.share:.0%})"


def check_max_kept(value: object) -> int | None:
    """``value`` as a cap: a positive int, or None (no cap); else simstore's own error."""
    return check_int("max_kept", value, lowest=1, optional=True)


def max_kept_of(conn: Connection, ns_id: int) -> int | None:
    """Namespace ``ns_id``'s cap (None: none)."""
    value = conn.execute(
        sa.select(settings.c.value).where(settings.c.name == f"{_MAX_KEPT}{ns_id}")
    ).scalar()
    return None if value is None else int(value)


def set_max_kept(conn: Connection, ns_id: int, max_kept: int | None) -> None:
    """Record (or, with None, remove) namespace ``ns_id``'s cap, in the caller's transaction."""
    name = f"{_MAX_KEPT}{ns_id}"
    conn.execute(sa.delete(settings).where(settings.c.name == name))
    if max_kept is not None:
        conn.execute(sa.insert(settings).values(name=name, value=str(max_kept)))


def record_max_kept(scope: Scope, max_kept: object) -> int | None:
    """Set (None: remove) an open namespace's cap, under its exclusive lock; the cap. Bad
    input is refused before anything is written; ``NamespaceDropped`` when it is gone."""
    cap = check_max_kept(max_kept)
    with scope.connections.transaction() as conn:
        lock_for_write(conn, scope.ns_id, None, namespace=scope.namespace)
        set_max_kept(conn, scope.ns_id, cap)
    return cap


def fill_of(scope: Scope) -> Fill | None:
    """An open namespace's fill (None: it has no cap)."""
    with scope.connections.reading() as conn:
        require_namespace(conn, scope.ns_id, scope.namespace)
        cap = max_kept_of(conn, scope.ns_id)
        if cap is None:
            return None
        return Fill(scope.namespace, kept_count(conn, scope.ns_id), cap)


def kept_count(conn: Connection, ns_id: int) -> int:
    """The namespace's kept texts."""
    count = sa.select(sa.func.count()).where(fingerprints.c.ns_id == ns_id)
    return int(conn.execute(count).scalar_one())


def kept_per_partition(
    conn: Connection, ns_id: int, cutoff: int | None = None
) -> list[tuple[int, int]]:
    """(partition, kept texts) of the namespace, newest first (``cutoff``: from it on only)."""
    where = [fingerprints.c.ns_id == ns_id]
    if cutoff is not None:
        where.append(fingerprints.c.part >= cutoff)
    rows = conn.execute(
        sa.select(fingerprints.c.part, sa.func.count())
        .where(*where)
        .group_by(fingerprints.c.part)
        .order_by(fingerprints.c.part.desc())
    ).all()
    return [(int(part), int(count)) for part, count in rows]


def over_cap(counts: Sequence[tuple[int, int]], max_kept: int) -> tuple[int, int] | None:
    """Where a cap cuts ``counts`` (``kept_per_partition``): (partition p, rows r) such that the
    partitions before p go whole and the r oldest rows of p go, leaving ``max_kept``; None when
    they fit."""
    total = 0
    for part, count in counts:
        if total + count > max_kept:
            return part, total + count - max_kept
        total += count
    return None


def evicted_by(counts: Sequence[tuple[int, int]], max_kept: int) -> int:
    """How many kept texts a cap evicts from ``counts``."""
    return max(0, sum(count for _part, count in counts) - max_kept)


def fills(bind: object) -> list[Fill]:
    """Every capped namespace of the database ``bind`` names, with its fill, by name."""
    with connection_for(bind) as conn:
        caps = {
            str(name).removeprefix(_MAX_KEPT): int(value)
            for name, value in conn.execute(
                sa.select(settings.c.name, settings.c.value).where(
                    settings.c.name.startswith(_MAX_KEPT, autoescape=True)
                )
            )
        }
        named = conn.execute(sa.select(namespaces.c.id, namespaces.c.name)).all()
        return sorted(
            Fill(str(name), kept_count(conn, int(ns_id)), caps[str(ns_id)])
            for ns_id, name in named
            if str(ns_id) in caps
        )
