"""The seeds' workload on SQLite: N bare fingerprints kept over a two-day window, queried, then
purged.

    python -m benchmarks window --rows 50000000 --queries 2000

Builds (or reuses, from the git-ignored ``benchmarks/data/window/``) a SQLite file holding N random
fingerprints added evenly over two days (``SimHashOnly``), loaded through ``SimStore.load``
(``common.fills.load_fingerprints``: add_many would keep every random fingerprint too, only far
more slowly). Then, through ``SimStore(keep="2d")`` at the end of day 2: k = 3 query p50 / p99
(half random, half planted 1-3 bits from a kept fingerprint; as the build left the OS page cache,
then with the file read into it, as a long-running service's would be), disk bytes per row, and
the process's memory (resident: anonymous, and file pages of the memory-mapped database). Then
``purge`` at the end of day 3, which must remove day 1 (half the rows) in batches while nothing
else runs, and the query latency again. The purge changes the file: the next run rebuilds it
(``--no-purge`` keeps it).
"""

from __future__ import annotations

import multiprocessing
import random
import sqlite3
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from simstore.policy.policies import SimHashOnly
from simstore.store import SimStore

from ..common import cli
from ..common.corpus import DATA, DAY1, DAY3_ENDS, END_OF_DAY2, SPAN, fingerprints, near
from ..common.databases import cache_file, file_bytes, marker_of, remove_database
from ..common.fills import load_fingerprints
from ..common.measure import memory, percentile


def latencies(store: SimStore, queries: list[int], now: datetime) -> tuple[float, float, int]:
    """p50 and p99 (us) of k = 3 queries at ``now``, and how many found something."""
    samples, found = [], 0
    for value in queries:
        start = time.perf_counter()
        found += bool(store.query(fingerprint=value, now=now))
        samples.append((time.perf_counter() - start) * 1e6)
    return percentile(samples, 0.5), percentile(samples, 0.99), found


def _purge(path: Path) -> None:
    # without a policy: the store adopts the file's own (bare or default: purge is the same)
    with SimStore(f"sqlite:///{path}", keep="2d") as store:
        store.purge(now=DAY3_ENDS)


def lowest_ids(path: Path) -> tuple[int, int]:
    connection = sqlite3.connect(path)
    try:
        return tuple(  # type: ignore[return-value]
            connection.execute(f"SELECT COALESCE(MIN(id), 0) FROM {table}").fetchone()[0]
            for table in ("simstore_fingerprints", "simstore_decisions")
        )
    finally:
        connection.close()


def timed_purge(path: Path, minutes: float) -> tuple[int, float, bool]:
    """Run ``purge`` in a child process for at most ``minutes``; (rows deleted, s, finished).

    Rows went in in time order with ids 1..N in both tables and purge deletes by partition in
    id order, fingerprints first: the lowest remaining ids say how far it got (the child is
    killed at the limit, which simstore's batched purge survives by design).
    """
    child = multiprocessing.get_context("spawn").Process(target=_purge, args=(path,))
    started = time.perf_counter()
    child.start()
    child.join(timeout=minutes * 60)
    finished = not child.is_alive()
    if not finished:
        child.kill()
        child.join()
    seconds = time.perf_counter() - started
    fingerprint_id, decision_id = lowest_ids(path)
    # MIN(id) is 0 once a table is empty (or had no rows: a kept row is its own decision)
    return max(fingerprint_id - 1, 0) + max(decision_id - 1, 0), seconds, finished


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser("window", __doc__)
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-purge", action="store_true", help="measure queries only")
    parser.add_argument(
        "--purge-minutes", type=float, default=15, help="stop the purge after this long"
    )
    parser.add_argument("--data-dir", type=Path, default=DATA / "window")
    args = parser.parse_args(argv)

    values = fingerprints(args.rows, args.seed)
    path = args.data_dir / f"window-n{args.rows}-s{args.seed}.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not marker_of(path).exists():
        remove_database(path)
        print(f"building {path} ({args.rows:,} rows over two days) ...", flush=True)
        started = time.perf_counter()
        with SimStore(f"sqlite:///{path}", policy=SimHashOnly()) as store:
            load_fingerprints(store, values, start=DAY1, span=SPAN)
        print(f"  built in {time.perf_counter() - started:,.0f} s", flush=True)
        marker_of(path).write_text(f'{{"rows": {args.rows}}}\n')

    rng = random.Random(args.seed)
    picks = rng.sample(range(args.rows), args.queries // 2)
    queries = [rng.getrandbits(64) for _ in range(args.queries - len(picks))]
    queries += [near(int(values[i]), rng, rng.randrange(1, 4)) for i in picks]
    rng.shuffle(queries)
    del values
    disk = file_bytes(path)

    store = SimStore(f"sqlite:///{path}", keep="2d", policy=SimHashOnly())
    print(f"SQLite, {args.rows:,} rows over two days, keep 2d, k = 3, {len(queries):,} queries")
    latencies(store, queries[: args.queries // 4], END_OF_DAY2)  # warm-up
    p50, p99, found = latencies(store, queries, END_OF_DAY2)
    print(f"  query, as the build left the page cache: p50 {p50:,.0f} us, p99 {p99:,.0f} us")
    cache_file(path)  # what a long-running service's file looks like: in the OS page cache
    p50, p99, found = latencies(store, queries, END_OF_DAY2)
    print(
        f"  query, file read into the page cache: p50 {p50:,.0f} us, p99 {p99:,.0f} us "
        f"(found {found}, planted {len(picks)})"
    )
    print(f"  disk {disk / 2**30:.2f} GiB = {disk / args.rows:.0f} bytes per row (with decisions)")
    print(f"  memory after the queries (MiB): {memory()}")
    if args.no_purge:
        store.close()
        return
    marker_of(path).unlink()  # the purge changes the file
    store.close()
    purged, seconds, finished = timed_purge(path, args.purge_minutes)
    rate = purged / seconds
    print(
        f"  purge of day 1 ({args.rows:,} rows: fingerprints and decisions): {purged:,} rows in "
        f"{seconds:,.0f} s = {rate:,.0f} rows/s"
        + (
            ""
            if finished
            else f", stopped at the time limit (all of it: ~{args.rows / rate / 60:,.0f} min)"
        )
    )
    store = SimStore(f"sqlite:///{path}", keep="2d", policy=SimHashOnly())
    if finished and store.stats().kept != args.rows - args.rows // 2:
        raise SystemExit(f"expected {args.rows - args.rows // 2:,} rows after the purge")
    cache_file(path)
    p50, p99, found = latencies(store, queries, DAY3_ENDS)
    print(f"  after the purge: query p50 {p50:,.0f} us, p99 {p99:,.0f} us (found {found})")
    print(f"  memory (MiB): {memory()}")
    store.close()


if __name__ == "__main__":
    main()
