"""The databases a benchmark runs on: SQLite files (their page cache, markers and sizes) and
scratch databases on a PostgreSQL or MySQL/MariaDB server (their sizes, settings and files)."""

from __future__ import annotations

import contextlib
import os
import shlex
import sqlite3
import subprocess
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import make_url

Sizes = list[tuple[str, str, int]]  # (table, B-tree or heap, bytes)

# --- SQLite files ---------------------------------------------------------------------------------


def files_of(path: Path) -> list[Path]:
    """A SQLite database's file, its WAL and its shared-memory file."""
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def marker_of(path: Path) -> Path:
    """The file whose presence says a filled database is complete (with the fill's figures)."""
    return path.with_name(path.name + ".complete.json")


def remove_database(path: Path) -> None:
    for file in [*files_of(path), marker_of(path)]:
        file.unlink(missing_ok=True)


def file_bytes(path: Path) -> int:
    """Bytes of a SQLite database's file and its WAL."""
    return sum(file.stat().st_size for file in files_of(path)[:2] if file.exists())


def checkpoint(path: Path) -> None:
    """Move the WAL into the database file and truncate the WAL to zero bytes."""
    connection = sqlite3.connect(path)
    try:
        busy, _log, _moved = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise RuntimeError(f"could not checkpoint {path}: a reader or writer is busy")
    finally:
        connection.close()


def read_files(files: Iterable[Path]) -> int:
    """Read each file once, so its pages sit in the OS page cache; bytes read."""
    total = 0
    for file in files:
        with file.open("rb") as handle:
            while chunk := handle.read(1 << 24):
                total += len(chunk)
    return total


def cache_file(path: Path) -> int:
    """Read a SQLite database (and its WAL) into the OS page cache; bytes."""
    return read_files(file for file in files_of(path)[:2] if file.exists())


def drop_from_page_cache(files: Iterable[Path]) -> None:
    """Sync each file and drop its pages from the OS page cache (``posix_fadvise(DONTNEED)``)."""
    for file in files:
        if file.exists():
            fd = os.open(file, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def evict(path: Path) -> None:
    """Drop a SQLite database's files from the OS page cache."""
    drop_from_page_cache(files_of(path))


def sqlite_path(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


def sqlite_sizes(path: Path) -> Sizes:
    """(table, B-tree name, bytes) of every table and index of the file, from ``dbstat``."""
    connection = sqlite3.connect(path)
    try:
        owner = dict(
            connection.execute(
                "SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')"
            ).fetchall()
        )
        sizes = connection.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY name"
        ).fetchall()
    finally:
        connection.close()
    return [(str(owner.get(name, name)), str(name), int(size)) for name, size in sizes]


# --- servers --------------------------------------------------------------------------------------


def backend(url: str) -> str:
    """``sqlite``, ``postgresql`` or ``mysql``."""
    return make_url(url).get_backend_name()


def dialect_label(url: str) -> str:
    """How a result file names the database: sqlite, postgresql or mariadb."""
    name = backend(url)
    return "mariadb" if name == "mysql" else name


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


def postgresql_sizes(url: str) -> Sizes:
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


def mysql_sizes(url: str) -> Sizes:
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


def server_sizes(url: str) -> tuple[str, Sizes]:
    """What the server says each of simstore's tables and indexes takes, with how it was read."""
    if backend(url) == "postgresql":
        return "PostgreSQL (pg_relation_size)", postgresql_sizes(url)
    return "MySQL/MariaDB (innodb_index_stats)", mysql_sizes(url)


def report(title: str, sizes: Sizes, kept: int, added: int) -> None:
    """Print the sizes: one row per B-tree (or heap), per table, and the total, per kept text."""
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
    """The server's version and the settings that move the figures, as the server reports them
    at the start of the run (a result file says what it was measured on)."""
    engine = sa.create_engine(url)
    try:
        query, names = SETTINGS[engine.dialect.name]
        with engine.connect() as conn:
            values = conn.exec_driver_sql(query).one()
    finally:
        engine.dispose()
    return {name: str(value) for name, value in zip(names, values, strict=True)}


def database_files(url: str) -> list[Path]:
    """The files of a server's database (its folder under the data directory)."""
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
