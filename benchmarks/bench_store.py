"""Add and query latency of SimStore at N kept fingerprints, on any database URL, against floors.

    python -m benchmarks store                                  # SQLite temp file, 1M rows
    python -m benchmarks store --rows 10000000 --fill direct    # 10M rows in minutes
    python -m benchmarks store --url postgresql+psycopg://root@127.0.0.1/bench --rows 1000000

First, bulk speed: ``add_many`` of ``--bulk-rows`` fingerprints into an empty store, against the
floor of writing the same rows (kept row + decision row each) with ``executemany`` through the raw
``sqlite3`` module into an identical empty schema (SQLite only).
Then loads N random 64-bit fingerprints (``--fill add_many``, the default, or ``--fill direct``:
rows written straight into the table, SQLite only; random fingerprints have no near-duplicates at
k = 3, so add_many would keep every one of them too) and times single ``query`` calls at k = 3
(random and planted near-duplicate queries), single ``add`` calls, and ``add_many`` in batches of
100 (sustained insert-if-new). On SQLite the floors are the same statements through the raw
``sqlite3`` module on the same file: the 4-band UNION ALL for a query, and for an add one
transaction of key check, band lookup and the two inserts.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path

import sqlalchemy as sa

from simstore.policy.policies import SimHashOnly
from simstore.storage.db import SQLITE_CACHE_KIB, SQLITE_MMAP_BYTES
from simstore.store import SimStore
from simstore.text.encoding import bands, from_signed, to_signed


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def timed(calls: list[Callable[[], object]]) -> list[float]:
    samples = []
    for call in calls:
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1e6)
    return samples


def near(value: int, rng: random.Random, distance: int) -> int:
    for bit in rng.sample(range(64), distance):
        value ^= 1 << bit
    return value


class RawSqlite:
    """The floor: the same 4-band UNION ALL through the sqlite3 module, same file, same indexes."""

    def __init__(self, url: str, namespace: str) -> None:
        self.connection = _raw_connection(Path(url.removeprefix("sqlite:///")))
        row = self.connection.execute(
            "SELECT id FROM simstore_namespaces WHERE name = ?", (namespace,)
        ).fetchone()
        self.ns_id = row[0]
        self.sql = " UNION ALL ".join(
            f"SELECT id, fp FROM simstore_fingerprints WHERE ns_id = ? AND b{b} = ?"
            for b in range(4)
        )
        self.candidates: list[int] = []

    def query(self, value: int) -> list[int]:
        params: list[int] = []
        for band in bands(value):
            params += [self.ns_id, band]
        result = self.connection.execute(self.sql, params).fetchall()
        self.candidates.append(len(result))
        signed = to_signed(value)
        return [
            (signed ^ fp) & (2**64 - 1)
            for _id, fp in result
            if ((signed ^ fp) & (2**64 - 1)).bit_count() <= 3
        ]


SQLITE_TIME = "2026-11-29 00:00:00.000000"
WRITE_CHUNK = 200_000


def write_rows(path: Path, ns_id: int, start: int, values: list[int]) -> None:
    """Write kept rows k{start}.. straight into simstore_fingerprints (no dedup, no decisions)."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA cache_size=-262144")
    for first in range(0, len(values), WRITE_CHUNK):
        chunk = values[first : first + WRITE_CHUNK]
        connection.execute("BEGIN")
        connection.executemany(
            "INSERT INTO simstore_fingerprints (ns_id, key, fp, b0, b1, b2, b3, added_at, part) "
            f"VALUES (?, ?, ?, ?, ?, ?, ?, '{SQLITE_TIME}', 493104)",
            [
                (ns_id, f"k{start + first + i}", to_signed(value), *bands(value))
                for i, value in enumerate(chunk)
            ],
        )
        connection.execute("COMMIT")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()


def _raw_connection(path: Path) -> sqlite3.Connection:
    """A floor's connection, set up as simstore's own (WAL, page cache, memory map)."""
    connection = sqlite3.connect(path, isolation_level=None)
    pragmas = (
        "journal_mode=WAL",
        "synchronous=NORMAL",
        f"cache_size=-{SQLITE_CACHE_KIB}",
        f"mmap_size={SQLITE_MMAP_BYTES}",
    )
    for pragma in pragmas:
        connection.execute(f"PRAGMA {pragma}")
    return connection


def _raw_row(ns_id: int, key: str, value: int) -> tuple[object, ...]:
    """A kept row (the record of its decision too: a kept add writes no decision row)."""
    return (ns_id, key, to_signed(value), *bands(value), SQLITE_TIME, 493104)


INSERT_KEPT = (
    "INSERT INTO simstore_fingerprints (ns_id, key, fp, b0, b1, b2, b3, added_at, part) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def bulk_rates(values: list[int], batch: int) -> tuple[float, float]:
    """Rows/s of add_many into an empty store, and of the raw executemany floor (SQLite)."""
    folder = Path(tempfile.mkdtemp(prefix="simstore-bulk-"))
    rates = []
    for name in ("simstore", "raw"):
        path = folder / f"{name}.db"
        with SimStore(f"sqlite:///{path}", namespace="bulk", policy=SimHashOnly()) as store:
            items = [{"key": f"k{i}", "fingerprint": v} for i, v in enumerate(values)]
            start = time.perf_counter()
            if name == "simstore":
                for _decision in store.add_many(items, batch_size=batch):
                    pass
            else:
                connection = _raw_connection(path)
                for first in range(0, len(values), batch):
                    rows = [
                        _raw_row(store.ns_id, f"k{i}", values[i])
                        for i in range(first, min(first + batch, len(values)))
                    ]
                    connection.execute("BEGIN IMMEDIATE")
                    connection.executemany(INSERT_KEPT, rows)
                    connection.execute("COMMIT")
                connection.close()
            rates.append(len(values) / (time.perf_counter() - start))
    return rates[0], rates[1]


class RawAdd:
    """The floor of one add on SQLite: key check (both tables), 4-band lookup and the kept row's
    insert, one transaction."""

    def __init__(self, path: Path, ns_id: int) -> None:
        self.connection = _raw_connection(path)
        self.ns_id = ns_id
        self.lookup = " UNION ALL ".join(
            f"SELECT id, fp FROM simstore_fingerprints WHERE ns_id = ? AND b{b} = ?"
            for b in range(4)
        )

    def add(self, key: str, value: int) -> None:
        params: list[int] = []
        for band in bands(value):
            params += [self.ns_id, band]
        execute = self.connection.execute
        execute("BEGIN IMMEDIATE")
        execute(
            "SELECT key FROM simstore_decisions WHERE ns_id = ? AND key = ? UNION ALL "
            "SELECT key FROM simstore_fingerprints WHERE ns_id = ? AND key = ?",
            (self.ns_id, key, self.ns_id, key),
        ).fetchall()
        execute(self.lookup, params).fetchall()
        execute(INSERT_KEPT, _raw_row(self.ns_id, key, value))
        execute("COMMIT")


def sample_stored(store: SimStore, count: int, rng: random.Random) -> list[int]:
    """``count`` fingerprints kept in the store's namespace, picked by random row id."""
    stored: list[int] = []
    with store.engine.connect() as connection:
        low, high = connection.exec_driver_sql(
            "SELECT MIN(id), MAX(id) FROM simstore_fingerprints"
        ).one()
        while len(stored) < count:
            row = connection.exec_driver_sql(
                "SELECT fp FROM simstore_fingerprints WHERE id = ? AND ns_id = ?",
                (rng.randint(low, high), store.ns_id),
            ).first()
            if row is not None:
                stored.append(from_signed(row[0]))
    return stored


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--url", help="database URL (default: a new SQLite file in a temp folder)")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--fill",
        choices=("add_many", "direct", "existing"),
        default="add_many",
        help="existing: measure the rows already in --namespace of --url (e.g. a copy of "
        "bench_peers' 10M file), loading nothing",
    )
    parser.add_argument("--namespace", help="with --fill existing: the namespace to measure")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--adds", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--bulk-rows", type=int, default=100_000)
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="simstore-bench-"))
    url = args.url or f"sqlite:///{folder / 'bench.db'}"
    sqlite = url.startswith("sqlite")
    rng = random.Random(20261129)
    if sqlite and args.bulk_rows:
        values = [rng.getrandbits(64) for _ in range(args.bulk_rows)]
        mine, floor_rate = bulk_rates(values, args.batch)
        print(
            f"bulk add_many into an empty store, {args.bulk_rows:,} rows: {mine:,.0f} rows/s; "
            f"raw executemany floor {floor_rate:,.0f} rows/s ({mine / floor_rate:.2f}x)"
        )
    namespace = args.namespace or f"bench-{uuid.uuid4().hex[:8]}"
    if (args.fill == "existing") != (args.namespace is not None):
        raise SystemExit("--namespace goes with --fill existing (and only with it)")
    store = SimStore(url, namespace=namespace, auto_upgrade=True, policy=SimHashOnly())
    stored = [rng.getrandbits(64) for _ in range(args.rows)]

    start = time.perf_counter()
    if args.fill == "existing":
        stored = sample_stored(store, 4 * (args.queries + args.adds), rng)
        args.rows = store.stats().kept
    elif args.fill == "direct":
        if not sqlite:
            raise SystemExit("--fill direct writes SQLite files only")
        write_rows(Path(url.removeprefix("sqlite:///")), store.ns_id, 0, stored)
    else:
        for _decision in store.add_many(
            ({"key": f"k{i}", "fingerprint": value} for i, value in enumerate(stored)),
            batch_size=args.batch,
        ):
            pass
    load_seconds = time.perf_counter() - start

    engine = sa.create_engine(url)
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        elif engine.dialect.name == "postgresql":
            connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                "VACUUM ANALYZE simstore_fingerprints"
            )
    engine.dispose()

    random_queries = [rng.getrandbits(64) for _ in range(args.queries)]
    planted = [near(rng.choice(stored), rng, rng.randrange(0, 4)) for _ in range(args.queries)]
    raw_floor = RawSqlite(url, namespace) if sqlite else None
    rows: list[tuple[str, list[float], str]] = []
    for _round in range(2):  # the first round warms caches; report the second
        rows = [
            (
                "query k=3, random",
                timed([partial(store.query, fingerprint=q) for q in random_queries]),
                "",
            ),
            (
                "query k=3, near-duplicate",
                timed([partial(store.query, fingerprint=q) for q in planted]),
                "",
            ),
        ]
        if raw_floor is not None:
            raw_floor.candidates.clear()
            samples = timed([partial(raw_floor.query, q) for q in random_queries])
            note = f"{statistics.mean(raw_floor.candidates):.0f} candidates"
            rows.append(("raw sqlite3 query, 4-band UNION ALL", samples, note))
    found = sum(bool(store.query(fingerprint=q)) for q in planted)
    new_values = [rng.getrandbits(64) for _ in range(args.adds)]
    dup_values = [near(rng.choice(stored), rng, 2) for _ in range(args.adds)]
    for label, prefix, values in (
        ("new text", "new", new_values),
        ("duplicate", "dup", dup_values),
    ):
        adds = [partial(store.add, key=f"{prefix}{i}", fingerprint=v) for i, v in enumerate(values)]
        rows.append((f"add (insert-if-new), {label}", timed(adds), ""))
    if sqlite:
        raw_add = RawAdd(Path(url.removeprefix("sqlite:///")), store.ns_id)
        calls = [partial(raw_add.add, f"raw{i}", rng.getrandbits(64)) for i in range(args.adds)]
        rows.append(("raw sqlite3 add, same statements", timed(calls), ""))
    batched = [{"key": f"b{i}", "fingerprint": rng.getrandbits(64)} for i in range(10 * args.adds)]
    start = time.perf_counter()
    for _decision in store.add_many(batched, batch_size=100):
        pass
    batched_rate = len(batched) / (time.perf_counter() - start)

    dialect = url.split(":", 1)[0]
    print(
        f"simstore store benchmark: {dialect}, {args.rows:,} kept fingerprints, namespace {namespace}"
    )
    if args.fill != "existing":
        print(
            f"fill via {args.fill}: {args.rows / load_seconds:,.0f} rows/s ({load_seconds:.0f} s)"
        )
    print(f"sustained insert-if-new, add_many in batches of 100: {batched_rate:,.0f} adds/s")
    print(f"planted near-duplicate queries that found their target: {found}/{len(planted)}")
    print(f"{'operation':40} {'p50 us':>9} {'p99 us':>9} {'vs floor':>9}  note")
    for name, samples, note in rows:
        p50 = statistics.median(samples)
        kind = "add" if "add" in name else "query"
        floor = next(
            (statistics.median(s) for n, s, _ in rows if n.startswith("raw") and kind in n), None
        )
        ratio = f"{p50 / floor:.2f}x" if floor else "-"
        print(f"{name:40} {p50:9.0f} {percentile(samples, 0.99):9.0f} {ratio:>9}  {note}")
    if args.fill != "existing":  # leave a server's database as it was found
        with store.engine.begin() as connection:
            for table in ("simstore_minhash", "simstore_decisions", "simstore_fingerprints"):
                connection.exec_driver_sql(f"DELETE FROM {table} WHERE ns_id = {int(store.ns_id)}")
            connection.exec_driver_sql(
                f"DELETE FROM simstore_namespaces WHERE id = {int(store.ns_id)}"
            )
    store.close()


if __name__ == "__main__":
    main()
