"""The write locks that make insert-if-new atomic on each dialect.

Why the check-then-insert of ``SimStore.add`` cannot keep two near-duplicates:

* SQLite has one writer at a time. Every write transaction starts by updating the namespace row,
  which takes the database's write lock (waiting up to the busy timeout) before anything is read, so
  the check sees every earlier add and no other add can run until this one commits.
* PostgreSQL: each add takes transaction-scoped advisory locks on the (namespace, band, value) keys
  of its probe set, in sorted order (no deadlocks), after a shared lock on the namespace. If A and B
  are within A's radius r, then by the multi-index-hashing argument (``simstore.policy.probes``)
  some band value of B lies in A's probe set, and B's own exact band values are in B's probe set, so
  both lock that key and one waits for the other to commit; the waiter's check runs after the lock,
  at READ COMMITTED, and therefore sees the other's row. Radii above ``BAND_LOCK_MAX_RADIUS`` (and
  batches) would need too many keys, so they take the namespace lock exclusively, which excludes
  every other add of the namespace. Each add also locks a hash of its own key: two adds of one key
  serialise, so the second finds the first's decision even when the unique constraint cannot see
  across time partitions (``simstore.storage.partitions``). Under MinHash verification two texts
  that can match either lie within the SimHash radius (the argument above) or share at least one
  MinHash band key (the policy's ``min_bands``; one layout a namespace, ``minhash_bands``), so
  each add also locks all its band keys (16 or 24).
* MySQL/MariaDB: every add locks the namespace row ``FOR UPDATE``, serialising the namespace's adds
  (a lock table in the sense of the design); the check runs at READ COMMITTED after the lock.

Every write also proves, under its lock and in its transaction, that its namespace row still
exists, and raises ``NamespaceDropped`` before writing anything when it does not. A drop takes the
namespace's exclusive lock, so a write either commits before the drop (whose deletes then take its
rows) or finds the row gone. Ids are never reused (revision 0011 on SQLite; sequences elsewhere),
so the row found is the namespace the store opened. The proof costs no extra statement on SQLite
(the claiming UPDATE's row count) or MySQL (the row locked ``FOR UPDATE``); on PostgreSQL it is
the last statement of ``simstore_lock_for_add`` (revision 0013), the one call that takes the
namespace's and the keys' locks, whose own snapshot begins after every lock was granted. Both
servers' lock statements also return the namespace's ``unsigned_rows`` flag read under the
locks, which the finder would otherwise read in a statement of its own.

Partition maintenance on PostgreSQL (dropping and creating partitions: DDL, which takes each
parent table's ACCESS EXCLUSIVE lock) first takes the tables' advisory lock exclusively
(``lock_tables``); every add takes it shared before anything else, in the same call as its other
locks. So a DROP never waits for an add that waits for it: they used to deadlock, since an add
reads the decisions table before the fingerprints table and a purge drops them the other way.

Queries take no locks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from sqlalchemy.engine import Connection

from simstore.errors import NamespaceDropped
from simstore.policy.policies import Item
from simstore.policy.probes import band_values
from simstore.storage import _prepared as prepared

BAND_LOCK_MAX_RADIUS = 7  # at most 4 x 17 = 68 advisory keys per add
_PG_NAMESPACE_CLASS = 0x53494D53  # "SIMS": the (int, int) advisory key space for namespaces
_PG_TAG = 0x5153 << 40
_NAMESPACE_SPREAD = 0x9E3779B97F4A7C15  # odd: namespaces move a band key to unrelated values


def _band_key(ns_id: int, band: int, value: int) -> int:
    return _PG_TAG | (ns_id << 18) | (band << 16) | value


def _key_lock(ns_id: int, key: str) -> int:
    """A signed 64-bit advisory key for (namespace, key); a collision only serialises two adds."""
    digest = hashlib.blake2b(f"{ns_id}:{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _minhash_lock(ns_id: int, band_key: int) -> int:
    """A signed 64-bit advisory key for a MinHash band key (already random) in a namespace."""
    mixed = (band_key ^ (ns_id * _NAMESPACE_SPREAD)) & 0xFFFF_FFFF_FFFF_FFFF
    return mixed - (1 << 64) if mixed >= 1 << 63 else mixed


def lock_tables(connection: Connection) -> None:
    """PostgreSQL: exclude every add until the transaction ends, before partition DDL."""
    if connection.dialect.name == "postgresql":
        prepared.tables_lock(connection.dialect).run(connection, {"cls": _PG_NAMESPACE_CLASS})


def dropped(ns_id: int, namespace: str | None = None) -> NamespaceDropped:
    """The error of a store whose namespace (id ``ns_id``) no longer exists."""
    name = f"namespace {namespace!r} (id {ns_id})" if namespace else f"namespace id {ns_id}"
    return NamespaceDropped(
        f"{name} was dropped after this store opened it; nothing was read or written "
        "(open a new store to create it again)"
    )


def require_namespace(connection: Connection, ns_id: int, namespace: str | None = None) -> bool:
    """Raise ``NamespaceDropped`` unless namespace ``ns_id`` exists; else whether it holds rows
    without a MinHash signature (the column read to prove it exists)."""
    found = prepared.unsigned_rows(connection.dialect).run(connection, {"ns": ns_id})
    if not found:
        raise dropped(ns_id, namespace)
    return bool(found[0][0])


def lock_for_add(
    connection: Connection, ns_id: int, item: Item, *, namespace: str | None = None
) -> bool | None:
    """``lock_for_write`` for one add: on PostgreSQL the locks of its probes (its radius, up to
    ``BAND_LOCK_MAX_RADIUS``; wider takes the namespace's exclusive lock), key and band keys."""
    probe = None
    if connection.dialect.name == "postgresql" and item.radius <= BAND_LOCK_MAX_RADIUS:
        probe = [
            (band, value)
            for band, values in band_values(item.fingerprint, item.radius, item.own_bands).items()
            for value in values
        ]
    return lock_for_write(connection, ns_id, probe, item.key, item.band_keys, namespace=namespace)


def lock_for_write(
    connection: Connection,
    ns_id: int,
    probe_keys: Iterable[tuple[int, int]] | None,
    key: str | None = None,
    band_keys: Iterable[int] = (),
    *,
    namespace: str | None = None,
) -> bool | None:
    """Take the locks an add needs before it checks; ``probe_keys`` None means exclusive.

    ``band_keys`` are the add's MinHash band keys (``simstore.text.minhash``), locked with the
    probes. Raises ``NamespaceDropped`` (``namespace`` names it) when the namespace row is gone.
    Returns whether the namespace holds rows without a signature, where the statement that
    proved it exists read that after every lock (else None: not read).
    """
    dialect = connection.dialect.name
    if dialect == "postgresql":
        if probe_keys is None:
            exclusive = {"cls": _PG_NAMESPACE_CLASS, "ns": ns_id}
            prepared.namespace_lock(connection.dialect).run(connection, exclusive)
            # a statement of its own: its snapshot begins after the lock was granted
            return require_namespace(connection, ns_id, namespace)
        wanted = {_band_key(ns_id, band, value) for band, value in probe_keys}
        wanted.update(_minhash_lock(ns_id, band_key) for band_key in band_keys)
        if key is not None:
            wanted.add(_key_lock(ns_id, key))
        # one call (revision 0013): the namespace's shared lock, the keys' locks in sorted
        # order, then the namespace row read by a statement whose snapshot follows every lock
        params = {"cls": _PG_NAMESPACE_CLASS, "ns": ns_id, "keys": sorted(wanted)}
        unsigned = prepared.lock_for_add(connection.dialect).run(connection, params)[0][0]
        if unsigned is None:
            raise dropped(ns_id, namespace)
        return bool(unsigned)
    if dialect in ("mysql", "mariadb"):
        locked = prepared.namespace_for_update(connection.dialect).run(connection, {"ns": ns_id})
        if not locked:
            raise dropped(ns_id, namespace)
        return bool(locked[0][0])
    # SQLite (and anything else): a write first, so the database write lock is held from here on
    if not prepared.claim_namespace(connection.dialect).count(connection, {"ns": ns_id}):
        raise dropped(ns_id, namespace)
    return None
