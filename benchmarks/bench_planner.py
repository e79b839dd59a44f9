"""Where the pair plan overtakes the band plan: SimStore query latency by lookup and table size.

    python -m benchmarks planner                       # 100k .. 3M rows, about 5 minutes
    python -m benchmarks planner --sizes 1000000,10000000,30000000

One SQLite file grows through the sizes. Rows are written straight into ``simstore_fingerprints``
(random 64-bit fingerprints: the chance of two within 3 bits among 10M is about 0.1, so ``add_many``
would keep every row too; writing them directly builds 10M rows in minutes instead of tens of
minutes). At each size three stores on the same file answer the same k = 3 queries (half random,
half 1-3 bits from a stored row), interleaved in rounds: ``lookup="bands"`` (4 x 16-bit band
equality), ``lookup="pairs"`` (the 32-bit halves at radius 1) and ``"auto"`` (the planner's pick).
All three must return the same matches. Prints p50/p99 in microseconds and candidates per query.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from bench_store import near, percentile, write_rows

from simstore.policy.policies import SimHashOnly
from simstore.policy.probes import prefers_pairs
from simstore.storage.retention import utc_naive
from simstore.store import SimStore
from simstore.text.encoding import bands

DATA = Path(__file__).resolve().parent / "data" / "planner"
LOOKUPS = ("bands", "pairs", "auto")


def grow(path: Path, ns_id: int, start: int, stop: int, seed: int) -> list[int]:
    """Write rows start..stop-1 (fingerprints from a per-step seeded stream) and return them."""
    rng = random.Random(f"{seed}-{start}-{stop}")
    values = [rng.getrandbits(64) for _ in range(stop - start)]
    write_rows(path, ns_id, start, values)
    return values


def measure(stores: dict[str, SimStore], queries: list[int], rounds: int) -> dict[str, list[float]]:
    """Per lookup, microseconds per query; rounds interleave the stores in rotating order."""
    samples: dict[str, list[float]] = {name: [] for name in stores}
    names = list(stores)
    per_round = max(1, len(queries) // rounds)
    for round_no in range(rounds):
        part = queries[round_no * per_round : (round_no + 1) * per_round]
        order = names[round_no % len(names) :] + names[: round_no % len(names)]
        for name in order:
            query = stores[name].query
            for value in part:
                start = time.perf_counter()
                query(fingerprint=value)
                samples[name].append((time.perf_counter() - start) * 1e6)
    return samples


def candidates_per_query(store: SimStore, queries: list[int]) -> float:
    """Rows the store's lookup fetches per query (outside the timed runs)."""
    finder = store._finder  # counting what the lookup returns, outside the timed runs
    from simstore.policy.policies import Item

    counts = []
    with store.connections.reading() as conn:
        for value in queries:
            item = Item("q", value, None, 3)
            params = finder._window_params(utc_naive(None))
            if finder.uses_pairs(conn, 3):
                found = finder._pair_rows(conn, item, params)
            else:
                per_band = [{v} for v in bands(value)]
                found = finder._band_rows(conn, per_band, params)
            counts.append(len({row_id for row_id, _value in found}))
    return statistics.mean(counts)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--sizes", default="100000,300000,1000000,3000000")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))

    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"planner-s{args.seed}.db"
    for leftover in DATA.glob(f"{path.name}*"):
        leftover.unlink()
    url = f"sqlite:///{path}"
    with SimStore(url, namespace="bench", policy=SimHashOnly()) as first:
        ns_id = first.ns_id
    rng = random.Random(args.seed)
    stored: list[int] = []
    print(f"{'rows':>11} {'lookup':>6} {'p50 us':>8} {'p99 us':>8} {'cand/q':>8}  auto picks")
    for size in sizes:
        started = time.perf_counter()
        stored += grow(path, ns_id, len(stored), size, args.seed)
        load = time.perf_counter() - started
        half = args.queries // 2
        queries = [rng.getrandbits(64) for _ in range(half)]
        queries += [near(rng.choice(stored), rng, rng.randrange(1, 4)) for _ in range(half)]
        rng.shuffle(queries)
        stores = {
            name: SimStore(url, namespace="bench", policy=SimHashOnly(), lookup=name)
            for name in LOOKUPS
        }
        answers = {
            name: [[m.key for m in store.query(fingerprint=q)] for q in queries[:300]]
            for name, store in stores.items()
        }  # also the warm-up
        if not answers["bands"] == answers["pairs"] == answers["auto"]:
            raise SystemExit("the lookups disagree: a plan is not exact")
        samples = measure(stores, queries, args.rounds)
        pick = "pairs" if prefers_pairs(3, size) else "bands"
        for name in LOOKUPS:
            cand = candidates_per_query(stores[name], queries[:200])
            print(
                f"{size:>11,} {name:>6} {percentile(samples[name], 0.5):>8.0f} "
                f"{percentile(samples[name], 0.99):>8.0f} {cand:>8.1f}"
                + (f"  {pick} (rows written in {load:.0f} s)" if name == "auto" else "")
            )
        ratio = percentile(samples["pairs"], 0.5) / percentile(samples["bands"], 0.5)
        print(f"{'':>11} pairs/bands p50 = {ratio:.2f}")
        for store in stores.values():
            store.close()
    print(f"file: {path} ({path.stat().st_size / len(stored):.0f} bytes/row, no decisions rows)")


if __name__ == "__main__":
    main()
