"""Crashes: ``kill -9`` of a process in the middle of ``add_many``, of ``simstore ingest`` and of
``purge``, on SQLite, PostgreSQL and MariaDB. On reopen the database is sound (SQLite's integrity
check, every decision consistent with the kept rows, whole batches only), and running the same work
again ends in exactly the state of an uninterrupted run into a fresh database."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from simstore.cli import main
from simstore.storage import migrate
from simstore.storage.retention import partition_of
from simstore.store import SimStore
from tests._workers import (
    ROOT,
    START,
    Audit,
    audit,
    command,
    fingerprint_items,
    random_text,
    row_counts,
    sqlite_integrity,
)
from tests.conftest import new_server_database

pytestmark = pytest.mark.slow  # each case runs and kills child processes
CRASHING = pytest.mark.parametrize("dialect", ["sqlite-file", "postgresql", "mysql"], indirect=True)
SEED = 11


def _kill(child: subprocess.Popen[str]) -> None:
    os.kill(child.pid, signal.SIGKILL)
    child.wait()  # SIGKILL cannot be ignored
    assert child.returncode == -signal.SIGKILL, "the child ended before it was killed"


def _writing(url: str) -> bool:
    """Whether a transaction that has written is open on the database (another process's)."""
    if url.startswith("sqlite"):
        path = sa.engine.make_url(url).database
        assert path is not None
        probe = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            probe.execute("BEGIN IMMEDIATE")  # taken only when no writer holds the lock
            probe.execute("ROLLBACK")
            return False
        except sqlite3.OperationalError:
            return True
        finally:
            probe.close()
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                sql = (
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()"
                )
                return bool(conn.exec_driver_sql(sql).scalar())
            sql = (
                "SELECT count(*) FROM information_schema.innodb_trx t "
                "JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id "
                # a batch holds the namespace row FOR UPDATE from its first statement: locked
                # rows count, not only written ones (whose moment, the INSERT, is short)
                "WHERE (t.trx_rows_modified > 0 OR t.trx_rows_locked > 0) AND p.db = DATABASE()"
            )
            return bool(conn.exec_driver_sql(sql).scalar())
    finally:
        engine.dispose()


def _until_writing(child: subprocess.Popen[str], url: str, deadline: float = 120.0) -> None:
    """Return once ``child`` is seen inside a write transaction; fail if it ends first."""
    started = time.monotonic()
    while not _writing(url):
        assert child.poll() is None, "the child finished before a write was seen"
        assert time.monotonic() - started < deadline, "no write transaction was seen"


def _fresh_database(dialect: str, tmp_path: Path) -> str:
    """An empty database of the same kind, at the schema head."""
    if dialect == "sqlite-file":
        return f"sqlite:///{tmp_path / 'fresh.db'}"
    url = new_server_database(dialect)
    migrate.upgrade(url)
    return url


def _sound(url: str, namespace: str) -> Audit:
    if url.startswith("sqlite"):
        assert sqlite_integrity(url) == ["ok"]
    table = audit(url, namespace)
    assert table.problems == []
    return table


# --- add_many -------------------------------------------------------------------------------------

# enough batches after the second commit that a fast server is still seen writing one
ITEMS, BATCH = 12_000, 800


@CRASHING
def test_kill_9_in_the_middle_of_add_many(database_url: str, dialect: str, tmp_path: Path) -> None:
    namespace = f"crash-{uuid.uuid4().hex[:8]}"
    SimStore(database_url, namespace=namespace, auto_upgrade=True).close()
    child = subprocess.Popen(
        command("add-many", database_url, namespace, str(ITEMS), str(BATCH), str(SEED)),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    commits = 0
    for line in child.stdout:
        commits += line.startswith("committed")
        if commits == 2:
            break
    assert commits == 2, child.communicate()[1]
    _until_writing(child, database_url)  # inside a later batch's transaction, not by a clock
    _kill(child)

    table = _sound(database_url, namespace)
    assert len(table.decisions) % BATCH == 0  # whole batches or nothing
    assert 2 * BATCH <= len(table.decisions) < ITEMS

    items = [{"key": key, "fingerprint": value} for key, value in fingerprint_items(ITEMS, SEED)]
    fresh = _fresh_database(dialect, tmp_path)
    outcomes = []
    for url in (database_url, fresh):
        with SimStore(url, namespace=namespace, auto_upgrade=True) as store:
            decided = store.add_many(items, batch_size=BATCH, at=START)
            outcomes.append(
                [(d.key, d.inserted, d.duplicate_of and d.duplicate_of.key) for d in decided]
            )
    assert outcomes[0] == outcomes[1]
    resumed, uninterrupted = _sound(database_url, namespace), _sound(fresh, namespace)
    assert resumed.outcomes() == uninterrupted.outcomes()
    assert resumed.kept == uninterrupted.kept


# --- simstore ingest ------------------------------------------------------------------------------

RECORDS, INGEST_BATCH = 4_000, 250


def _corpus(path: Path) -> Path:
    """JSON lines with texts, a third of them an earlier text with one word changed."""
    rng = random.Random(SEED)
    texts: list[str] = []
    with path.open("w", encoding="utf-8") as out:
        for number in range(RECORDS):
            if texts and rng.random() < 0.3:
                words = rng.choice(texts).split(" ")
                words[rng.randrange(len(words))] = "edited"
                text = " ".join(words)
            else:
                text = random_text(rng)
            texts.append(text)
            out.write(json.dumps({"id": f"r{number:05d}", "text": text}, ensure_ascii=False))
            out.write("\n")
    return path


def _ingest_args(url: str, namespace: str, corpus: Path) -> list[str]:
    return [
        *("--db", url, "--namespace", namespace, "--quiet"),
        *("ingest", str(corpus), "--batch-size", str(INGEST_BATCH)),
    ]


def _ingest(url: str, namespace: str, corpus: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "simstore.cli", *_ingest_args(url, namespace, corpus)],
        cwd=corpus.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


@CRASHING
def test_kill_9_in_the_middle_of_simstore_ingest(
    database_url: str, dialect: str, tmp_path: Path
) -> None:
    namespace = f"ingest-{uuid.uuid4().hex[:8]}"
    SimStore(database_url, namespace=namespace, auto_upgrade=True).close()
    corpus = _corpus(tmp_path / "big.jsonl")
    child = _ingest(database_url, namespace, corpus)
    engine = sa.create_engine(database_url)
    try:
        while sum(row_counts(engine, namespace)) < 2 * INGEST_BATCH:  # kept rows and duplicates
            assert child.poll() is None, child.communicate()[1]  # bounded by the child's own end
            time.sleep(0.01)
    finally:
        engine.dispose()
    _kill(child)

    table = _sound(database_url, namespace)
    assert len(table.decisions) % INGEST_BATCH == 0
    assert len(table.decisions) < RECORDS

    fresh = _fresh_database(dialect, tmp_path)
    for url in (database_url, fresh):  # the same command again, in this process (no start-up)
        result = CliRunner().invoke(main, _ingest_args(url, namespace, corpus))
        assert result.exit_code == 0, result.output
    resumed, uninterrupted = _sound(database_url, namespace), _sound(fresh, namespace)
    assert len(resumed.decisions) == RECORDS
    assert resumed.outcomes() == uninterrupted.outcomes()
    assert resumed.kept == uninterrupted.kept


# --- purge ----------------------------------------------------------------------------------------

OLD_ROWS, RECENT_ROWS, PURGE_BATCH = 6_000, 500, 100
NOW = START + timedelta(days=2)


@CRASHING
def test_kill_9_in_the_middle_of_purge(database_url: str) -> None:
    namespace = f"purge-{uuid.uuid4().hex[:8]}"
    pairs = fingerprint_items(OLD_ROWS + RECENT_ROWS, SEED)
    items = [
        {
            "key": key,
            "fingerprint": value,
            # the old rows over a day of hourly partitions, the recent ones in the last hour
            "at": START + timedelta(seconds=15 * index)
            if index < OLD_ROWS
            else NOW - timedelta(minutes=30),
        }
        for index, (key, value) in enumerate(pairs)
    ]
    with SimStore(database_url, namespace=namespace, keep="2h", auto_upgrade=True) as store:
        list(store.add_many(items, batch_size=2_000))
    before = _sound(database_url, namespace)
    cutoff = partition_of(NOW - timedelta(hours=2), 3600)
    inside = {
        key: outcome
        for key, outcome in before.outcomes().items()
        if before.decisions[key].part >= cutoff
    }
    assert len(inside) == RECENT_ROWS

    child = subprocess.Popen(
        command("purge", database_url, namespace, NOW.isoformat(), "2h", str(PURGE_BATCH)),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "purging", child.communicate()[1]
    engine = sa.create_engine(database_url)
    try:
        # until the purge has deleted a few batches of kept rows
        target = len(before.kept) - 5 * PURGE_BATCH
        while row_counts(engine, namespace)[0] > target:
            assert child.poll() is None, "the purge ended before it could be killed"
    finally:
        engine.dispose()
    _kill(child)

    interrupted = _sound(database_url, namespace)
    assert {k: v for k, v in interrupted.outcomes().items() if k in inside} == inside
    assert len(interrupted.decisions) > len(inside)  # the kill left old rows behind

    with SimStore(database_url, namespace=namespace, keep="2h") as store:
        assert store.purge(now=NOW) > 0
    assert _sound(database_url, namespace).outcomes() == inside
