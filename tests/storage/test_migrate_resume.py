"""``simstore db upgrade`` killed and run again, run by several processes at once, and run by a
simstore older than the database.

MySQL and MariaDB commit every DDL statement, so an upgrade killed with SIGKILL stops between
statements with part of a step done and the revision not yet recorded. Where it stops is chosen
deterministically: the worker (``python -m tests._workers upgrade-killed URL N``) counts the SQL
statements it sends and kills itself with SIGKILL just before the N-th, and the same code on the
same rows always sends the same statements. A first run with N = 0 lists every statement with
its alembic step, from which each case picks its points; that run's database, upgraded without a
kill, is the reference every resumed database must equal, row for row and table for table.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from sqlalchemy.engine import make_url

from simstore.cli import main
from simstore.errors import SchemaOutOfDate
from simstore.storage import migrate
from simstore.store import SimStore
from tests._workers import ROOT, command
from tests.conftest import new_server_database
from tests.storage.test_upgrade_frozen import (
    _differences_from_the_models,
    _frozen_on,
    check_frozen,
    signed_rows_as_made_now,
)

OLD_SCHEME = "minhash-c5-96-24x4-v1"  # the scheme 0007 converts
OTHER_SCHEME = "minhash-made-up-v0"  # a scheme 0007 must carry over as it is
SIGNED_ROWS = 6_000  # more than 0007's and 0010's batch of 5,000
FROM_DATA = "0006_minhash_no_purge_index"
WRITES = ("CREATE", "ALTER", "DROP", "RENAME", "INSERT", "UPDATE", "DELETE")


def _statements(url: str) -> list[dict[str, Any]]:
    """Upgrade ``url`` without a kill; every statement the upgrade sent, in order."""
    done = subprocess.run(
        command("upgrade-killed", url, "0"), cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _kill_at(url: str, statement: int) -> None:
    """Run the upgrade of ``url`` and SIGKILL it just before its ``statement``-th statement."""
    done = subprocess.run(
        command("upgrade-killed", url, str(statement)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, (statement, done.stderr)


def _upgrade_again(url: str) -> None:
    """``simstore db upgrade`` in a process of its own, as a user would run it after the kill."""
    done = subprocess.run(
        [sys.executable, "-m", "simstore.cli", "--db", url, "db", "upgrade"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _kill_points(listed: list[dict[str, Any]], every_write_of: set[str], others: int) -> list[int]:
    """Statement numbers to kill at: before every write of the steps in ``every_write_of``, and
    before ``others`` writes spread over each other step."""
    chosen: list[int] = []
    steps = list(dict.fromkeys(row["step"] for row in listed))
    for step in steps:
        writes = [
            row["n"]
            for row in listed
            if row["step"] == step and row["sql"].split()[0].upper() in WRITES
        ]
        if step in every_write_of or len(writes) <= others:
            chosen += writes
        elif writes:
            chosen += [writes[i * (len(writes) - 1) // (others - 1)] for i in range(others)]
    return sorted(set(chosen))


def _mysql_admin() -> sa.Engine:
    return sa.create_engine(os.environ["SIMSTORE_TEST_MYSQL_URL"], isolation_level="AUTOCOMMIT")


def _clone(template: str) -> str:
    """A new MariaDB database holding a copy of every table of ``template``."""
    url = new_server_database("mysql")
    source, target = make_url(template).database, make_url(url).database
    admin = _mysql_admin()
    try:
        with admin.connect() as conn:
            tables = conn.exec_driver_sql(f"SHOW TABLES FROM {source}").scalars().all()
            for table in tables:
                conn.exec_driver_sql(f"CREATE TABLE {target}.{table} LIKE {source}.{table}")
                conn.exec_driver_sql(f"INSERT INTO {target}.{table} SELECT * FROM {source}.{table}")
    finally:
        admin.dispose()
    return url


def _contents(url: str) -> dict[str, tuple[list[str], list[str], list[tuple[Any, ...]]]]:
    """Every table: its columns, its indexes (name and columns) and its rows, sorted."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            inspector = sa.inspect(conn)
            found = {}
            for table in sorted(inspector.get_table_names()):
                columns = [column["name"] for column in inspector.get_columns(table)]
                indexes = sorted(
                    f"{index['name']}{index['column_names']}"
                    for index in inspector.get_indexes(table)
                )
                rows = conn.exec_driver_sql(f"SELECT * FROM {table}").all()
                found[table] = (columns, indexes, sorted(tuple(row) for row in rows))
            return found
    finally:
        engine.dispose()


def _add_signed_rows(url: str) -> None:
    """Add a namespace ``bulk`` of SIGNED_ROWS rows with old (384-byte) signatures and band keys,
    and a namespace of another scheme with keys of its own."""
    rng = random.Random(34)
    engine = sa.create_engine(url)
    meta = sa.MetaData()
    meta.reflect(engine, only=["simstore_namespaces", "simstore_fingerprints", "simstore_minhash"])
    namespaces, fingerprints, keys = (
        meta.tables[name]
        for name in ("simstore_namespaces", "simstore_fingerprints", "simstore_minhash")
    )
    try:
        with engine.begin() as conn:
            default = dict(
                conn.execute(sa.select(namespaces).where(namespaces.c.name == "default"))
                .one()
                ._mapping
            )
            assert default["minhash_scheme"] == OLD_SCHEME
            other = {**default, "id": None, "name": "other scheme", "minhash_scheme": OTHER_SCHEME}
            other_id = _new_id(conn, sa.insert(namespaces).values(other))
            bulk = {**default, "id": None, "name": "bulk"}
            bulk_id = _new_id(conn, sa.insert(namespaces).values(bulk))
            model = dict(
                conn.execute(
                    sa.select(fingerprints).where(fingerprints.c.ns_id == default["id"]).limit(1)
                )
                .one()
                ._mapping
            )
            rows = []
            for i in range(SIGNED_ROWS + 50):
                value = rng.getrandbits(64)
                ns_id = bulk_id if i < SIGNED_ROWS else other_id
                rows.append(
                    {
                        **model,
                        "id": None,
                        "ns_id": ns_id,
                        "key": f"signed-{i}",
                        "fp": value - (1 << 64) if value >= 1 << 63 else value,
                        **{f"b{j}": (value >> (48 - 16 * j)) & 0xFFFF for j in range(4)},
                        "text": None,
                        "signature": rng.randbytes(384),
                    }
                )
            conn.execute(sa.insert(fingerprints), rows)
            made = conn.execute(
                sa.select(fingerprints.c.id, fingerprints.c.ns_id, fingerprints.c.part).where(
                    fingerprints.c.key.like("signed-%")
                )
            ).all()
            conn.execute(
                sa.insert(keys),
                [
                    {"band_key": rng.getrandbits(31), "ns_id": ns_id, "part": part, "fp_id": row_id}
                    for row_id, ns_id, part in made
                    for _band in range(2)  # dropped by 0007: how many does not matter
                ],
            )
    finally:
        engine.dispose()


def _new_id(conn: sa.Connection, insert: sa.Insert) -> int:
    made = conn.execute(insert).inserted_primary_key
    assert made is not None
    return int(made[0])


def _resume_points(listed: list[dict[str, Any]]) -> dict[str, int]:
    """One kill point before each stage a resumed 0007 must recognise, by what was sent."""
    writes = [
        row
        for row in listed
        if row["step"] == "0007_minhash_compact" and row["sql"].split()[0].upper() in WRITES
    ]
    sql = [row["sql"].upper() for row in writes]
    added = next(i for i, text in enumerate(sql) if "ADD COLUMN BAND_KEYS" in text)
    dropped = next(i for i, text in enumerate(sql) if text.startswith("DROP TABLE"))
    return {
        "the column added, the staged table made": writes[added + 2]["n"],
        "swapped, the old table not yet dropped": writes[dropped]["n"],
    }


def test_an_upgrade_killed_at_each_stage_of_0007_on_mariadb_resumes_with_every_row(
    tmp_path: Path,
) -> None:
    """The fast tier's share of the test below: a kill before each stage 0007 checks for when it
    runs again (the column there and the staged table there; the tables swapped and the old
    table left), on the frozen 0006 database as it is, upgraded again in this process."""
    template, manifest = _frozen_on("mysql", FROM_DATA, tmp_path)
    reference = _clone(template)
    listed = _statements(reference)
    expected = _contents(reference)
    points = _resume_points(listed)
    assert sorted(points.values()) == list(points.values())  # the stages in their order
    for stage, point in points.items():
        url = _clone(template)
        _kill_at(url, point)
        assert migrate.current(url) == "0006_minhash_no_purge_index", stage  # killed inside 0007
        migrate.upgrade(url)
        assert migrate.current(url) == migrate.head(), stage
        assert _contents(url) == expected, f"killed before statement {point}: {stage}"
    assert signed_rows_as_made_now(reference, manifest) > 0


@pytest.mark.slow  # about 20 upgrades killed and run again, each in two processes
def test_an_upgrade_killed_inside_each_data_step_on_mariadb_resumes_with_every_row(
    tmp_path: Path,
) -> None:
    template, manifest = _frozen_on("mysql", FROM_DATA, tmp_path)
    _add_signed_rows(template)
    before = _contents(template)
    reference = _clone(template)
    listed = _statements(reference)
    expected = _contents(reference)
    assert migrate.current(reference) == migrate.head()
    # the reference is right: old keys gone, every converted row's keys there, the other kept
    assert "simstore_minhash_new" not in expected and "simstore_minhash_old" not in expected
    assert len(expected["simstore_fingerprints"][2]) == len(before["simstore_fingerprints"][2])
    assert signed_rows_as_made_now(reference, manifest) > 0
    points = _kill_points(listed, {"0007_minhash_compact"}, others=2)
    assert len([row for row in listed if row["step"] == "0007_minhash_compact"]) > 10
    for point in points:
        url = _clone(template)
        _kill_at(url, point)
        _upgrade_again(url)
        assert migrate.current(url) == migrate.head(), point
        assert _contents(url) == expected, f"killed before statement {point}"
    assert _differences_from_the_models(reference) == []
    check_frozen(reference, manifest)


@pytest.mark.slow  # a dozen first upgrades killed and run again
def test_a_first_upgrade_killed_in_each_step_on_mariadb_resumes_to_the_models() -> None:
    reference = new_server_database("mysql")
    listed = _statements(reference)
    expected = _contents(reference)
    for point in _kill_points(listed, set(), others=2):
        url = new_server_database("mysql")
        _kill_at(url, point)
        _upgrade_again(url)
        assert _contents(url) == expected, f"killed before statement {point}"
    assert _differences_from_the_models(reference) == []
    with SimStore(reference, namespace="after") as store:
        assert store.add("a first upgrade killed and resumed", key="a").inserted


def test_a_mariadb_left_by_the_old_0007_kill_is_repaired(tmp_path: Path) -> None:
    """What a kill inside 0007 left under earlier simstores (issue 34): the revision 0006, the
    band-key table made again and empty, ``band_keys`` added; the old signatures still there."""
    url, manifest = _frozen_on("mysql", FROM_DATA, tmp_path)
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM simstore_minhash").scalar()
        conn.exec_driver_sql("DROP TABLE simstore_minhash")
        conn.exec_driver_sql(
            "CREATE TABLE simstore_minhash (band_key BIGINT NOT NULL, ns_id INTEGER NOT NULL, "
            "fp_id BIGINT NOT NULL, PRIMARY KEY (band_key, ns_id, fp_id))"
        )
        conn.exec_driver_sql("ALTER TABLE simstore_fingerprints ADD COLUMN band_keys BLOB")
    engine.dispose()
    assert migrate.current(url) == FROM_DATA
    _upgrade_again(url)
    assert migrate.current(url) == migrate.head()
    assert signed_rows_as_made_now(url, manifest) > 0  # every key made again from its signature
    check_frozen(url, manifest)


@pytest.mark.parametrize("kind", ["postgresql", "mysql", "sqlite"])
def test_four_processes_upgrading_an_empty_database_at_once_all_succeed(
    kind: str, tmp_path: Path
) -> None:
    # a new SQLite file is made from the packaged schema file, under the same lock
    url = f"sqlite:///{tmp_path / 'new.db'}" if kind == "sqlite" else new_server_database(kind)
    children = [
        subprocess.Popen(
            command("cli-after-go", "--db", url, "db", "upgrade"),
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for child in children:  # every one imported and ready: then all start together
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    outcomes = [child.communicate() for child in children]
    assert [child.returncode for child in children] == [0] * 4, outcomes
    assert migrate.current(url) == migrate.head()
    assert _differences_from_the_models(url) == []


def test_a_database_newer_than_the_code_says_to_upgrade_simstore(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    url = f"sqlite:///{path}"
    migrate.upgrade(url)
    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("UPDATE simstore_alembic_version SET version_num = '9999_future'")
    for auto_upgrade in (None, True, False):
        with pytest.raises(SchemaOutOfDate, match="older than the database") as raised:
            SimStore(url, auto_upgrade=auto_upgrade)
        assert "upgrade simstore" in str(raised.value) and "db upgrade" not in str(raised.value)
    with pytest.raises(SchemaOutOfDate, match="upgrade simstore"):
        migrate.upgrade(url)
    for args, code in ((["stats"], 3), (["db", "upgrade"], 3), (["db", "check"], 1)):
        result = CliRunner().invoke(main, ["--db", url, *args])
        assert result.exit_code == code, (args, result.output)
        assert "older than the database" in result.output, (args, result.output)
        assert "db upgrade" not in result.output and "Traceback" not in result.output
    assert migrate.current(url) == "9999_future"  # nothing was changed
