"""The default pipeline over the seeds' two-day window on a server: PostgreSQL partitioned by day,
or MySQL/MariaDB.

    python -m benchmarks window --rows 1000000 \
        --url postgresql+psycopg://root@127.0.0.1:5432/test [--server-control "pg_ctlcluster 15 main"]
    python -m benchmarks window --rows 1000000 --url mysql+pymysql://root@127.0.0.1:3306/test

(alias: ``window-server``). The texts are ``common.corpus``'s composed texts (text ``i`` added at
``moment(i, N)`` over two days). A database of its own is made on the server; on PostgreSQL
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
loads every text as kept through ``SimStore.load`` (``window.fill.fill_keep_all``) instead of
deciding each through ``add_many``. Then bytes per kept text by relation (``server_sizes``), the purge of day 1 at the end of day 3 (a DROP of its partitions on PostgreSQL, deletes on MariaDB), and
this process's memory.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from simstore.storage import migrate, partitions
from simstore.store import SimStore

from ..common import cli, corpus
from ..common.corpus import (
    DAY1,
    DAY3_ENDS,
    END_OF_DAY2,
    PAIRS,
    compose,
    load_pool,
    moment,
    workload,
)
from ..common.databases import (
    database_files,
    dialect_label,
    read_files,
    report,
    restart_cold,
    scratch_database,
    server_settings,
    server_sizes,
)
from ..common.fills import add_all
from ..common.measure import memory, wait_for_quiet
from ..common.results import add_output, output, save
from .default import measure
from .fill import fill_keep_all, overstated


def records(n: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield {"key": f"t{i}", "text": compose(i), "at": moment(i, n)}


def prepare(url: str) -> None:
    """The schema at head; on PostgreSQL one-day partitions for the two days and the purge's."""
    migrate.upgrade(url)
    if make_url(url).get_backend_name() == "postgresql":
        partitions.enable(url, interval="1d", keep="2d", now=DAY1)


def fill(url: str, n: int, workers: int) -> dict[str, Any]:
    """Every text through ``add_many`` in order (texts added -> seconds in ``seconds_at``)."""
    prepare(url)
    started = time.perf_counter()
    with SimStore(url, keep="2d") as store:
        _added, kept, seconds_at = add_all(
            store, records(n), workers=workers, total=n, every=100_000
        )
    seconds = time.perf_counter() - started
    return {
        "kept": kept,
        "seconds": round(seconds, 1),
        "texts_per_s": round(n / seconds),
        "seconds_at": seconds_at,
    }


def check_keep_all(url: str, n: int, count: int, seed: int) -> dict[str, Any]:
    """Add ``count`` of the texts through ``SimStore.add`` into a fresh partitioned database of
    the same server; every row the API kept must equal the keep-all fill's row of that key,
    column by column (ids aside). Stops the run when any differs."""
    numbers = sorted(random.Random(f"{seed}:check").sample(range(n), count))
    keys = [f"t{i}" for i in numbers]
    columns = (
        "key, fp, b0, b1, b2, b3, added_at, part, text, signature, band_keys, "
        "simhash_indexed, packed_text"
    )
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


def purge_day1(url: str) -> dict[str, Any]:
    with SimStore(url, keep="2d") as store:
        started = time.perf_counter()
        purged = store.purge(now=DAY3_ENDS)
        seconds = time.perf_counter() - started
        left = store.stats().kept
    return {"rows": purged, "seconds": round(seconds, 2), "kept_left": left}


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser("window", __doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--url", required=True, help="a PostgreSQL or MySQL/MariaDB server URL")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--adds", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    add_output(parser)
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
        help="keep every text, loaded as signed, instead of deciding it (--check texts added "
        "through the API must give the same rows)",
    )
    parser.add_argument("--check", type=int, default=200, help="--keep-all: texts checked")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--wait-load", type=float, default=10, help="minutes to wait for load < 3")
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
    args = parser.parse_args(argv)
    corpus.SEED = args.seed
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
            prepare(url)
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
        result["load"] = wait_for_quiet(args.wait_load)
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
    name = "window-keepall" if args.keep_all else "window"
    save(output(args, name, args.rows, dialect_label(args.url)), result)


if __name__ == "__main__":
    main()
