"""Purging a day on PostgreSQL: dropping a partition against batched deletes, same rows.

    python -m benchmarks purge --url postgresql+psycopg://root@127.0.0.1/test
    python -m benchmarks purge --url ... --rows-per-day 10000000

Makes two fresh databases on the server (dropped at the end): one plain, one partitioned by day
(``simstore.storage.partitions``, keep 1 day). Both get the same rows by COPY: two days of random
fingerprints, kept (a kept row is its decision's record: no decision rows), by COPY, because
``add_many`` would make this a benchmark of inserts. Then, on each, times k = 3 queries (the partitioned one seeks in every partition's
index) and ``SimStore.purge`` on the morning of day 3, which must remove day 1 entirely.
"""

from __future__ import annotations

import argparse
import random
import time
import uuid
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from bench_store import percentile
from sqlalchemy.engine import make_url

from simstore.policy.policies import SimHashOnly
from simstore.storage import migrate, partitions
from simstore.storage.db import create_engine_for
from simstore.storage.retention import partition_of
from simstore.store import SimStore
from simstore.text.encoding import bands, to_signed

DAY1 = datetime(2026, 3, 1)
PURGE_AT = DAY1 + timedelta(days=2)  # keep 1 day: day 1 is out, day 2 is in
FINGERPRINT_COLUMNS = "ns_id, key, fp, b0, b1, b2, b3, added_at, part"


def create_database(base: str) -> str:
    name = f"simstore_bench_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return make_url(base).set(database=name).render_as_string(hide_password=False)


def drop_database(base: str, url: str) -> None:
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f"DROP DATABASE IF EXISTS {make_url(url).database} WITH (FORCE)"))
    admin.dispose()


def load(url: str, ns_id: int, values: list[int], partition_seconds: int) -> float:
    """COPY the rows (half on day 1, half on day 2) into both tables; seconds taken."""
    engine = create_engine_for(url)
    started = time.perf_counter()
    raw: Any = engine.raw_connection()
    try:
        cursor = raw.cursor()
        half = len(values) // 2
        times = [
            DAY1 + timedelta(days=i >= half, seconds=(i % half) * 86400 // half)
            for i in range(len(values))
        ]
        parts = [partition_of(at, partition_seconds) for at in times]
        with cursor.copy(f"COPY simstore_fingerprints ({FINGERPRINT_COLUMNS}) FROM STDIN") as rows:
            for i, value in enumerate(values):
                rows.write_row(
                    (ns_id, f"k{i}", to_signed(value), *bands(value), times[i], parts[i])
                )
        raw.commit()
        cursor.execute("ANALYZE")
        raw.commit()
    finally:
        raw.close()
        engine.dispose()
    return time.perf_counter() - started


def query_latency(store: SimStore, rng: random.Random, count: int) -> tuple[float, float]:
    samples = []
    for _ in range(count):
        value = rng.getrandbits(64)
        start = time.perf_counter()
        store.query(fingerprint=value, now=DAY1 + timedelta(days=1, hours=12))
        samples.append((time.perf_counter() - start) * 1e6)
    return percentile(samples, 0.5), percentile(samples, 0.99)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--url", default="postgresql+psycopg://root@127.0.0.1:5432/test")
    parser.add_argument("--rows-per-day", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=2000)
    args = parser.parse_args()
    rng = random.Random(1)
    values = [rng.getrandbits(64) for _ in range(2 * args.rows_per_day)]
    print(f"{2 * args.rows_per_day:,} kept rows over two days")
    print(
        f"{'layout':<12} {'load s':>7} {'query p50 us':>13} {'p99 us':>8} {'purge s':>8} {'rows':>10}"
    )
    for layout in ("plain", "partitioned"):
        url = create_database(args.url)
        try:
            migrate.upgrade(url)
            if layout == "partitioned":
                engine = create_engine_for(url)
                with engine.begin() as conn:
                    partitions.enable(conn, interval="1d", keep="1d", now=DAY1)
                engine.dispose()
            with SimStore(url, keep="1d", policy=SimHashOnly()) as store:
                seconds = load(url, store.ns_id, values, store.partition_seconds)
                p50, p99 = query_latency(store, random.Random(2), args.queries)
                started = time.perf_counter()
                purged = store.purge(now=PURGE_AT)
                purge_seconds = time.perf_counter() - started
                left = store.stats().kept
            if left != args.rows_per_day:
                raise SystemExit(f"{layout}: {left} rows left, expected {args.rows_per_day}")
            print(
                f"{layout:<12} {seconds:>7.1f} {p50:>13.0f} {p99:>8.0f} {purge_seconds:>8.2f} "
                f"{purged:>10,}"
            )
        finally:
            drop_database(args.url, url)


if __name__ == "__main__":
    main()
