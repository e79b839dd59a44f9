"""Bytes per kept text with the default policy, text in, broken down by table and index.

    python -m benchmarks footprint [--texts 20000] [--batch 500]
    python -m benchmarks footprint --url postgresql+psycopg://root@127.0.0.1:5432/test
    python -m benchmarks footprint --url mysql+pymysql://root@127.0.0.1:3306/test

Real text: the ``a`` and ``b`` texts of the quality dataset (``benchmarks/data/quality/pairs.jsonl``,
Chinese and English, a few characters to 35 kB; many pairs are near-duplicates, so fewer texts are
kept than added), in a fixed shuffled order, through ``SimStore.add_many`` with the default policy
(fingerprint, normalised text, MinHash signature and band keys, one decision row per add).

SQLite: a fresh file, sized afterwards with the ``dbstat`` virtual table (every page of every
table and index). PostgreSQL (``--url``): a database of its own, created and dropped, sized with
``pg_relation_size`` for each table (its heap and its TOAST table) and each index after VACUUM;
MySQL/MariaDB: InnoDB's persistent statistics (``mysql.innodb_index_stats``, the ``size`` in pages
of each index, the clustered one holding the rows) after ANALYZE TABLE.
Prints one row per B-tree (or heap) with its bytes and bytes per kept text, then the total.

``--purge``: the texts are added over two days (half each) and, after the sizes are printed,
``SimStore(keep="1d").purge()`` on day 3 removes day 1 (its kept rows with their MinHash band keys,
and its decisions); prints the rows purged per second.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from simstore.store import SimStore

PAIRS = Path(__file__).resolve().parent / "data" / "quality" / "pairs.jsonl"


def texts(count: int, pairs: Path) -> list[str]:
    """The dataset's texts (``a`` then ``b`` of each pair, distinct), shuffled with seed 1."""
    seen: dict[str, None] = {}
    with pairs.open(encoding="utf-8") as lines:
        for line in lines:
            pair = json.loads(line)
            for text in (pair["a"], pair["b"]):
                if text.strip():
                    seen.setdefault(text)
    chosen = list(seen)
    random.Random(1).shuffle(chosen)
    if len(chosen) < count:
        print(f"only {len(chosen):,} distinct texts in {pairs}", file=sys.stderr)
    return chosen[:count]


DAY1 = datetime(2026, 3, 1)


def fill(url: str, corpus: list[str], batch: int) -> tuple[int, float]:
    """Add the corpus through ``add_many`` (half on day 1, half on day 2); (texts kept, seconds)."""
    started = time.perf_counter()
    half = max(len(corpus) // 2, 1)
    with SimStore(url, auto_upgrade=True) as store:
        items = [
            {"key": f"t{i}", "text": text, "at": DAY1 + timedelta(days=i >= half, seconds=i)}
            for i, text in enumerate(corpus)
        ]
        kept = sum(decision.inserted for decision in store.add_many(items, batch_size=batch))
    return kept, time.perf_counter() - started


def sqlite_sizes(path: Path) -> list[tuple[str, str, int]]:
    """(table, B-tree name, bytes) of every table and index of the file, from ``dbstat``."""
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        owner: dict[str, str] = dict(
            conn.exec_driver_sql(
                "SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')"
            ).all()
        )
        sizes = conn.exec_driver_sql(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY name"
        ).all()
    engine.dispose()
    return [(str(owner.get(name, name)), str(name), int(size)) for name, size in sizes]


def postgresql_sizes(url: str) -> list[tuple[str, str, int]]:
    """(table, relation, bytes) of simstore's tables, their TOAST tables and their indexes."""
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.exec_driver_sql("VACUUM ANALYZE")
        rows = conn.exec_driver_sql(
            "SELECT c.relname, c.relname, pg_relation_size(c.oid) FROM pg_class c "
            "WHERE c.relkind = 'r' AND c.relname LIKE 'simstore%%' "
            "UNION ALL "
            "SELECT c.relname, c.relname || ' (TOAST)', "
            "pg_relation_size(c.reltoastrelid) + COALESCE((SELECT SUM(pg_relation_size(i.indexrelid)) "
            "  FROM pg_index i WHERE i.indrelid = c.reltoastrelid), 0) "
            "FROM pg_class c WHERE c.relkind = 'r' AND c.relname LIKE 'simstore%%' "
            "AND c.reltoastrelid <> 0 "
            "UNION ALL "
            "SELECT t.relname, x.relname, pg_relation_size(x.oid) FROM pg_index i "
            "JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid "
            "WHERE t.relname LIKE 'simstore%%' ORDER BY 1, 2"
        ).all()
    engine.dispose()
    return [(str(table), str(name), int(size)) for table, name, size in rows]


def mysql_sizes(url: str) -> list[tuple[str, str, int]]:
    """(table, index, bytes) of simstore's InnoDB tables: PRIMARY is the clustered index (the
    rows), the others the secondary indexes; pages counted by InnoDB's persistent statistics."""
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        tables = conn.exec_driver_sql("SHOW TABLES LIKE 'simstore%%'").scalars().all()
        for table in tables:
            conn.exec_driver_sql(f"ANALYZE TABLE {table}").all()
        rows = conn.exec_driver_sql(
            "SELECT table_name, index_name, stat_value * @@innodb_page_size "
            "FROM mysql.innodb_index_stats WHERE database_name = DATABASE() "
            "AND stat_name = 'size' AND table_name LIKE 'simstore%%' ORDER BY 1, 2"
        ).all()
    engine.dispose()
    return [(str(table), str(name), int(size)) for table, name, size in rows]


def server_sizes(url: str) -> tuple[str, list[tuple[str, str, int]]]:
    """What the server says each of simstore's tables and indexes takes, with how it was read."""
    if make_url(url).get_backend_name() == "postgresql":
        return "PostgreSQL (pg_relation_size)", postgresql_sizes(url)
    return "MySQL/MariaDB (innodb_index_stats)", mysql_sizes(url)


@contextlib.contextmanager
def scratch_database(server_url: str, prefix: str, keep: bool = False) -> Iterator[str]:
    """A database of its own on the server (dropped afterwards unless ``keep``), as a URL."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    # pre-ping: a restart of the server (cold timings) kills the pooled connection
    admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT", pool_pre_ping=True)
    postgresql = admin.dialect.name == "postgresql"
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        if keep:
            print(f"  kept the database {name}")
        else:
            with admin.connect() as conn:
                force = " WITH (FORCE)" if postgresql else ""
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}{force}")
        admin.dispose()


def report(title: str, sizes: list[tuple[str, str, int]], kept: int, added: int) -> None:
    total = sum(size for _table, _name, size in sizes)
    print(f"\n{title}: {added:,} texts added, {kept:,} kept")
    print(f"{'table':<24} {'B-tree / heap':<44} {'bytes':>12} {'B/kept':>8}")
    for table, name, size in sizes:
        if size:
            print(f"{table:<24} {name:<44} {size:>12,} {size / kept:>8.0f}")
    by_table: dict[str, int] = {}
    for table, _name, size in sizes:
        by_table[table] = by_table.get(table, 0) + size
    for table, size in sorted(by_table.items()):
        print(f"{table:<24} {'(all of it)':<44} {size:>12,} {size / kept:>8.0f}")
    print(f"{'total':<24} {'':<44} {total:>12,} {total / kept:>8.0f}")


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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--texts", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--pairs", type=Path, default=PAIRS, help="the quality dataset's pairs")
    parser.add_argument("--purge", action="store_true", help="then time a purge of day 1")
    parser.add_argument(
        "--url", help="a PostgreSQL or MySQL/MariaDB server URL (a database of its own is made)"
    )
    args = parser.parse_args()
    corpus = texts(args.texts, args.pairs)
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


if __name__ == "__main__":
    main()
