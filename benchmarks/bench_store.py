"""Add and query latency of SimStore at N kept fingerprints, on any database URL.

    python benchmarks/bench_store.py                                  # SQLite temp file, 1M rows
    python benchmarks/bench_store.py --url postgresql+psycopg://root@127.0.0.1/bench --rows 1000000

Loads N random 64-bit fingerprints through ``add_many`` (fingerprints given, so only the store is
measured), then times single ``query`` calls at k=3 (random and planted near-duplicate queries) and
single ``add`` calls, and prints one table with p50/p99. On SQLite it also times the same 4-band
UNION ALL through the raw ``sqlite3`` module on the same file: the floor simstore is compared with.
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

from simstore.encoding import bands, to_signed
from simstore.store import SimStore


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
        self.connection = sqlite3.connect(url.removeprefix("sqlite:///"))
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--url", help="database URL (default: a new SQLite file in a temp folder)")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--adds", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=10_000)
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="simstore-bench-"))
    url = args.url or f"sqlite:///{folder / 'bench.db'}"
    rng = random.Random(20261129)
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    store = SimStore(url, namespace=namespace, auto_upgrade=True)
    stored = [rng.getrandbits(64) for _ in range(args.rows)]

    start = time.perf_counter()
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
    raw_floor = RawSqlite(url, namespace) if url.startswith("sqlite") else None
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
            rows.append(("raw sqlite3 4-band UNION ALL (floor)", samples, note))
    found = sum(bool(store.query(fingerprint=q)) for q in planted)
    new_values = [rng.getrandbits(64) for _ in range(args.adds)]
    dup_values = [near(rng.choice(stored), rng, 2) for _ in range(args.adds)]
    for label, prefix, values in (
        ("new text", "new", new_values),
        ("duplicate", "dup", dup_values),
    ):
        adds = [partial(store.add, key=f"{prefix}{i}", fingerprint=v) for i, v in enumerate(values)]
        rows.append((f"add (insert-if-new), {label}", timed(adds), ""))

    dialect = url.split(":", 1)[0]
    print(
        f"simstore store benchmark: {dialect}, {args.rows:,} kept fingerprints, namespace {namespace}"
    )
    print(f"bulk load via add_many: {args.rows / load_seconds:,.0f} rows/s ({load_seconds:.0f} s)")
    print(f"planted near-duplicate queries that found their target: {found}/{len(planted)}")
    floor = next((statistics.median(s) for name, s, _ in rows if name.startswith("raw")), None)
    print(f"{'operation':40} {'p50 us':>9} {'p99 us':>9} {'vs floor':>9}  note")
    for name, samples, note in rows:
        p50 = statistics.median(samples)
        ratio = f"{p50 / floor:.2f}x" if floor else "-"
        print(f"{name:40} {p50:9.0f} {percentile(samples, 0.99):9.0f} {ratio:>9}  {note}")
    store.close()


if __name__ == "__main__":
    main()
