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
any restart). Warm: the database's files read into the OS page cache first (``database_files``:
the server must run on this machine), as the SQLite benchmark reads its file. ``--keep-all``
(PostgreSQL) fills by COPY instead of ``add_many``: ``fill_keep_all``. Then bytes per kept text
by relation (``bench_footprint.server_sizes``), the purge of day 1 at the end of day 3 (a DROP of its partitions on PostgreSQL, deletes on MariaDB), and
this process's memory.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import random
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa
from bench_footprint import PAIRS, report, scratch_database, server_sizes
from bench_peers import read_files
from bench_window import DAY1, DAY3_ENDS, END_OF_DAY2, memory
from bench_window_default import (
    CHUNK,
    _sign_task,
    compose,
    drop_from_page_cache,
    load_pool,
    measure,
    moment,
    overstated,
    wait_for_quiet,
    workload,
)
from sqlalchemy.engine import make_url

from simstore.storage import migrate, partitions
from simstore.storage.retention import partition_of
from simstore.storage.schema import pack_text
from simstore.store import SimStore
from simstore.text.encoding import bands, to_signed
from simstore.text.minhash import SIZED_BYTES


def records(n: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield {"key": f"t{i}", "text": compose(i), "at": moment(i, n)}


def prepare(url: str) -> None:
    """The schema at head; on PostgreSQL one-day partitions for the two days and the purge's."""
    migrate.upgrade(url)
    if make_url(url).get_backend_name() == "postgresql":
        partitions.enable(url, interval="1d", keep="2d", now=DAY1)


def fill(url: str, n: int, workers: int) -> dict[str, Any]:
    prepare(url)
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


# simstore_fingerprints as ``add`` writes a kept text on PostgreSQL (FingerprintRow), but the id
FILLED_COLUMNS = (
    "ns_id, key, fp, b0, b1, b2, b3, added_at, part, text, signature, band_keys, "
    "simhash_indexed, packed_text"
)


def fill_keep_all(url: str, n: int, workers: int) -> dict[str, Any]:
    """``--keep-all`` (PostgreSQL): every text kept, its row copied in as its chunk is signed, the
    table's secondary indexes dropped for the load and made again after it (as a bulk load
    would). An upper bound on the rows: ``add`` would drop the texts that match an earlier one
    (``overstated`` counts them in a sample). Through ``add_many`` a PostgreSQL fill slows as the
    store grows: 2M take ~21 min, 10M would take hours."""
    import psycopg  # the PostgreSQL driver simstore's URLs name; only this path needs it directly

    if make_url(url).get_backend_name() != "postgresql":
        raise SystemExit("--keep-all fills PostgreSQL only")
    prepare(url)
    with SimStore(url, keep="2d") as store:
        ns_id, partition_seconds = store.ns_id, store.partition_seconds
    libpq = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    started = time.perf_counter()
    with psycopg.connect(libpq) as connection:
        indexes = connection.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'simstore_fingerprints'"
            " AND indexname NOT IN (SELECT conname FROM pg_constraint)"
        ).fetchall()
        for name, _definition in indexes:
            connection.execute(f"DROP INDEX {name}")
        connection.commit()
        band_key_rows = 0
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            tasks = [(first, min(CHUNK, n - first)) for first in range(0, n, CHUNK)]
            for done, chunk in enumerate(pool.imap(_sign_task, tasks), 1):
                band_key_rows += _copy_chunk(connection, chunk, ns_id, partition_seconds, n)
                end = chunk["first"] + len(chunk["text"])
                if done % 500 == 0 or end == n:
                    seconds = time.perf_counter() - started
                    print(f"  {end:,} texts signed and copied in {seconds:,.0f} s "
                          f"({end / seconds:,.0f}/s)", flush=True)  # fmt: skip
        copied = time.perf_counter()
        connection.execute("SET maintenance_work_mem = '2GB'")
        for _name, definition in indexes:  # the parent's, "ON ONLY" it: made on every partition
            connection.execute(definition.replace(" ON ONLY ", " ON "))
        connection.commit()
        indexed = time.perf_counter()
        connection.execute("ANALYZE simstore_fingerprints")
        connection.commit()
    print(f"  {len(indexes)} indexes made again in {indexed - copied:,.0f} s", flush=True)
    return {
        "kept": n,
        "keep_all": True,
        "band_key_rows": band_key_rows,
        "sign_and_copy_s": round(copied - started),
        "indexes_s": round(indexed - copied),
        "seconds": round(time.perf_counter() - started, 1),
        "texts_per_s": round(n / (copied - started)),
    }


def _copy_chunk(
    connection: Any, chunk: dict[str, Any], ns_id: int, partition_seconds: int, n: int
) -> int:
    """A signed chunk's rows copied in and committed; the number of band keys they hold."""
    signatures = chunk["signature"].reshape(-1, SIZED_BYTES)
    keys = chunk["band_keys"].tolist()
    ends = np.cumsum(chunk["counts"]).tolist()
    fps = chunk["fp"].tolist()
    statement = f"COPY simstore_fingerprints ({FILLED_COLUMNS}) FROM STDIN"
    with connection.cursor() as cursor, cursor.copy(statement) as copy:
        for j, text in enumerate(chunk["text"]):
            i = chunk["first"] + j
            at = moment(i, n)
            copy.write_row((
                ns_id, f"t{i}", to_signed(fps[j]), *bands(fps[j]), at, partition_of(at, partition_seconds),
                None, signatures[j].tobytes() + chunk["opening"][j],
                keys[ends[j - 1] if j else 0 : ends[j]] or None, False, pack_text(text),
            ))  # fmt: skip
    connection.commit()
    return len(keys)


def check_keep_all(url: str, n: int, count: int, seed: int) -> dict[str, Any]:
    """Add ``count`` of the texts through ``SimStore.add`` into a fresh partitioned database of
    the same server; every row the API kept must equal the keep-all fill's row of that key,
    column by column (ids aside). Stops the run when any differs."""
    numbers = sorted(random.Random(f"{seed}:check").sample(range(n), count))
    keys = [f"t{i}" for i in numbers]
    columns = FILLED_COLUMNS.replace("ns_id, ", "")
    query = sa.text(
        f"SELECT {columns} FROM simstore_fingerprints WHERE key IN :keys ORDER BY key"
    ).bindparams(sa.bindparam("keys", expanding=True))
    with scratch_database(url, "simstore_check") as small:
        prepare(small)
        with SimStore(small, keep="2d") as store:
            for i in numbers:
                store.add(compose(i), key=f"t{i}", at=moment(i, n))
        expected = _rows(small, query, keys)
    filled = {row[0]: row for row in _rows(url, query, [row[0] for row in expected])}
    differing = [row for row in expected if filled.get(row[0]) != row]
    if differing or not expected:
        raise SystemExit(f"CHECK FAILED: {len(differing)} of {len(expected)} rows the API kept "
                         f"differ from the keep-all fill's, e.g. {differing[:1]}")  # fmt: skip
    print(f"  checked: {len(expected)} rows the API kept equal the fill's", flush=True)
    return {"added": count, "equal_rows": len(expected)}


def _rows(url: str, query: sa.TextClause, keys: list[str]) -> list[tuple[Any, ...]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(query, {"keys": keys})]
    finally:
        engine.dispose()


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
        "--keep-all",
        action="store_true",
        help="PostgreSQL: keep every text, copied in as signed, instead of deciding it (--check "
        "texts added through the API first must give the same rows)",
    )
    parser.add_argument("--check", type=int, default=200, help="--keep-all: texts checked")
    parser.add_argument("--seed", type=int, default=1)
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
        elif args.keep_all:
            print(f"filling {make_url(url).database} with {args.rows:,} texts, every one kept")
            result["fill"] = fill_keep_all(url, args.rows, args.workers)
            result["check"] = check_keep_all(url, args.rows, args.check, args.seed)
            result["overstated"] = overstated(url, args.rows, args.check, args.seed)
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
            # warm as on SQLite: the database in the OS page cache (after a cold round, or on a
            # database larger than what a thousand lookups touch)
            result["read_into_page_cache"] = read_files(database_files(url))
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
