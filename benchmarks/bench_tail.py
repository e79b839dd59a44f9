"""The query tail of two simstore checkouts on one filled window file, each query's best of N.

    python -m benchmarks window-default --rows 10000000 --no-purge   # fills the file
    git worktree add /tmp/before <commit>
    python -m benchmarks tail --rows 10000000 --before /tmp/before

The file is ``bench_window_default``'s (``benchmarks/data/window/``), left as its last run left it.
Each checkout in turn (this one, then ``--before``, ``--alternations`` times), in a child process
with ``PYTHONPATH`` set to it: ``SimStore(url, keep="2d")``, the file read into the OS page cache,
20 queries to prepare the statements, then ``bench_window_default``'s 1,000 warm queries (half new
texts, half near-duplicates) ``--rounds`` times. A query's latency is its best of the rounds, so the
machine's noise is taken out of each query rather than averaged in; the queries only read, so both
checkouts see the same file. Prints p50 / p99 / the sum of the ten slowest per run and the ratios of
the medians over runs. Both checkouts must read the file's schema revision. ``--cpu`` times each
query by this process's CPU time instead of the wall clock (SQLite works in the process, so this
is the query's whole cost but waits): steadier when the machine's other tenants are busy.

``--lookalikes`` times the shape of the 10M file's slowest short queries without the 10M file (an
hour to fill): a small file of template clusters, each ``--cluster-size`` texts that share one long
clause of the pool (the template) and differ in a short one, added through ``SimStore.add_many``
by this checkout (``lookalikes-*.db`` in ``--data-dir``, reused), and as queries five new members
of each cluster. Every kept member is a candidate of a query (their signatures pass the policy's
bar), most reach the Jaccard threshold, and the look-alike check refuses them: hundreds of
candidates confirmed for few matches, as the 10M file's slowest 1% (519 band-key rows, 102
candidates, 1 match).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WARM_QUERIES_SALT = 2  # bench_window_default's query_warm phase
LOOKALIKE_SEED = 5
TEMPLATE_LENGTHS = {"en": (80, 120), "zh": (50, 80)}  # the long clause, characters
FILLER_LENGTHS = (15, 40)  # the short clause that tells cluster members apart


def lookalike_texts(clusters: int, size: int) -> tuple[list[str], list[str]]:
    """(texts to keep, queries): ``clusters`` templates per language, ``size`` members each, and
    five new members of each as queries (``window.load_pool`` must have run)."""
    import bench_window_default as window

    rng = random.Random(LOOKALIKE_SEED)
    kept: list[str] = []
    queries: list[str] = []
    for lang, (low, high) in TEMPLATE_LENGTHS.items():
        pool = window.SENTENCES[lang]
        templates = [s for s in pool if low <= len(s) <= high]
        fillers = [s for s in pool if FILLER_LENGTHS[0] <= len(s) <= FILLER_LENGTHS[1]]
        joiner = "" if lang == "zh" else " "
        for _cluster in range(clusters):
            template = rng.choice(templates)
            members = [template + joiner + rng.choice(fillers) for _ in range(size + 5)]
            kept += members[:size]
            queries += members[size:]
    return kept, queries


def lookalike_file(data_dir: Path, clusters: int, size: int) -> Path:
    return data_dir / f"lookalikes-c{clusters}-m{size}-s{LOOKALIKE_SEED}.db"


def build_lookalikes(data_dir: Path, clusters: int, size: int) -> None:
    """The template clusters' file, added through this checkout's ``SimStore.add_many``."""
    import bench_window_default as window
    from bench_footprint import PAIRS
    from bench_peers import remove_database

    from simstore.store import SimStore

    path = lookalike_file(data_dir, clusters, size)
    if path.exists():
        return
    window.load_pool(PAIRS)
    kept, _queries = lookalike_texts(clusters, size)
    data_dir.mkdir(parents=True, exist_ok=True)
    building = path.with_suffix(".building")
    remove_database(building)
    with SimStore(f"sqlite:///{building}") as store:
        decisions = list(store.add_many((f"k{i}", text) for i, text in enumerate(kept)))
    building.rename(path)
    print(f"  {path.name}: {sum(d.inserted for d in decisions):,} of {len(kept):,} kept")


def child(
    rows: int, data_dir: Path, rounds: int, cpu: bool, lookalikes: tuple[int, int] | None
) -> None:
    """Time the warm queries in this process (the checkout on ``sys.path``) and print JSON."""
    import bench_window_default as window
    from bench_footprint import PAIRS
    from bench_peers import cache_file
    from bench_store import percentile
    from bench_window import END_OF_DAY2

    import simstore
    from simstore.store import SimStore

    window.load_pool(PAIRS)
    keep: str | None = "2d"
    now: datetime | None = END_OF_DAY2  # the window file's end of day 2
    if lookalikes is None:
        path = data_dir / f"window-default-n{rows}-s1.db"
        texts = [text for text, _planted in window.workload(rows, 1000, WARM_QUERIES_SALT)]
        warm_ups = [text for text, _planted in window.workload(rows, 20, 4)]
    else:
        path = lookalike_file(data_dir, *lookalikes)
        kept, texts = lookalike_texts(*lookalikes)
        warm_ups = kept[:: max(1, len(kept) // 20)][:20]  # found rows, but none of the queries'
        keep, now = None, None  # added at the time of building: no window
    store = SimStore(f"sqlite:///{path}", keep=keep)
    cache_file(path)
    for warm_up in warm_ups:  # statements prepared, not the cache
        store.query(warm_up, now=now)
    clock = time.process_time if cpu else time.perf_counter
    best = [float("inf")] * len(texts)
    for _round in range(rounds):
        for j, text in enumerate(texts):
            start = clock()
            store.query(text, now=now)
            best[j] = min(best[j], (clock() - start) * 1e6)
    store.close()
    slowest = sorted(best)[-10:]
    print(
        json.dumps(
            {
                "simstore": str(Path(simstore.__file__).parent),
                "p50_us": round(percentile(best, 0.5)),
                "p99_us": round(percentile(best, 0.99)),
                "slowest_ten_ms": round(sum(slowest) / 1000, 1),
            }
        )
    )


def run(checkout: Path, args: argparse.Namespace) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": f"{checkout}{os.pathsep}{HERE}"}
    command = [sys.executable, str(HERE / "bench_tail.py"), "--child", "--rows", str(args.rows)]
    command += ["--rounds", str(args.rounds), "--data-dir", str(args.data_dir)]
    command += ["--cpu"] if args.cpu else []
    if args.lookalikes:
        command += ["--lookalikes", "--clusters", str(args.clusters)]
        command += ["--cluster-size", str(args.cluster_size)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--before", type=Path, help="the other checkout (a git worktree)")
    parser.add_argument("--rounds", type=int, default=3, help="each query's best of this many")
    parser.add_argument(
        "--cpu", action="store_true", help="this process's CPU time (SQLite's work is in it)"
    )
    parser.add_argument("--alternations", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=HERE / "data" / "window")
    parser.add_argument(
        "--lookalikes", action="store_true", help="template clusters, not the window file"
    )
    parser.add_argument("--clusters", type=int, default=10, help="--lookalikes: per language")
    parser.add_argument("--cluster-size", type=int, default=300, help="--lookalikes: members")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    lookalikes = (args.clusters, args.cluster_size) if args.lookalikes else None
    if args.child:
        child(args.rows, args.data_dir, args.rounds, args.cpu, lookalikes)
        return
    if lookalikes is not None:
        build_lookalikes(args.data_dir, *lookalikes)
    elif not (args.data_dir / f"window-default-n{args.rows}-s1.db").exists():
        raise SystemExit(f"no filled file for {args.rows:,} rows: run bench_window_default first")
    checkouts = {"this": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    for _turn in range(args.alternations):
        for name, checkout in checkouts.items():
            runs[name].append(run(checkout, args))
            print(f"  {name:6} {runs[name][-1]}", flush=True)
    for figure in ("p50_us", "p99_us", "slowest_ten_ms"):
        medians = {name: statistics.median(r[figure] for r in runs[name]) for name in runs}
        line = f"{figure}: " + ", ".join(f"{name} {value:,.1f}" for name, value in medians.items())
        if "before" in medians and medians["this"]:
            line += f"; this is {medians['before'] / medians['this']:.2f}x faster"
        print(line)


if __name__ == "__main__":
    main()
