"""Adds a second with 1, 2, 4 and 8 writer processes on SQLite, PostgreSQL and MariaDB, side by
side, with each database's flush on and off.

    python -m benchmarks writers [--kept 100000] [--adds 2000] \
        --postgresql postgresql+psycopg://root@127.0.0.1:5432/postgres \
        --mysql mysql+pymysql://root@127.0.0.1:3306/test [--json FILE]

Each database gets a fresh store (a file in a scratch folder; a database of its own on each
server) filled with ``--kept`` composed texts (``common.corpus``; ``add_many``, default policy).
Then each run adds the same ``--adds`` texts through ``SimStore.add(text)``, half of them new and
half near-duplicates of filled texts (``common.corpus.workload``), dealt round-robin to P
writer processes that start together; every process opens its own store, and the run's figure
is all its adds over the time from the common start to the last process's end. After a run its
keys are removed again (``SimStore.remove``), so every run meets the same kept texts. The
same runs with N threads of one process instead, through one store without and then with
``group_commit=True``, show what group commit buys: the adds that arrive during a commit share
the next transaction.

Checked on every run: no process raised (no deadlock, no lost connection), and the decisions
equal the one-writer run's, text for text (kept, or the duplicate of which filled text). Two new
texts of the workload that match each other can be decided either way round by concurrent
writers; such decisions are counted apart (``order-dependent``), and anything else that differs
is a failure.

The flush. "on" is each database as simstore opens it: PostgreSQL and MariaDB wait for their
log flush at every commit (their defaults), SQLite runs WAL with synchronous=NORMAL and does not
(its commits survive a crash of the application, not a power cut). "off" shows where the flush
is the floor: PostgreSQL through ``SimStore(synchronous_commit=False)``, the opt-in that
simstore offers; MariaDB by setting the server's global ``innodb_flush_log_at_trx_commit`` to 2
for the run (restored afterwards; simstore never does this itself). The writers, the server and
this script share the machine's cores: read the ratios, not the absolutes.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from simstore.results import Decision
from simstore.storage import migrate
from simstore.store import SimStore

from .common import cli
from .common.corpus import PAIRS, compose, load_pool, workload
from .common.databases import scratch_database
from .common.fills import add_all
from .common.measure import percentile
from .common.results import add_output, output, save

Outcome = tuple[bool, str | None]  # kept, or the key of the text it duplicates


def fill(url: str, kept: int) -> int:
    """``kept`` texts through add_many (two planning workers); how many were kept."""
    migrate.upgrade(url)
    with SimStore(url) as store:
        records = ((f"t{i}", compose(i)) for i in range(kept))
        return add_all(store, records, workers=2)[1]


def _outcome(decision: Decision, run_keys: dict[str, int]) -> Outcome:
    """A decision without the run's own key names (``j<index>`` for a text of the run)."""
    of = None if decision.duplicate_of is None else decision.duplicate_of.key
    if of is not None and of in run_keys:
        of = f"j{run_keys[of]}"
    return decision.inserted, of


def _writer(
    url: str,
    texts: Sequence[tuple[int, str]],
    prefix: str,
    synchronous_commit: bool,
    threads: int,
    group_commit: bool,
    start: Barrier,
    results: Any,
) -> None:
    """One writer process: its share of the texts, added one by one after the common start (by
    ``threads`` threads through one store, with ``group_commit`` or without)."""
    outcomes: dict[int, Outcome] = {}
    latencies: list[float] = []
    errors: list[str] = []
    began = ended = 0.0
    run_keys = {f"{prefix}{j}": j for j, _text in texts}

    def add_all(store: SimStore, share: Sequence[tuple[int, str]]) -> None:
        try:
            for j, text in share:
                before = time.perf_counter()
                decision = store.add(text, key=f"{prefix}{j}")
                latencies.append(time.perf_counter() - before)
                outcomes[j] = _outcome(decision, run_keys)
        except Exception as error:  # reported, and the run fails on it
            errors.append(f"{type(error).__name__}: {error}")

    try:
        with SimStore(
            url, synchronous_commit=synchronous_commit, group_commit=group_commit
        ) as store:
            store.query(texts[0][1])  # statements prepared, the tokenizer's dictionary loaded
            start.wait()
            began = time.monotonic()
            workers = [
                threading.Thread(target=add_all, args=(store, texts[t::threads]))
                for t in range(threads)
            ]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            ended = time.monotonic()
    except Exception as error:
        errors.append(f"{type(error).__name__}: {error}")
        start.abort()
    results.put((began, ended, latencies, outcomes, errors))


def run(
    url: str,
    texts: Sequence[str],
    processes: int,
    tag: str,
    synchronous_commit: bool = True,
    threads: int = 1,
    group_commit: bool = False,
) -> dict[str, Any]:
    """``texts`` added by ``processes`` writers at once (each with ``threads`` threads); adds/s,
    latencies, decisions, errors."""
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(processes)
    results = context.Queue()
    numbered = list(enumerate(texts))
    prefix = f"{tag}-"
    workers = [
        context.Process(
            target=_writer,
            args=(
                url,
                numbered[p::processes],
                prefix,
                synchronous_commit,
                threads,
                group_commit,
                start,
                results,
            ),
        )
        for p in range(processes)
    ]
    for worker in workers:
        worker.start()
    reports = [results.get() for _ in workers]
    for worker in workers:
        worker.join()
    errors = [error for report in reports for error in report[4]]
    outcomes: dict[int, Outcome] = {}
    latencies: list[float] = []
    for _began, _ended, their_latencies, their_outcomes, _errors in reports:
        outcomes.update(their_outcomes)
        latencies.extend(their_latencies)
    seconds = max(r[1] for r in reports) - min(r[0] for r in reports) if not errors else 0.0
    with SimStore(url) as store:  # the run's texts leave again: the next run meets the same store
        for j in range(len(texts)):
            store.remove(f"{prefix}{j}")
    return {
        "writers": processes * threads,
        "adds_per_s": round(len(texts) / seconds) if seconds else 0,
        "p50_us": round(percentile(latencies, 0.5) * 1e6) if latencies else 0,
        "p99_us": round(percentile(latencies, 0.99) * 1e6) if latencies else 0,
        "errors": errors,
        "outcomes": outcomes,
    }


def compare(reference: dict[int, Outcome], outcomes: dict[int, Outcome]) -> dict[str, int]:
    """Decisions that differ from one writer's: between two texts of the run, or otherwise."""
    order_dependent = other = 0
    for j, expected in reference.items():
        got = outcomes.get(j)
        if got == expected:
            continue
        within_run = any(o is not None and o[1] is not None and o[1].startswith("j")
                         for o in (expected, got))  # fmt: skip
        if within_run:
            order_dependent += 1
        else:
            other += 1
    return {"order_dependent": order_dependent, "other": other}


@contextlib.contextmanager
def mariadb_flush_off(url: str) -> Iterator[None]:
    """innodb_flush_log_at_trx_commit = 2 on the server for the block, then as it was."""
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            was = conn.exec_driver_sql("SELECT @@GLOBAL.innodb_flush_log_at_trx_commit").scalar()
            conn.exec_driver_sql("SET GLOBAL innodb_flush_log_at_trx_commit = 2")
        try:
            yield
        finally:
            with engine.connect() as conn:
                conn.exec_driver_sql(f"SET GLOBAL innodb_flush_log_at_trx_commit = {int(was)}")
    finally:
        engine.dispose()


def measure_database(
    name: str, url: str, texts: Sequence[str], counts: Sequence[int]
) -> list[dict[str, Any]]:
    """Every run of one database: writer processes with the flush on, threads of one process
    without and with group commit, then writer processes with the flush off (servers)."""
    rows: list[dict[str, Any]] = []
    reference: dict[int, Outcome] | None = None
    flush_off: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    relaxed = True
    if name == "postgresql":
        relaxed = False  # SimStore(synchronous_commit=False)
    elif name == "mariadb":
        flush_off = mariadb_flush_off(url)
    modes = [("processes", "on", True, contextlib.nullcontext())]
    modes.append(("threads", "on", True, contextlib.nullcontext()))
    modes.append(("threads, group commit", "on", True, contextlib.nullcontext()))
    if name != "sqlite":
        modes.append(("processes", "off", relaxed, flush_off))
    for how, flush, synchronous_commit, scope in modes:
        with scope:
            for count in counts:
                if how == "processes":
                    result = run(url, texts, count, f"{flush}{count}", synchronous_commit)
                else:
                    grouped = how == "threads, group commit"
                    tag = f"{'g' if grouped else 't'}{count}"
                    result = run(url, texts, 1, tag, synchronous_commit, count, grouped)
                if reference is None:
                    reference = result["outcomes"]
                differing = compare(reference, result.pop("outcomes"))
                row = {"database": name, "how": how, "flush": flush, **result, **differing}
                rows.append(row)
                print(
                    f"  {name:<10} {how:<21} flush {flush:<3} {count} writer(s): "
                    f"{row['adds_per_s']:>6,} adds/s  p50 {row['p50_us']:>6,} us  "
                    f"p99 {row['p99_us']:>6,} us  errors {len(row['errors'])}  differing "
                    f"{row['other']} (+{row['order_dependent']} order-dependent)",
                    flush=True,
                )
                for error in row["errors"][:3]:
                    print(f"    {error}")
    return rows


def table(rows: Sequence[dict[str, Any]], counts: Sequence[int]) -> str:
    """The adds/s table: a line per database, writers and flush; a column per writer count."""
    header = "| database | writers | flush | " + " | ".join(str(count) for count in counts)
    lines = [header + " | one writer p50 / p99 |", "|---|---|---|" + "---:|" * (len(counts) + 1)]
    for name in dict.fromkeys(row["database"] for row in rows):
        for how, flush in (
            ("processes", "on"),
            ("threads", "on"),
            ("threads, group commit", "on"),
            ("processes", "off"),
        ):
            mine = {
                r["writers"]: r
                for r in rows
                if (r["database"], r["how"], r["flush"]) == (name, how, flush)
            }
            if not mine:
                continue
            cells = " | ".join(f"{mine[count]['adds_per_s']:,}" for count in counts)
            one = mine[counts[0]]
            lines.append(
                f"| {name} | {how} | {flush} | {cells} | {one['p50_us'] / 1000:.1f} / "
                f"{one['p99_us'] / 1000:.1f} ms |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser("writers", __doc__)
    parser.add_argument("--kept", type=int, default=100_000, help="texts filled before the runs")
    parser.add_argument("--adds", type=int, default=2000, help="texts added in each run")
    parser.add_argument("--writers", default="1,2,4,8", help="writer counts, comma-separated")
    parser.add_argument("--postgresql", help="a PostgreSQL server URL (a database is made on it)")
    parser.add_argument("--mysql", help="a MySQL/MariaDB server URL (a database is made on it)")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    add_output(parser)
    args = parser.parse_args(argv)
    counts = [int(count) for count in args.writers.split(",")]
    load_pool(args.pairs)
    texts = [text for text, _planted in workload(args.kept, args.adds, 5)]
    load = os.getloadavg()[0]
    print(f"load average at start: {load:.2f}; {args.kept:,} kept, "
          f"{args.adds:,} adds a run", flush=True)  # fmt: skip
    rows: list[dict[str, Any]] = []
    targets = [] if args.no_sqlite else [("sqlite", None)]
    targets += [(n, u) for n, u in (("postgresql", args.postgresql), ("mariadb", args.mysql)) if u]
    for name, server in targets:
        with contextlib.ExitStack() as stack:
            if server is None:
                folder = stack.enter_context(tempfile.TemporaryDirectory())
                url = f"sqlite:///{folder}/writers.db"
            else:
                url = stack.enter_context(scratch_database(server, "simstore_writers"))
            started = time.perf_counter()
            kept = fill(url, args.kept)
            print(f"{name}: {kept:,} of {args.kept:,} kept in "
                  f"{time.perf_counter() - started:,.0f} s", flush=True)  # fmt: skip
            rows.extend(measure_database(name, url, texts, counts))
    print()
    print(table(rows, counts))
    failures = [row for row in rows if row["errors"] or row["other"]]
    result = {
        "kept": args.kept,
        "adds": args.adds,
        "load_average_at_start": load,
        "rows": rows,
    }
    save(output(args, "writers", args.kept, "multi"), result)
    if failures:
        raise SystemExit(f"{len(failures)} run(s) had errors or decisions unlike one writer's")


if __name__ == "__main__":
    main()
