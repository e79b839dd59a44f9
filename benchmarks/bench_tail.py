"""The query tail of two simstore checkouts on one filled window file, each query's best of N.

    python benchmarks/bench_window_default.py --rows 10000000 --no-purge   # fills the file
    git worktree add /tmp/before <commit>
    python benchmarks/bench_tail.py --rows 10000000 --before /tmp/before

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
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WARM_QUERIES_SALT = 2  # bench_window_default's query_warm phase


def child(rows: int, data_dir: Path, rounds: int, cpu: bool) -> None:
    """Time the warm queries in this process (the checkout on ``sys.path``) and print JSON."""
    import bench_window_default as window
    from bench_footprint import PAIRS
    from bench_peers import cache_file
    from bench_store import percentile
    from bench_window import END_OF_DAY2

    import simstore
    from simstore.store import SimStore

    window.load_pool(PAIRS)
    path = data_dir / f"window-default-n{rows}-s1.db"
    store = SimStore(f"sqlite:///{path}", keep="2d")
    cache_file(path)
    texts = [text for text, _planted in window.workload(rows, 1000, WARM_QUERIES_SALT)]
    for warm_up, _planted in window.workload(rows, 20, 4):  # statements prepared, not the cache
        store.query(warm_up, now=END_OF_DAY2)
    clock = time.process_time if cpu else time.perf_counter
    best = [float("inf")] * len(texts)
    for _round in range(rounds):
        for j, text in enumerate(texts):
            start = clock()
            store.query(text, now=END_OF_DAY2)
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
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.rows, args.data_dir, args.rounds, args.cpu)
        return
    if not (args.data_dir / f"window-default-n{args.rows}-s1.db").exists():
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
