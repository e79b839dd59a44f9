"""Purging a day on PostgreSQL: dropping a partition against batched deletes, same rows.

    python -m benchmarks purge --url postgresql+psycopg://root@127.0.0.1/test
    python -m benchmarks purge --url ... --rows-per-day 10000000

Makes two fresh databases on the server (dropped at the end): one plain, one partitioned by day
(``simstore.storage.partitions``, keep 1 day). Both get the same rows through ``SimStore.load``:
two days of random fingerprints, every one kept (``common.fills.load_fingerprints``; a kept row
is its decision's record: no decision rows), so that the fill is not a benchmark of
insert-if-new. Then, on each, times k = 3 queries (the partitioned one seeks in every partition's
index) and ``SimStore.purge`` on the morning of day 3, which must remove day 1 entirely.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from datetime import timedelta

import numpy as np

from simstore.policy.policies import SimHashOnly
from simstore.storage import migrate, partitions
from simstore.storage.db import create_engine_for
from simstore.store import SimStore

from .common import cli
from .common.corpus import DAY1
from .common.databases import scratch_database
from .common.fills import load_fingerprints
from .common.measure import percentile, timed

PURGE_AT = DAY1 + timedelta(days=2)  # keep 1 day: day 1 is out, day 2 is in


def load(store: SimStore, values: list[int]) -> float:
    """Load the rows, half on day 1 and half on day 2, through ``SimStore.load``; seconds."""
    started = time.perf_counter()
    half = len(values) // 2
    for day, part in enumerate((values[:half], values[half:])):
        load_fingerprints(
            store, np.array(part, dtype=np.uint64), offset=day * half,
            start=DAY1 + timedelta(days=day), span=timedelta(days=1),
        )  # fmt: skip
    return time.perf_counter() - started


def query_latency(store: SimStore, rng: random.Random, count: int) -> tuple[float, float]:
    """p50 and p99 (us) of ``count`` random k = 3 queries in the middle of day 2."""
    samples: list[float] = []
    now = DAY1 + timedelta(days=1, hours=12)
    for _ in range(count):
        value = rng.getrandbits(64)
        timed(lambda v=value: store.query(fingerprint=v, now=now), samples)
    return percentile(samples, 0.5), percentile(samples, 0.99)


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser("purge", __doc__)
    parser.add_argument("--url", default="postgresql+psycopg://root@127.0.0.1:5432/test")
    parser.add_argument("--rows-per-day", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=2000)
    args = parser.parse_args(argv)
    rng = random.Random(1)
    values = [rng.getrandbits(64) for _ in range(2 * args.rows_per_day)]
    print(f"{2 * args.rows_per_day:,} kept rows over two days")
    print(
        f"{'layout':<12} {'load s':>7} {'query p50 us':>13} {'p99 us':>8} {'purge s':>8} {'rows':>10}"
    )
    for layout in ("plain", "partitioned"):
        with scratch_database(args.url, "simstore_bench") as url:
            migrate.upgrade(url)
            if layout == "partitioned":
                engine = create_engine_for(url)
                with engine.begin() as conn:
                    partitions.enable(conn, interval="1d", keep="1d", now=DAY1)
                engine.dispose()
            with SimStore(url, keep="1d", policy=SimHashOnly()) as store:
                seconds = load(store, values)
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


if __name__ == "__main__":
    main()
