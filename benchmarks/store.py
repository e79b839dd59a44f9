"""One store's add and query speed: latency at N kept fingerprints against raw-SQL floors,
``add_many`` of text against datasketch, and two checkouts side by side.

    python -m benchmarks store [--url URL] [--rows 1000000] [--fill add_many|load|existing]
    python -m benchmarks add-many [--texts 20000] [--rounds 2] [--batch 1000] [--corpus template]
    python -m benchmarks versions --before CHECKOUT [--url URL] [--texts 20000]

``store`` (``latency``). First, bulk speed: ``add_many`` of ``--bulk-rows`` fingerprints into an
empty store, against the floor of writing the same rows with ``executemany`` through the raw
``sqlite3`` module into tables of their own made from simstore's DDL (``floor_*``, SQLite only).
Then fills N random 64-bit fingerprints (``--fill add_many``, the default, or ``--fill load``:
``SimStore.load``, which writes what add_many would, since random fingerprints have no
near-duplicates at k = 3; ``direct`` is its old name) and times single ``query`` calls at k = 3
(random and planted near-duplicate queries), single ``add`` calls, and ``add_many`` in batches of
100 (sustained insert-if-new). On SQLite the floors are the same statements through the raw
``sqlite3`` module on the same file: the 4-band UNION ALL for a query, and for an add one
transaction of key check, band lookup and the insert, on ``floor_*`` copies of the filled tables.

``add-many``. Text in, decisions out: ``SimStore.add_many`` (default policy, SQLite file) against
datasketch's in-memory ``MinHashLSH`` on the same documents (the quality dataset's texts) in the
same run. Each round runs, in turn, ``add_many`` with ``workers=0``, ``1`` and ``2`` into a fresh
SQLite file, and datasketch: for each document a ``MinHash`` of its character 5-grams (lower-cased,
whitespace collapsed; 96 permutations) and ``MinHashLSH(num_perm=96, params=(16, 4))``, simstore's
band scheme: ``query``, then ``insert`` when nothing is found. It keeps nothing on disk, decides by
LSH collision alone and so does less than the store: it is the peer, not an equal. Prints
documents per second and the ratios to datasketch, per round and the median. ``--corpus
template``: instead of the dataset, notices of one template that differ by their numbers (an
order, a date, a parcel), none a duplicate of another: every kept one is a candidate of the next,
the store's worst case (each candidate is checked by the look-alike rule; datasketch keeps the
first only, since it decides by collision).

``versions``. Single ``query(text)`` and ``add(text)`` latency of two checkouts, alternating. Each
checkout fills a database of its own (a fresh SQLite file, or a new database on the server given
by ``--url``) with the quality dataset's texts through its own ``add_many``, so two checkouts of
different schema revisions compare too. Then, in turn and ``--rounds`` times, a child process of
each checkout (``common.steps.versions``) runs ``--queries`` text queries (half near-duplicates: a
kept text with two words appended) and ``--adds`` single adds of new dataset texts (on SQLite into
a copy of the file, on a server into the database itself under keys of that round). Prints p50 /
p99 in microseconds per checkout and round, and the ratio of the medians.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from simstore.policy.policies import SimHashOnly
from simstore.storage import namespaces
from simstore.storage.db import SQLITE_CACHE_KIB, SQLITE_MMAP_BYTES
from simstore.store import SimStore
from simstore.text import minhash
from simstore.text.encoding import bands, from_signed, to_signed

from .common import cli
from .common.checkouts import run_in
from .common.corpus import ROOT, dataset_texts, near
from .common.databases import backend, sqlite_path
from .common.fills import load_fingerprints
from .common.measure import percentile, timed_calls

# --- the floors -------------------------------------------------------------------------------

SQLITE_TIME = "2026-11-29 00:00:00.000000"
FLOOR_TABLES = ("simstore_fingerprints", "simstore_decisions")
INSERT_KEPT = (
    "INSERT INTO floor_fingerprints (ns_id, key, fp, b0, b1, b2, b3, added_at, part, "
    "simhash_indexed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)"
)
# a band lookup as simstore's band indexes answer it: they hold the rows found by SimHash bands
# (``simhash_indexed = 1``, the indexes' own WHERE), so a lookup without it scans the table
BAND_LOOKUP = " UNION ALL ".join(
    f"SELECT id, fp FROM {{table}} WHERE ns_id = ? AND b{b} = ? AND simhash_indexed = 1"
    for b in range(4)
)


def _raw_connection(path: Path) -> sqlite3.Connection:
    """A floor's connection, set up as simstore's own (WAL, page cache, memory map)."""
    connection = sqlite3.connect(path, isolation_level=None)
    pragmas = (
        "journal_mode=WAL",
        "synchronous=NORMAL",
        f"cache_size=-{SQLITE_CACHE_KIB}",
        f"mmap_size={SQLITE_MMAP_BYTES}",
    )
    for pragma in pragmas:
        connection.execute(f"PRAGMA {pragma}")
    return connection


def floor_tables(connection: sqlite3.Connection, copy_rows: bool) -> None:
    """``floor_fingerprints`` and ``floor_decisions``: simstore's tables and indexes made again
    from their own DDL under names of the floor's, empty or with a copy of simstore's rows (the
    floors write there, never into simstore's tables)."""
    marks = ",".join("?" * len(FLOOR_TABLES))
    statements = connection.execute(
        f"SELECT type, tbl_name, sql FROM sqlite_schema WHERE tbl_name IN ({marks}) "
        "AND sql IS NOT NULL ORDER BY type = 'index'",
        FLOOR_TABLES,
    ).fetchall()
    connection.execute("BEGIN")
    for kind, table, sql in statements:
        connection.execute(sql.replace("simstore_", "floor_"))
        if kind == "table" and copy_rows:
            floor = table.replace("simstore_", "floor_")
            connection.execute(f"INSERT INTO {floor} SELECT * FROM {table}")
    connection.execute("COMMIT")


def _raw_row(ns_id: int, key: str, value: int) -> tuple[object, ...]:
    """A kept row (the record of its decision too: a kept add writes no decision row)."""
    return (ns_id, key, to_signed(value), *bands(value), SQLITE_TIME, 493104)


class RawSqlite:
    """The query floor: the same 4-band UNION ALL through the sqlite3 module, same file."""

    def __init__(self, path: Path, ns_id: int) -> None:
        self.connection = _raw_connection(path)
        self.ns_id = ns_id
        self.sql = BAND_LOOKUP.format(table="simstore_fingerprints")
        self.candidates: list[int] = []

    def query(self, value: int) -> list[int]:
        params: list[int] = []
        for band in bands(value):
            params += [self.ns_id, band]
        result = self.connection.execute(self.sql, params).fetchall()
        self.candidates.append(len(result))
        signed = to_signed(value)
        return [
            (signed ^ fp) & (2**64 - 1)
            for _id, fp in result
            if ((signed ^ fp) & (2**64 - 1)).bit_count() <= 3
        ]


class RawAdd:
    """The floor of one add on SQLite: key check (both tables), 4-band lookup and the kept row's
    insert, one transaction, on the ``floor_*`` copies of the filled tables."""

    def __init__(self, path: Path, ns_id: int) -> None:
        self.connection = _raw_connection(path)
        floor_tables(self.connection, copy_rows=True)
        self.ns_id = ns_id
        self.lookup = BAND_LOOKUP.format(table="floor_fingerprints")

    def add(self, key: str, value: int) -> None:
        params: list[int] = []
        for band in bands(value):
            params += [self.ns_id, band]
        execute = self.connection.execute
        execute("BEGIN IMMEDIATE")
        execute(
            "SELECT key FROM floor_decisions WHERE ns_id = ? AND key = ? UNION ALL "
            "SELECT key FROM floor_fingerprints WHERE ns_id = ? AND key = ?",
            (self.ns_id, key, self.ns_id, key),
        ).fetchall()
        execute(self.lookup, params).fetchall()
        execute(INSERT_KEPT, _raw_row(self.ns_id, key, value))
        execute("COMMIT")


def bulk_rates(values: list[int], batch: int) -> tuple[float, float]:
    """Rows/s of add_many into an empty store, and of the raw executemany floor (SQLite)."""
    folder = Path(tempfile.mkdtemp(prefix="simstore-bulk-"))
    rates = []
    for name in ("simstore", "raw"):
        path = folder / f"{name}.db"
        with SimStore(f"sqlite:///{path}", namespace="bulk", policy=SimHashOnly()) as store:
            items = [{"key": f"k{i}", "fingerprint": v} for i, v in enumerate(values)]
            if name == "raw":
                connection = _raw_connection(path)
                floor_tables(connection, copy_rows=False)
            start = time.perf_counter()
            if name == "simstore":
                for _decision in store.add_many(items, batch_size=batch):
                    pass
            else:
                for first in range(0, len(values), batch):
                    rows = [
                        _raw_row(store.ns_id, f"k{i}", values[i])
                        for i in range(first, min(first + batch, len(values)))
                    ]
                    connection.execute("BEGIN IMMEDIATE")
                    connection.executemany(INSERT_KEPT, rows)
                    connection.execute("COMMIT")
                connection.close()
            rates.append(len(values) / (time.perf_counter() - start))
    shutil.rmtree(folder, ignore_errors=True)
    return rates[0], rates[1]


def sample_stored(store: SimStore, count: int, rng: random.Random) -> list[int]:
    """``count`` fingerprints kept in the store's namespace, picked by random row id."""
    stored: list[int] = []
    with store.engine.connect() as connection:
        low, high = connection.exec_driver_sql(
            "SELECT MIN(id), MAX(id) FROM simstore_fingerprints"
        ).one()
        while len(stored) < count:
            row = connection.exec_driver_sql(
                "SELECT fp FROM simstore_fingerprints WHERE id = ? AND ns_id = ?",
                (rng.randint(low, high), store.ns_id),
            ).first()
            if row is not None:
                stored.append(from_signed(row[0]))
    return stored


def latency(argv: Sequence[str]) -> None:
    parser = cli.parser("store", __doc__)
    parser.add_argument("--url", help="database URL (default: a new SQLite file in a temp folder)")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--fill",
        choices=("add_many", "load", "direct", "existing"),
        default="add_many",
        help="load (direct: its old name): SimStore.load; existing: measure the rows already in "
        "--namespace of --url (e.g. a copy of the peers benchmark's 10M file), loading nothing",
    )
    parser.add_argument("--namespace", help="with --fill existing: the namespace to measure")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--adds", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--bulk-rows", type=int, default=100_000)
    args = parser.parse_args(argv)

    folder = Path(tempfile.mkdtemp(prefix="simstore-bench-"))
    url = args.url or f"sqlite:///{folder / 'bench.db'}"
    sqlite = backend(url) == "sqlite"
    rng = random.Random(20261129)
    if sqlite and args.bulk_rows:
        values = [rng.getrandbits(64) for _ in range(args.bulk_rows)]
        mine, floor_rate = bulk_rates(values, args.batch)
        print(
            f"bulk add_many into an empty store, {args.bulk_rows:,} rows: {mine:,.0f} rows/s; "
            f"raw executemany floor {floor_rate:,.0f} rows/s ({mine / floor_rate:.2f}x)"
        )
    namespace = args.namespace or f"bench-{uuid.uuid4().hex[:8]}"
    if (args.fill == "existing") != (args.namespace is not None):
        raise SystemExit("--namespace goes with --fill existing (and only with it)")
    store = SimStore(url, namespace=namespace, auto_upgrade=True, policy=SimHashOnly())
    stored = [rng.getrandbits(64) for _ in range(args.rows)]

    start = time.perf_counter()
    if args.fill == "existing":
        stored = sample_stored(store, 4 * (args.queries + args.adds), rng)
        args.rows = store.stats().kept
    elif args.fill in ("load", "direct"):
        load_fingerprints(store, np.array(stored, dtype=np.uint64))
    else:
        for _decision in store.add_many(
            ({"key": f"k{i}", "fingerprint": value} for i, value in enumerate(stored)),
            batch_size=args.batch,
        ):
            pass
    load_seconds = time.perf_counter() - start

    engine = sa.create_engine(url)
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        elif engine.dialect.name == "postgresql":
            connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                "VACUUM ANALYZE simstore_fingerprints"
            )
    engine.dispose()

    random_queries = [rng.getrandbits(64) for _ in range(args.queries)]
    planted = [near(rng.choice(stored), rng, rng.randrange(0, 4)) for _ in range(args.queries)]
    raw_floor = RawSqlite(sqlite_path(url), store.ns_id) if sqlite else None
    rows: list[tuple[str, list[float], str]] = []
    for _round in range(2):  # the first round warms caches; report the second
        rows = [
            (
                "query k=3, random",
                timed_calls([partial(store.query, fingerprint=q) for q in random_queries]),
                "",
            ),
            (
                "query k=3, near-duplicate",
                timed_calls([partial(store.query, fingerprint=q) for q in planted]),
                "",
            ),
        ]
        if raw_floor is not None:
            raw_floor.candidates.clear()
            samples = timed_calls([partial(raw_floor.query, q) for q in random_queries])
            note = f"{statistics.mean(raw_floor.candidates):.0f} candidates"
            rows.append(("raw sqlite3 query, 4-band UNION ALL", samples, note))
    found = sum(bool(store.query(fingerprint=q)) for q in planted)
    new_values = [rng.getrandbits(64) for _ in range(args.adds)]
    dup_values = [near(rng.choice(stored), rng, 2) for _ in range(args.adds)]
    for label, prefix, values in (
        ("new text", "new", new_values),
        ("duplicate", "dup", dup_values),
    ):
        adds = [partial(store.add, key=f"{prefix}{i}", fingerprint=v) for i, v in enumerate(values)]
        rows.append((f"add (insert-if-new), {label}", timed_calls(adds), ""))
    if sqlite:
        raw_add = RawAdd(sqlite_path(url), store.ns_id)
        calls = [partial(raw_add.add, f"raw{i}", rng.getrandbits(64)) for i in range(args.adds)]
        rows.append(("raw sqlite3 add, same statements", timed_calls(calls), ""))
    batched = [{"key": f"b{i}", "fingerprint": rng.getrandbits(64)} for i in range(10 * args.adds)]
    start = time.perf_counter()
    for _decision in store.add_many(batched, batch_size=100):
        pass
    batched_rate = len(batched) / (time.perf_counter() - start)

    print(
        f"simstore store benchmark: {backend(url)}, {args.rows:,} kept fingerprints, "
        f"namespace {namespace}"
    )
    if args.fill != "existing":
        print(
            f"fill via {args.fill}: {args.rows / load_seconds:,.0f} rows/s ({load_seconds:.0f} s)"
        )
    print(f"sustained insert-if-new, add_many in batches of 100: {batched_rate:,.0f} adds/s")
    print(f"planted near-duplicate queries that found their target: {found}/{len(planted)}")
    print(f"{'operation':40} {'p50 us':>9} {'p99 us':>9} {'vs floor':>9}  note")
    for name, samples, note in rows:
        p50 = statistics.median(samples)
        kind = "add" if "add" in name else "query"
        floor = next(
            (statistics.median(s) for n, s, _ in rows if n.startswith("raw") and kind in n), None
        )
        ratio = f"{p50 / floor:.2f}x" if floor else "-"
        print(f"{name:40} {p50:9.0f} {percentile(samples, 0.99):9.0f} {ratio:>9}  {note}")
    if args.fill != "existing":  # leave a server's database as it was found
        namespaces.drop(store.scope)
    store.close()
    shutil.rmtree(folder, ignore_errors=True)


# --- add-many against datasketch ----------------------------------------------------------------


def simstore_run(texts: Sequence[str], workers: int, batch: int) -> tuple[float, int]:
    """Seconds for ``add_many`` of every text into a fresh SQLite file, and the texts kept."""
    with tempfile.TemporaryDirectory() as folder:
        store = SimStore(f"sqlite:///{folder}/bench.db")
        started = time.perf_counter()
        kept = sum(
            decision.inserted
            for decision in store.add_many(
                ((f"d{n}", text) for n, text in enumerate(texts)), batch_size=batch, workers=workers
            )
        )
        elapsed = time.perf_counter() - started
        store.close()
    return elapsed, kept


def datasketch_run(texts: Sequence[str]) -> tuple[float, int]:
    """Seconds for query-then-insert of every text into an in-memory MinHashLSH, and the kept."""
    from datasketch import MinHash, MinHashLSH

    started = time.perf_counter()
    lsh = MinHashLSH(num_perm=96, params=(minhash.BANDS, minhash.ROWS))
    kept = 0
    for n, text in enumerate(texts):
        shingled = " ".join(text.lower().split())
        grams = {shingled[i : i + 5].encode() for i in range(max(1, len(shingled) - 4))}
        signature = MinHash(num_perm=96)
        signature.update_batch(list(grams))
        if not lsh.query(signature):
            lsh.insert(f"d{n}", signature)
            kept += 1
    return time.perf_counter() - started, kept


def template_texts(count: int) -> list[str]:
    """``count`` notices of one template, each with numbers of its own (``--corpus template``)."""
    return [
        f"Your order {100_000 + n} has shipped from our warehouse on 2026-{1 + n % 12:02d}-"
        f"{1 + n % 28:02d} in parcel {7 * n + 3}. It will arrive within three working days; "
        "thank you for shopping with us."
        for n in range(count)
    ]


def add_many(argv: Sequence[str]) -> None:
    parser = cli.parser("add-many", __doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--corpus", choices=("dataset", "template"), default="dataset")
    args = parser.parse_args(argv)
    texts = dataset_texts(args.texts) if args.corpus == "dataset" else template_texts(args.texts)
    volume = sum(map(len, texts))
    print(f"{len(texts)} documents, {volume / len(texts):,.0f} characters on average")
    systems: dict[str, Callable[[], tuple[float, int]]] = {
        "simstore workers=0": lambda: simstore_run(texts, 0, args.batch),
        "simstore workers=1": lambda: simstore_run(texts, 1, args.batch),
        "simstore workers=2": lambda: simstore_run(texts, 2, args.batch),
        "datasketch MinHashLSH": lambda: datasketch_run(texts),
    }
    rates: dict[str, list[float]] = {name: [] for name in systems}
    for round_number in range(1, args.rounds + 1):
        for name, run in systems.items():
            seconds, kept = run()
            rates[name].append(len(texts) / seconds)
            rate = len(texts) / seconds
            print(f"round {round_number}  {name:<22} {rate:8,.0f} docs/s  ({kept} kept)")
    peer = statistics.median(rates["datasketch MinHashLSH"])
    print("\nmedian docs/s and ratio to datasketch:")
    for name, values in rates.items():
        rate = statistics.median(values)
        print(f"  {name:<22} {rate:8,.0f}  {rate / peer:5.2f}x")


# --- two checkouts ------------------------------------------------------------------------------


def _database(admin: sa.Engine | None, folder: Path, name: str) -> str:
    """A new empty database: a SQLite file in ``folder``, or one made on the server."""
    if admin is None:
        return f"sqlite:///{folder / (name + '.db')}"
    database = name.replace("-", "_")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {database}")
    return admin.url.set(database=database).render_as_string(hide_password=False)


def _step(checkout: Path, *arguments: str) -> dict[str, float]:
    return run_in(checkout, "benchmarks.common.steps", "versions", *arguments)


def versions(argv: Sequence[str]) -> None:
    parser = cli.parser("versions", __doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="the other checkout (a git worktree)")
    parser.add_argument("--url", help="a server database (default: a SQLite file)")
    parser.add_argument("--texts", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=1_500)
    parser.add_argument("--adds", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    if args.before is None:
        parser.error("--before is required")
    texts = dataset_texts(args.texts + args.adds)
    kept, new = texts[: args.texts], texts[args.texts :]
    sides = (("before", args.before.resolve()), ("after", ROOT))
    namespace = f"versions-{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(args.url, isolation_level="AUTOCOMMIT") if args.url else None
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "kept.json").write_text(json.dumps(kept), encoding="utf-8")
        (folder / "new.json").write_text(json.dumps(new), encoding="utf-8")
        urls = {name: _database(admin, folder, f"{namespace}-{name}") for name, _c in sides}
        results: dict[tuple[str, str], list[dict[str, float]]] = {}
        try:
            for name, checkout in sides:
                _step(checkout, "fill", urls[name], namespace, str(folder / "kept.json"), "0")
            for _round in range(args.rounds):
                for name, checkout in sides:
                    url = urls[name]
                    queried = _step(
                        checkout, "query", url, namespace, str(folder / "kept.json"),
                        str(args.queries),
                    )  # fmt: skip
                    results.setdefault(("query", name), []).append(queried)
                    if admin is None:  # adds write: each round on a copy of the file
                        copy = folder / f"{name}-copy.db"
                        shutil.copy(make_url(url).database or "", copy)
                        url = f"sqlite:///{copy}"
                    added = _step(checkout, "add", url, namespace, str(folder / "new.json"),
                                  str(args.adds))  # fmt: skip
                    results.setdefault(("add", name), []).append(added)
        finally:
            if admin is not None:
                with admin.connect() as conn:
                    for url in urls.values():
                        database = make_url(url).database
                        force = " WITH (FORCE)" if conn.dialect.name == "postgresql" else ""
                        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {database}{force}")
                admin.dispose()
    print(f"{urls['after'].split(':')[0]}: p50 / p99 us per round")
    for mode in ("query", "add"):
        if (mode, "after") not in results:
            continue
        medians = {}
        for name in ("before", "after"):
            rounds = results[(mode, name)]
            shown = ", ".join(f"{r['p50']:,.0f} / {r['p99']:,.0f}" for r in rounds)
            medians[name] = statistics.median(r["p50"] for r in rounds)
            print(f"  {mode:<5} {name:<6} {shown}")
        print(f"  {mode:<5} after is {medians['before'] / medians['after']:.2f}x faster (p50)")


def main(argv: Sequence[str] | None = None) -> None:
    """``[latency|add-many|versions] [options]`` (default: latency)."""
    cli.dispatch(
        {
            "latency": latency,
            "add-many": add_many,
            "versions": versions,
        },
        argv,
        "latency",
    )


if __name__ == "__main__":
    main()
