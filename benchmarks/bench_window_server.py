"""The default pipeline over the seeds' two-day window on a server: PostgreSQL partitioned by day,
or MySQL/MariaDB.

    python -m benchmarks window-server --rows 1000000 \
        --url postgresql+psycopg://root@127.0.0.1:5432/test [--server-control "pg_ctlcluster 15 main"]
    python -m benchmarks window-server --rows 1000000 --url mysql+pymysql://root@127.0.0.1:3306/test

The texts are ``bench_window_default``'s (composed from the quality dataset's clauses, text ``i``
added at ``moment(i)`` over two days). A database of its own is made on the server; on PostgreSQL
it is partitioned (``simstore.storage.partitions.enable``: one-day partitions, keep = 2d) before anything
is added (simstore partitions only PostgreSQL). The texts then go in through
``SimStore.add_many(workers=2)``, so every row is the API's own. Then, at the end of day 2 and
through ``SimStore(url, keep="2d")``: ``query(text)`` and ``add(text)`` p50 / p99, half new texts
and half near-duplicates of filled ones. Warm only, unless ``--server-control`` names a command
that takes ``stop`` and ``start`` (run on the server's machine by a user who can read its data
directory): then cold first, the server stopped, the database's files dropped from the OS page
cache and the server started again before the cold queries and again before the cold adds (the
store's connections reconnect; MariaDB reloads its buffer pool dump at start, as it would after
any restart). Then bytes per kept text by relation (``bench_footprint.server_sizes``), the purge
of day 1 at the end of day 3 (a DROP of its partitions on PostgreSQL, deletes on MariaDB), and
this process's memory.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from bench_footprint import PAIRS, report, scratch_database, server_sizes
from bench_window import DAY1, DAY3_ENDS, END_OF_DAY2, memory
from bench_window_default import (
    compose,
    drop_from_page_cache,
    load_pool,
    measure,
    moment,
    wait_for_quiet,
    workload,
)
from sqlalchemy.engine import make_url

from simstore.storage import migrate, partitions
from simstore.store import SimStore


def records(n: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield {"key": f"t{i}", "text": compose(i), "at": moment(i, n)}


def fill(url: str, n: int, workers: int) -> dict[str, Any]:
    migrate.upgrade(url)
    if make_url(url).get_backend_name() == "postgresql":
        partitions.enable(url, interval="1d", keep="2d", now=DAY1)
    started = time.perf_counter()
    kept = 0
    seconds_at: dict[int, float] = {}  # texts added -> seconds since the fill began
    with SimStore(url, keep="2d") as store:
        for done, decision in enumerate(store.add_many(records(n), workers=workers), 1):
            kept += decision.inserted
            if done % 100_000 == 0:
                seconds = seconds_at[done] = round(time.perf_counter() - started, 1)
                print(f"  {done:,} added in {seconds:,.0f} s ({done / seconds:,.0f}/s)", flush=True)
    seconds = time.perf_counter() - started
    return {
        "kept": kept,
        "seconds": round(seconds, 1),
        "texts_per_s": round(n / seconds),
        "seconds_at": seconds_at,
    }


SETTINGS = {
    "postgresql": (
        "SELECT version(), current_setting('shared_buffers'), current_setting('max_wal_size'), "
        "current_setting('checkpoint_timeout'), current_setting('synchronous_commit'), "
        "current_setting('autovacuum')",
        ("version", "shared_buffers", "max_wal_size", "checkpoint_timeout",
         "synchronous_commit", "autovacuum"),
    ),
    "mysql": (
        "SELECT @@version, @@innodb_buffer_pool_size, @@innodb_log_file_size, "
        "@@innodb_flush_log_at_trx_commit",
        ("version", "innodb_buffer_pool_size", "innodb_log_file_size",
         "innodb_flush_log_at_trx_commit"),
    ),
}  # fmt: skip


def server_settings(url: str) -> dict[str, str]:
    """The server's version and the settings that move these figures, as the server reports
    them at the start of the run (a result file says what it was measured on)."""
    engine = sa.create_engine(url)
    try:
        query, names = SETTINGS[engine.dialect.name]
        with engine.connect() as conn:
            values = conn.exec_driver_sql(query).one()
    finally:
        engine.dispose()
    return {name: str(value) for name, value in zip(names, values, strict=True)}


def database_files(url: str) -> list[Path]:
    """The files of the database (its folder under the server's data directory)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if engine.dialect.name == "postgresql":
                root = conn.exec_driver_sql("SHOW data_directory").scalar_one()
                oid = conn.exec_driver_sql(
                    "SELECT oid FROM pg_database WHERE datname = current_database()"
                ).scalar_one()
                folder = Path(root) / "base" / str(oid)
            else:
                root = conn.exec_driver_sql("SELECT @@datadir").scalar_one()
                folder = Path(root) / str(engine.url.database)
    finally:
        engine.dispose()
    return sorted(path for path in folder.iterdir() if path.is_file())


def restart_cold(url: str, control: str) -> None:
    """Stop the server, drop the database's files from the OS page cache, start it again."""
    files = database_files(url)
    subprocess.run([*shlex.split(control), "stop"], check=True)
    drop_from_page_cache(files)
    subprocess.run([*shlex.split(control), "start"], check=True)


def purge_day1(url: str) -> dict[str, Any]:
    with SimStore(url, keep="2d") as store:
        started = time.perf_counter()
        purged = store.purge(now=DAY3_ENDS)
        seconds = time.perf_counter() - started
        left = store.stats().kept
    return {"rows": purged, "seconds": round(seconds, 2), "kept_left": left}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--url", required=True, help="a PostgreSQL or MySQL/MariaDB server URL")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--adds", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--server-control",
        help="a command that takes stop / start (e.g. 'pg_ctlcluster 15 main'): measure cold too",
    )
    parser.add_argument(
        "--keep-database", action="store_true", help="leave the filled database for inspection"
    )
    parser.add_argument(
        "--reuse",
        metavar="DATABASE",
        help="measure a database a --keep-database --no-purge run of the same --rows filled",
    )
    parser.add_argument("--no-purge", action="store_true", help="leave day 1 in the database")
    parser.add_argument(
        "--relaxed-commit",
        action="store_true",
        help="PostgreSQL: time with SimStore(synchronous_commit=False), the commit's flush off",
    )
    parser.add_argument(
        "--round",
        type=int,
        default=0,
        help="on a reused database: texts and keys of their own (1, 2, ...) for each new run",
    )
    args = parser.parse_args()
    load_pool(args.pairs)
    result: dict[str, Any] = {"rows": args.rows, "server": server_settings(args.url)}
    if args.reuse:
        reused = make_url(args.url).set(database=args.reuse)
        database = contextlib.nullcontext(reused.render_as_string(hide_password=False))
    else:
        database = scratch_database(args.url, "simstore_window", keep=args.keep_database)
    with database as url:
        if args.reuse:
            with SimStore(url, keep="2d") as store:
                result["fill"] = {"kept": store.stats().kept, "reused": args.reuse}
        else:
            print(f"filling {make_url(url).database} with {args.rows:,} texts through add_many")
            result["fill"] = fill(url, args.rows, args.workers)
        print(f"  {result['fill']}", flush=True)
        title, sizes = server_sizes(url)
        kept = result["fill"]["kept"]
        report(title, sizes, kept, args.rows)
        result["bytes_per_kept"] = round(sum(size for _t, _n, size in sizes) / kept)
        result["load"] = wait_for_quiet(10)
        relaxed = {"synchronous_commit": False} if args.relaxed_commit else {}
        with SimStore(url, keep="2d", **relaxed) as store:
            salt = 10 * args.round  # a reused database holds the adds of earlier rounds
            measure(store, workload(args.rows, 20, salt + 9), "query", "w")  # statements prepared
            if args.server_control:
                for extra, mode, count in ((3, "query", args.queries), (4, "add", args.adds)):
                    restart_cold(url, args.server_control)
                    texts = workload(args.rows, count, salt + extra)
                    result[f"{mode}_cold"] = measure(store, texts, mode, f"cold{args.round}-")
                    print(f"  {mode} (cold: server restarted, files dropped from the page "
                          f"cache): {result[f'{mode}_cold']}", flush=True)  # fmt: skip
            for mode, count in (("query", args.queries), ("add", args.adds)):
                warm_up = workload(args.rows, 200, salt + (7 if mode == "query" else 8))
                measure(store, warm_up, mode, f"w{args.round}-")
                texts = workload(args.rows, count, salt + (1 if mode == "query" else 2))
                result[f"{mode}_warm"] = measure(store, texts, mode, f"timed{args.round}-")
                print(f"  {mode} (warm): {result[f'{mode}_warm']}", flush=True)
        if not args.no_purge:
            result["purge_day1"] = purge_day1(url)
            print(f"  purge of day 1 at the end of day 3: {result['purge_day1']}", flush=True)
        result["memory_mib"] = memory()
        print(f"  memory: {result['memory_mib']}", flush=True)
        print(f"  at {END_OF_DAY2} (queries and adds), {DAY3_ENDS} (purge)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
