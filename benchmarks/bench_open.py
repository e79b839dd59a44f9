"""Opening a SimStore on an existing SQLite file: what a web app or a CLI pays on every start.

    python -m benchmarks open [--opens 300] [--rows 1000]

Makes one SQLite file with ``--rows`` kept texts (the default policy), then opens it ``--opens``
times in this process, each a new ``SimStore(url)`` (engine, schema check, namespace read) closed
right after, and once more in ``--processes`` fresh interpreters (the first open of a process,
which also compiles the statements and reads the migration scripts). Prints p50 / p99 in ms.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_store import percentile

from simstore.store import SimStore

CHILD = """
import sys, time
t0 = time.perf_counter()
from simstore.store import SimStore
t1 = time.perf_counter()
SimStore(sys.argv[1]).close()
t2 = time.perf_counter()
print((t1 - t0) * 1e3, (t2 - t1) * 1e3)
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--opens", type=int, default=300)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--processes", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'open.db'}"
        with SimStore(url) as store:
            store.add_many(
                [
                    (f"k{i}", f"text number {i}: {'lorem ipsum ' * (i % 7 + 1)}")
                    for i in range(args.rows)
                ]
            )
        samples = []
        for _ in range(args.opens):
            started = time.perf_counter()
            store = SimStore(url)
            samples.append((time.perf_counter() - started) * 1e3)
            store.close()
        first = []
        for _ in range(args.processes):
            out = subprocess.run(
                [sys.executable, "-c", CHILD, url], capture_output=True, text=True, check=True
            ).stdout.split()
            first.append(float(out[1]))
    print(f"SQLite file, {args.rows:,} kept texts; ms")
    print(f"{'open':<40} {'p50':>8} {'p99':>8}")
    print(
        f"{'SimStore(url), warm process':<40} {percentile(samples, 0.5):>8.2f} "
        f"{percentile(samples, 0.99):>8.2f}"
    )
    print(
        f"{'SimStore(url), first in a process':<40} {percentile(first, 0.5):>8.2f} "
        f"{max(first):>8.2f}"
    )


if __name__ == "__main__":
    main()
