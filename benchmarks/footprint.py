"""What a store costs to hold and to open: bytes per kept text by table and index, the time to
open a store on an existing file, and threads, files and memory of many stores dropped unclosed.

    python -m benchmarks footprint [--texts 20000] [--batch 500] [--url SERVER_URL] [--purge]
    python -m benchmarks open [--opens 300] [--rows 1000] [--processes 10]
    python -m benchmarks soak-stores [--stores 10000] [--every 1000] [--files 10]

``footprint`` (``bytes``). Real text: the ``a`` and ``b`` texts of the quality dataset
(``common.corpus.dataset_texts``: Chinese and English, a few characters to 35 kB; many pairs are
near-duplicates, so fewer texts are kept than added), in a fixed shuffled order, through
``SimStore.add_many`` with the default policy. SQLite: a fresh file, sized afterwards with the
``dbstat`` virtual table (every page of every table and index). PostgreSQL (``--url``): a
database of its own, created and dropped, sized with ``pg_relation_size`` for each table (its
heap and its TOAST table) and each index after VACUUM; MySQL/MariaDB: InnoDB's persistent
statistics (``mysql.innodb_index_stats``) after ANALYZE TABLE. Prints one row per B-tree (or
heap) with its bytes and bytes per kept text, then the total. ``--purge``: the texts are added
over two days (half each) and, after the sizes, ``SimStore(keep="1d").purge()`` on day 3 removes
day 1; prints the rows purged per second.

``open``. Opening a SimStore on an existing SQLite file: what a web app or a CLI pays on every
start. One file with ``--rows`` kept texts (the default policy), opened ``--opens`` times in this
process (engine, schema check, namespace read; closed right after), and once more in
``--processes`` fresh interpreters (the first open of a process, which also compiles the
statements and reads the migration scripts). Then ``--opens`` stores on new, empty files: made
from the packaged schema file (what ``SimStore`` does) and, as the yardstick in the same run, by
running every migration script first (``migrate.upgrade_by_scripts``, what it did before). Prints
p50 / p99 in ms and the ratio of the two p50s.

``soak-stores``. Open, use and drop (no ``close()``) many stores in one process: threads, files
and memory must stay flat. Each store is opened on one of ``--files`` SQLite files in turn (every
10th on ``sqlite://``), adds a text and queries it, every 5th also adds from a short-lived thread
of its own, and is then dropped without ``close()``. Every ``--every`` stores one row: threads
(``threading.active_count``), open file descriptors (``/proc/self/fd``) and resident memory
(``VmRSS``). A store that kept a checkpoint thread and its connections after being dropped would
show one thread more per store. Linux only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from simstore.storage import migrate
from simstore.store import SimStore

from .common import cli
from .common.corpus import DAY1, PAIRS, dataset_texts
from .common.databases import report, scratch_database, server_sizes, sqlite_sizes
from .common.fills import add_all
from .common.measure import memory, percentile


def fill(url: str, corpus: list[str], batch: int) -> tuple[int, float]:
    """Add the corpus through ``add_many`` (half on day 1, half on day 2); (texts kept, seconds)."""
    started = time.perf_counter()
    half = max(len(corpus) // 2, 1)
    with SimStore(url, auto_upgrade=True) as store:
        items = [
            {"key": f"t{i}", "text": text, "at": DAY1 + timedelta(days=i >= half, seconds=i)}
            for i, text in enumerate(corpus)
        ]
        _added, kept, _at = add_all(store, items, batch_size=batch)
    return kept, time.perf_counter() - started


def purge(url: str) -> None:
    """Purge day 1 on day 3 (keep 1 day) and print the rate."""
    with SimStore(url, keep="1d") as store:
        started = time.perf_counter()
        rows = store.purge(now=DAY1 + timedelta(days=2))
        seconds = time.perf_counter() - started
    print(
        f"purge of day 1: {rows:,} rows (kept rows and decisions) in {seconds:.2f} s, "
        f"{rows / seconds:,.0f} rows/s"
    )


def footprint(argv: Sequence[str]) -> None:
    parser = cli.parser("footprint", __doc__)
    parser.add_argument("--texts", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--pairs", type=Path, default=PAIRS, help="the quality dataset's pairs")
    parser.add_argument("--purge", action="store_true", help="then time a purge of day 1")
    parser.add_argument(
        "--url", help="a PostgreSQL or MySQL/MariaDB server URL (a database of its own is made)"
    )
    args = parser.parse_args(argv)
    corpus = dataset_texts(args.texts, args.pairs)
    chars = sum(map(len, corpus))
    print(f"{len(corpus):,} texts, {chars / len(corpus):,.0f} characters on average")
    if args.url is None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "footprint.db"
            kept, seconds = fill(f"sqlite:///{path}", corpus, args.batch)
            print(f"add_many: {seconds:.1f} s, {len(corpus) / seconds:,.0f} texts/s")
            report("SQLite (dbstat)", sqlite_sizes(path), kept, len(corpus))
            print(
                f"file: {path.stat().st_size:,} bytes ({path.stat().st_size / kept:,.0f} per kept)"
            )
            if args.purge:
                purge(f"sqlite:///{path}")
        return
    with scratch_database(args.url, "simstore_footprint") as url:
        kept, seconds = fill(url, corpus, args.batch)
        print(f"add_many: {seconds:.1f} s, {len(corpus) / seconds:,.0f} texts/s")
        report(*server_sizes(url), kept, len(corpus))
        if args.purge:
            purge(url)


# --- open ---------------------------------------------------------------------------------------

CHILD = """
import sys, time
t0 = time.perf_counter()
from simstore.store import SimStore
t1 = time.perf_counter()
SimStore(sys.argv[1]).close()
t2 = time.perf_counter()
print((t1 - t0) * 1e3, (t2 - t1) * 1e3)
"""


def open_store(argv: Sequence[str]) -> None:
    parser = cli.parser("open", __doc__)
    parser.add_argument("--opens", type=int, default=300)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--processes", type=int, default=10)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'open.db'}"
        with SimStore(url) as store:
            texts = ((f"k{i}", f"text number {i}: {'lorem ipsum ' * (i % 7 + 1)}")
                     for i in range(args.rows))  # fmt: skip
            _added, kept, _at = add_all(store, texts)
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
    print(f"SQLite file, {kept:,} kept texts; ms")
    print(f"{'open':<40} {'p50':>8} {'p99':>8}")
    print(
        f"{'SimStore(url), warm process':<40} {percentile(samples, 0.5):>8.2f} "
        f"{percentile(samples, 0.99):>8.2f}"
    )
    print(
        f"{'SimStore(url), first in a process':<40} {percentile(first, 0.5):>8.2f} "
        f"{max(first):>8.2f}"
    )
    made, scripted = _new_files(args.opens)
    for label, found in (("SimStore(new file)", made), ("the same, by every script", scripted)):
        print(f"{label:<40} {percentile(found, 0.5):>8.2f} {percentile(found, 0.99):>8.2f}")
    print(f"new file from the schema file / by the scripts, p50: {_ratio(made, scripted):.2f}")


def _new_files(count: int) -> tuple[list[float], list[float]]:
    """ms to open a store on a new file: made from the schema file, and by the scripts (in turn,
    so that the two share the machine's drift)."""
    made: list[float] = []
    scripted: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(count):
            started = time.perf_counter()
            SimStore(f"sqlite:///{Path(tmp) / f'made{n}.db'}").close()
            made.append((time.perf_counter() - started) * 1e3)
            url = f"sqlite:///{Path(tmp) / f'scripted{n}.db'}"
            started = time.perf_counter()
            migrate.upgrade_by_scripts(url)
            SimStore(url).close()
            scripted.append((time.perf_counter() - started) * 1e3)
    return made, scripted


def _ratio(a: list[float], b: list[float]) -> float:
    return percentile(a, 0.5) / percentile(b, 0.5)


# --- soak-stores --------------------------------------------------------------------------------

TEXT = "soak text {n}: the store is opened, used once and dropped without close, request {n}"


def _use_and_drop(url: str, n: int) -> None:
    store = SimStore(url)
    store.add(TEXT.format(n=n), key=f"k{n}")
    store.query(TEXT.format(n=n))
    if n % 5 == 0:
        worker = threading.Thread(target=lambda: store.add(TEXT.format(n=-n), key=f"t{n}"))
        worker.start()
        worker.join()
    # dropped here: no close()


def soak(argv: Sequence[str]) -> None:
    parser = cli.parser("soak-stores", __doc__)
    parser.add_argument("--stores", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=1_000)
    parser.add_argument("--files", type=int, default=10)
    args = parser.parse_args(argv)

    def row(stores: int, seconds: float) -> str:
        fds = len(os.listdir("/proc/self/fd"))
        rss = memory()["VmRSS"]
        return f"{stores:>7} {threading.active_count():>7} {fds:>8} {rss:>8} {seconds:>6.0f}"

    with tempfile.TemporaryDirectory() as folder:
        urls = [f"sqlite:///{Path(folder) / f'soak-{i}.db'}" for i in range(args.files)]
        started = time.perf_counter()
        print(f"{'stores':>7} {'threads':>7} {'open fds':>8} {'RSS MiB':>8} {'s':>6}")
        print(row(0, 0))
        for n in range(1, args.stores + 1):
            url = "sqlite://" if n % 10 == 0 else urls[n % args.files]
            _use_and_drop(url, n)
            if n % args.every == 0:
                print(row(n, time.perf_counter() - started), flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    """``[bytes|open|soak] [options]`` (default: bytes)."""
    cli.dispatch(
        {
            "bytes": footprint,
            "open": open_store,
            "soak": soak,
        },
        argv,
        "bytes",
    )


if __name__ == "__main__":
    main()
