"""One entry point for every benchmark: ``python -m benchmarks NAME [options]``.

``python -m benchmarks`` lists them by topic; each is a script of this folder whose ``main`` reads
its own options (``python -m benchmarks NAME --help``). Run from the repository root in an
environment with ``pip install -e '.[test,bench]'``; the window and quality benchmarks need the
dataset first (``python -m benchmarks dataset``).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

SUITES: dict[str, dict[str, tuple[str, str]]] = {
    "fingerprints": {
        "fingerprint": (
            "bench_fingerprint",
            "fingerprints a second, every preset against PyPI simhash",
        ),
    },
    "the store against its peers": {
        "peers": (
            "bench_peers",
            "query latency at k = 3 against N kept, beside faiss and SQL peers",
        ),
        "store": ("bench_store", "add and query latency at N kept on any database URL"),
        "add-many": ("bench_add_many", "add_many, text in, against datasketch's MinHashLSH"),
        "open": ("bench_open", "what opening a store on an existing file costs"),
        "planner": ("bench_planner", "where the pair plan overtakes the band plan"),
        "verification": ("bench_verification", "what the default policy costs a query and an add"),
        "versions": ("bench_versions", "query and add latency of two checkouts, alternating"),
    },
    "the default pipeline at scale": {
        "window": ("bench_window", "the seeds' two-day window with bare fingerprints, SQLite"),
        "window-default": ("bench_window_default", "the two-day window, default policy, SQLite"),
        "window-server": ("bench_window_server", "the two-day window on PostgreSQL or MariaDB"),
        "writers": ("bench_writers", "adds/s with 1-8 writer processes on each database"),
        "tail": ("bench_tail", "the slowest queries of two checkouts on one filled window"),
        "footprint": ("bench_footprint", "bytes a kept text, by table and index, any database"),
        "purge": ("bench_purge", "dropping a PostgreSQL partition against batched deletes"),
        "soak-stores": ("soak_stores", "10,000 stores opened, used, dropped: threads, files, RSS"),
    },
    "detection quality": {
        "dataset": ("quality.dataset", "build the labelled pairs from Debian and PyPI text"),
        "quality": (
            "quality.evaluate_policy",
            "one policy: cold pairs, a stream, the sample corpus",
        ),
        "presets": ("quality.evaluate", "every preset's precision and recall by group"),
        "candidates": ("quality.candidates", "candidate sources and their cost at 1M kept texts"),
        "layouts": ("quality.layouts", "MinHash band layouts: the duplicates each would find"),
        "traditional": (
            "quality.traditional",
            "Chinese pairs with a traditional second text: folding on and off",
        ),
    },
    "Spark": {
        "spark": ("bench_spark", "simstore.spark against add_many: time, stages, agreement"),
    },
}
"""Topic -> benchmark name -> (module under benchmarks/, what it measures)."""

BENCHMARKS = {name: entry for suite in SUITES.values() for name, entry in suite.items()}


def listing() -> str:
    lines = ["usage: python -m benchmarks NAME [options]   (NAME --help for its options)", ""]
    for topic, entries in SUITES.items():
        lines.append(f"{topic}:")
        lines += [f"  {name:<15} {what}" for name, (_, what) in entries.items()]
    return "\n".join(lines)


def run(name: str, argv: list[str]) -> int:
    """Run benchmark ``name`` with ``argv`` as its command line; its exit status."""
    module_name, _ = BENCHMARKS[name]
    # the scripts import each other by their file names (``import bench_store``)
    for folder in (HERE, HERE / "quality"):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    module = importlib.import_module(module_name.rpartition(".")[2])
    sys.argv = [f"python -m benchmarks {name}", *argv]
    status = module.main()
    return status if isinstance(status, int) else 0


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help", "list"):
        print(listing())
        return 0
    name = sys.argv[1]
    if name not in BENCHMARKS:
        print(f"unknown benchmark {name!r}\n\n{listing()}", file=sys.stderr)
        return 2
    return run(name, sys.argv[2:])


if __name__ == "__main__":
    raise SystemExit(main())
