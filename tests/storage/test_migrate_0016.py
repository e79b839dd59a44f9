"""Revision 0016 on PostgreSQL: band keys moved from the rows' arrays to ``simstore_minhash``,
killed with SIGKILL inside each step and run again.

The data is the frozen database of revision 0015 copied onto a PostgreSQL server (its band keys
in the arrays, as simstore 0015 wrote them there) plus ``EXTRA_ROWS`` rows with random keys, so
that the copy takes several committed batches (0016's ``BATCH`` is 5,000 rows). The worker
(``python -m tests._workers upgrade-killed URL N``) kills itself just before its N-th statement;
``simstore db upgrade`` then runs in a process of its own. Every resumed database must equal
the one upgraded without a kill, table for table and row for row, and hold exactly the
(row, key) pairs the arrays held; the frozen decisions must read back and match as before.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from simstore.storage import migrate, partitions
from simstore.storage.locking import lock_tables
from simstore.storage.retention import EPOCH
from simstore.storage.schema import settings
from simstore.store import SimStore
from tests._workers import ROOT
from tests.conftest import new_server_database
from tests.storage.test_migrate_resume import (
    _contents,
    _kill_at,
    _statements,
    _upgrade_again,
)
from tests.storage.test_upgrade_frozen import (
    _differences_from_the_models,
    _frozen_on,
    check_frozen,
    signed_rows_as_made_now,
)

FROM = "0015_minhash_int_keys"
STEP = "0016_postgresql_band_key_table"
EXTRA_ROWS = 11_000  # with the frozen rows: three batches of the copy
WRITES = ("CREATE", "ALTER", "DROP", "INSERT", "UPDATE", "DELETE", "WITH")


def _admin() -> sa.Engine:
    return sa.create_engine(
        os.environ["SIMSTORE_TEST_POSTGRESQL_URL"], isolation_level="AUTOCOMMIT"
    )


def _clone(template: str) -> str:
    """A new PostgreSQL database made from ``template`` (CREATE DATABASE ... TEMPLATE)."""
    url = new_server_database("postgresql")
    source, target = make_url(template).database, make_url(url).database
    admin = _admin()
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE {target}")
            conn.exec_driver_sql(f"CREATE DATABASE {target} TEMPLATE {source}")
    finally:
        admin.dispose()
    return url


def _add_rows_with_arrays(url: str) -> None:
    """EXTRA_ROWS more kept rows, in a namespace ``bulk`` of their own, each with 24 random band
    keys in its array (the shape 0015 stores); their texts are not needed, only their keys'."""
    rng = random.Random(16)
    engine = sa.create_engine(url)
    meta = sa.MetaData()
    meta.reflect(engine, only=["simstore_fingerprints", "simstore_namespaces"])
    fingerprints, namespaces = (
        meta.tables[f"simstore_{name}"] for name in ("fingerprints", "namespaces")
    )
    try:
        with engine.begin() as conn:
            first = dict(conn.execute(sa.select(namespaces).limit(1)).one()._mapping)
            bulk = {name: value for name, value in first.items() if name != "id"}
            made = conn.execute(sa.insert(namespaces).values({**bulk, "name": "bulk"}))
            assert made.inserted_primary_key is not None
            bulk_id = int(made.inserted_primary_key[0])
            model = dict(
                conn.execute(
                    sa.select(fingerprints).where(fingerprints.c.band_keys.is_not(None)).limit(1)
                )
                .one()
                ._mapping
            )
            rows = []
            for i in range(EXTRA_ROWS):
                value = rng.getrandbits(64)
                rows.append(
                    {
                        **{name: value for name, value in model.items() if name != "id"},
                        "ns_id": bulk_id,
                        "key": f"extra-{i}",
                        "fp": value - (1 << 64) if value >= 1 << 63 else value,
                        **{f"b{j}": (value >> (48 - 16 * j)) & 0xFFFF for j in range(4)},
                        "band_keys": sorted({rng.getrandbits(32) - (1 << 31) for _ in range(24)}),
                    }
                )
            conn.execute(sa.insert(fingerprints), rows)
    finally:
        engine.dispose()


def _array_pairs(url: str) -> set[tuple[int, int, int]]:
    """(row id, namespace, band key) of every key in the rows' arrays (before 0016)."""
    sql = (
        "SELECT f.id, f.ns_id, k FROM simstore_fingerprints f "
        "CROSS JOIN LATERAL unnest(f.band_keys) AS k"
    )
    return {(int(a), int(b), int(c)) for a, b, c in _rows(url, sql)}


def _side_pairs(url: str) -> set[tuple[int, int, int]]:
    sql = "SELECT fp_id, ns_id, band_key FROM simstore_minhash"
    return {(int(a), int(b), int(c)) for a, b, c in _rows(url, sql)}


def _rows(url: str, sql: str) -> list[Any]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.exec_driver_sql(sql).all())
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    url, manifest = _frozen_on("postgresql", FROM, tmp_path_factory.mktemp("frozen"))
    _add_rows_with_arrays(url)
    return url, manifest


def test_0016_moves_every_key_of_the_arrays_to_the_side_table(
    template: tuple[str, dict[str, Any]],
) -> None:
    url, manifest = template
    reference = _clone(url)
    before = _array_pairs(reference)
    assert len(before) > 24 * EXTRA_ROWS * 0.99
    migrate.upgrade(reference)
    assert migrate.current(reference) == migrate.head()
    assert _side_pairs(reference) == before
    # the keys carry their rows' times; the arrays, their index and the progress mark are gone
    differing = _rows(
        reference,
        "SELECT count(*) FROM simstore_minhash m JOIN simstore_fingerprints f ON f.id = m.fp_id "
        "WHERE m.added_at <> f.added_at",
    )
    assert differing[0][0] == 0
    assert _rows(reference, "SELECT count(band_keys) FROM simstore_fingerprints")[0][0] == 0
    assert _rows(reference, "SELECT count(*) FROM simstore_settings")[0][0] == 0
    assert _differences_from_the_models(reference) == []
    assert signed_rows_as_made_now(reference, manifest) > 0
    check_frozen(reference, manifest)


@pytest.mark.slow  # about 15 upgrades killed and run again, each in two processes
def test_0016_killed_before_each_of_its_writes_resumes_to_the_same_database(
    template: tuple[str, dict[str, Any]],
) -> None:
    url, manifest = template
    reference = _clone(url)
    before = _array_pairs(reference)
    listed = _statements(reference)
    expected = _contents(reference)
    ours = [row for row in listed if row["step"] == STEP]
    points = [row["n"] for row in ours if row["sql"].split()[0].upper() in WRITES]
    copies = [row["n"] for row in ours if row["sql"].upper().startswith("WITH")]
    assert len(copies) == 3, ours  # three committed batches: kills between them too
    for point in points:
        killed = _clone(url)
        _kill_at(killed, point)
        assert migrate.current(killed) == FROM, point
        _upgrade_again(killed)
        assert migrate.current(killed) == migrate.head(), point
        assert _side_pairs(killed) == before, f"killed before statement {point}"
        assert _contents(killed) == expected, f"killed before statement {point}"
    check_frozen(reference, manifest)


def test_0016_resumes_after_a_kill_between_two_committed_batches(
    template: tuple[str, dict[str, Any]],
) -> None:
    """The fast tier's share of the test above: killed after the first batch committed (the
    second's copy not sent), the upgrade goes on from the progress mark."""
    url, _manifest = template
    killed = _clone(url)
    before = _array_pairs(killed)
    listed = _statements(_clone(url))
    copies = [row["n"] for row in listed if row["step"] == STEP and row["sql"].startswith("WITH")]
    _kill_at(killed, copies[1])
    assert migrate.current(killed) == FROM
    copied = _side_pairs(killed)
    assert copied and copied < before  # the first batch is there, committed
    mark = _rows(killed, "SELECT value FROM simstore_settings")
    assert mark and int(mark[0][0]) >= max(row_id for row_id, _ns, _key in copied)
    _upgrade_again(killed)
    assert migrate.current(killed) == migrate.head()
    assert _side_pairs(killed) == before


def test_0016_on_a_partitioned_database_partitions_the_keys_like_their_rows(
    template: tuple[str, dict[str, Any]],
) -> None:
    """A database partitioned under 0015 (rows and decisions only): 0016 makes the band keys'
    partitions with the rows' bounds, and a purge drops both."""
    url, _manifest = template
    partitioned = _clone(url)
    interval, keep = 86_400, 2 * 86_400
    latest = _rows(partitioned, "SELECT max(added_at) FROM simstore_fingerprints")[0][0]
    engine = sa.create_engine(partitioned)
    with engine.begin() as conn:  # what `simstore db partition` did under 0015
        lock_tables(conn)
        first = partitions._floor(latest, partitions.timedelta(seconds=interval))
        first += partitions.timedelta(seconds=interval)
        for table in partitions.ROW_TABLES:
            partitions._convert(conn, table, partitions.TIME_COLUMNS[table], first)
            for day in range(2):
                lower = first + partitions.timedelta(days=day)
                upper = lower + partitions.timedelta(days=1)
                seconds = int((lower - EPOCH).total_seconds())
                conn.exec_driver_sql(
                    f"CREATE TABLE {table}_p{seconds} PARTITION OF {table} FOR VALUES FROM "
                    f"('{lower.isoformat(sep=' ')}') TO ('{upper.isoformat(sep=' ')}')"
                )
        for name, value in (
            ("partition_interval", str(interval)),
            ("partition_keep", str(keep)),
            ("partition_first_boundary", first.isoformat()),
        ):
            conn.execute(sa.insert(settings).values(name=name, value=value))
    engine.dispose()
    before = _array_pairs(partitioned)
    _upgrade_again(partitioned)
    assert _side_pairs(partitioned) == before
    names = partitions.partition_names(partitioned, "simstore_minhash")
    rows_names = partitions.partition_names(partitioned, "simstore_fingerprints")
    assert [n.removeprefix("simstore_minhash") for n in names] == [
        n.removeprefix("simstore_fingerprints") for n in rows_names
    ]
    assert _rows(partitioned, "SELECT count(*) FROM simstore_minhash_p_legacy")[0][0] == len(before)
    # the window moves past the legacy partition: its rows and keys go by DROP TABLE
    with SimStore(partitioned, keep="2d") as store:
        store.purge(now=first + partitions.timedelta(days=3))
    assert "simstore_minhash_p_legacy" not in partitions.partition_names(
        partitioned, "simstore_minhash"
    )
    assert _side_pairs(partitioned) == set()
    assert _rows(partitioned, "SELECT count(*) FROM simstore_fingerprints")[0][0] == 0


def _db_check(url: str) -> tuple[int, dict[str, Any], str]:
    """``simstore --json db check`` in a process of its own: exit code, JSON, plain text."""
    run = [sys.executable, "-m", "simstore.cli", "--db", url]
    data = subprocess.run(
        [*run, "--json", "db", "check"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    text = subprocess.run(
        [*run, "db", "check"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert data.returncode == text.returncode, (data.stderr, text.stderr)
    return data.returncode, json.loads(data.stdout), text.stdout


def test_db_check_warns_of_autovacuum_disabled_on_the_band_keys() -> None:
    url = new_server_database("postgresql")
    migrate.upgrade(url)
    code, data, _text = _db_check(url)
    assert code == 0 and data["up_to_date"]
    assert not any("simstore_minhash" in warning for warning in data["warnings"])
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE simstore_minhash SET (autovacuum_enabled = false)")
    engine.dispose()
    code, data, text = _db_check(url)
    assert code == 0  # a warning, not a failure: the schema is up to date
    [warning] = [w for w in data["warnings"] if "simstore_minhash" in w]
    assert "autovacuum is disabled" in warning and f"warning: {warning}" in text
