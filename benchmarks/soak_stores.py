"""Open, use and drop (no ``close()``) many stores in one process: threads, files and memory stay flat.

    python -m benchmarks soak-stores [--stores 10000] [--every 1000] [--files 10]

What a program that opens a store per request or per pair does. Each store is opened on one of
``--files`` SQLite files in turn (every 10th on ``sqlite://`` instead), adds a text and queries it,
every 5th also adds from a short-lived thread of its own, and is then dropped without ``close()``.
Every ``--every`` stores one row: threads (``threading.active_count``), open file descriptors
(``/proc/self/fd``) and resident memory (``VmRSS``). simstore 0.x before issue 34 kept a
checkpoint thread and its connections per dropped store: 51 threads after 50 stores. Linux only.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

from simstore.store import SimStore

TEXT = "soak text {n}: the store is opened, used once and dropped without close, request {n}"


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def use_and_drop(url: str, n: int) -> None:
    store = SimStore(url)
    store.add(TEXT.format(n=n), key=f"k{n}")
    store.query(TEXT.format(n=n))
    if n % 5 == 0:
        worker = threading.Thread(target=lambda: store.add(TEXT.format(n=-n), key=f"t{n}"))
        worker.start()
        worker.join()
    # dropped here: no close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--stores", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=1_000)
    parser.add_argument("--files", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        urls = [f"sqlite:///{Path(folder) / f'soak-{i}.db'}" for i in range(args.files)]
        started = time.perf_counter()
        print(f"{'stores':>7} {'threads':>7} {'open fds':>8} {'RSS MiB':>8} {'s':>6}")
        print(f"{0:>7} {threading.active_count():>7} {open_files():>8} {rss_mib():>8.1f} {0:>6.0f}")
        for n in range(1, args.stores + 1):
            url = "sqlite://" if n % 10 == 0 else urls[n % args.files]
            use_and_drop(url, n)
            if n % args.every == 0:
                took = time.perf_counter() - started
                print(
                    f"{n:>7} {threading.active_count():>7} {open_files():>8} "
                    f"{rss_mib():>8.1f} {took:>6.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
