"""simstore's alembic migrations: one head, head == models on every dialect, a host application's
own alembic history left alone, an out-of-date server refused with the fix, and the built wheel
carrying the scripts."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from simstore.errors import SchemaOutOfDate
from simstore.policy import batch
from simstore.storage import _prepared, migrate, schema
from simstore.store import SimStore
from tests.conftest import new_server_database
from tests.data.make_sqlite_schema import schema_from_scripts

LONG_TEXT = (
    "The harbour ferry timetable changes on Monday: boats leave every twenty minutes from the "
    "north pier between six and nine in the morning, and every half hour for the rest of the day."
)

ROOT = Path(__file__).resolve().parents[2]


def test_there_is_exactly_one_head() -> None:
    script = ScriptDirectory(str(migrate.migrations_dir()))
    assert len(script.get_heads()) == 1
    assert migrate.head() == script.get_current_head()


def test_migrations_never_import_live_simstore_code() -> None:
    for path in (migrate.migrations_dir() / "versions").glob("*.py"):
        source = path.read_text()
        assert "import simstore" not in source and "from simstore" not in source, path


def test_empty_database_upgraded_to_head_equals_the_models(database_url: str) -> None:
    # a new SQLite file is made from the schema file; the test below shows it is what the
    # scripts make
    engine = sa.create_engine(database_url)
    with engine.connect() as connection:
        if database_url.startswith("sqlite"):  # server fixtures arrive upgraded
            migrate.upgrade(connection)
            connection.commit()
        assert migrate.current(connection) == migrate.head()
        context = MigrationContext.configure(
            connection, opts={"include_object": migrate.compared, "compare_type": True}
        )
        differences = compare_metadata(context, schema.metadata)
    engine.dispose()
    assert differences == []


def test_the_packaged_sqlite_schema_is_what_the_scripts_make() -> None:
    # after a migration is added or changed: python tests/data/make_sqlite_schema.py
    assert migrate.SQLITE_SCHEMA.read_text(encoding="utf-8") == schema_from_scripts()
    assert migrate.packaged_sqlite_schema()[0] == migrate.head()


def _everything_sqlite_holds(path: Path) -> dict[str, object]:
    """The whole of an SQLite file as SQLite sees it: every object of its schema with its SQL,
    in the order they were made, every row of every table (SQLite's own included) and the
    header's pragmas."""
    import sqlite3

    with sqlite3.connect(path) as connection:
        objects = connection.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid"
        ).fetchall()
        rows = {
            name: sorted(connection.execute(f'SELECT * FROM "{name}"').fetchall(), key=repr)
            for kind, name, _, _ in objects
            if kind == "table"
        }
        pragmas = {
            name: connection.execute(f"PRAGMA {name}").fetchall()
            for name in ("user_version", "application_id", "auto_vacuum", "encoding")
        }
    connection.close()
    return {"objects": objects, "rows": rows, "pragmas": pragmas}


def _statements_run(url: str, how: str) -> int:
    engine = sa.create_engine(url)
    count = [0]
    sa.event.listen(engine, "before_cursor_execute", lambda *_: count.__setitem__(0, count[0] + 1))
    try:
        assert getattr(migrate, how)(engine) == migrate.head()
    finally:
        engine.dispose()
    return count[0]


def test_a_new_sqlite_file_from_the_schema_file_is_the_one_the_scripts_make(
    tmp_path: Path,
) -> None:
    by_scripts = _statements_run(f"sqlite:///{tmp_path / 'scripts.db'}", "upgrade_by_scripts")
    in_one_step = _statements_run(f"sqlite:///{tmp_path / 'new.db'}", "upgrade")
    # the new file was made from the schema file (its statements and the lock's few), not by
    # the scripts' hundreds
    assert in_one_step <= len(migrate.packaged_sqlite_schema()[1]) + 10 < by_scripts
    assert _everything_sqlite_holds(tmp_path / "new.db") == _everything_sqlite_holds(
        tmp_path / "scripts.db"
    )
    with SimStore(f"sqlite:///{tmp_path / 'new.db'}") as store:
        assert store.add(LONG_TEXT, key="a").inserted
        assert store.add(LONG_TEXT, key="b").recorded_as == "a"


def test_a_schema_file_of_another_revision_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as if a migration had been added and the schema file not rewritten: the scripts decide
    older = migrate.SQLITE_SCHEMA.read_text(encoding="utf-8").replace(
        f"VALUES ('{migrate.head()}')", "VALUES ('0015_minhash_int_keys')"
    )
    stale = tmp_path / "sqlite_schema.sql"
    stale.write_text(older, encoding="utf-8")
    monkeypatch.setattr(migrate, "SQLITE_SCHEMA", stale)
    migrate.packaged_sqlite_schema.cache_clear()
    try:
        assert migrate.packaged_sqlite_schema()[0] == "0015_minhash_int_keys"
        url = f"sqlite:///{tmp_path / 'new.db'}"
        assert _statements_run(url, "upgrade") > 10 * len(migrate.packaged_sqlite_schema()[1])
    finally:
        migrate.packaged_sqlite_schema.cache_clear()
    assert migrate.current(url) == migrate.head()


def test_a_sqlite_file_holding_a_hosts_tables_is_upgraded_by_the_scripts(tmp_path: Path) -> None:
    path = tmp_path / "host.db"
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)"))
    engine.dispose()
    url = f"sqlite:///{path}"
    assert _statements_run(url, "upgrade") > 10 * len(migrate.packaged_sqlite_schema()[1])
    holds = _everything_sqlite_holds(path)
    assert ("table", "items", "items") in [row[:3] for row in holds["objects"]]  # type: ignore[attr-defined]


def test_the_comparison_with_the_models_sees_drift_in_simstores_tables_only(
    tmp_path: Path,
) -> None:
    # the test above would pass with nothing compared: here a column and an index that the
    # models lack, on simstore's tables, are reported; a host's table beside them is not, nor
    # simstore's version table or a host index on it
    url = f"sqlite:///{tmp_path / 'drift.db'}"
    migrate.upgrade(url)
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.execute(sa.text("ALTER TABLE simstore_decisions ADD COLUMN extra INTEGER"))
        connection.execute(sa.text("CREATE INDEX drift_key ON simstore_namespaces (name, id)"))
        connection.execute(sa.text("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)"))
        connection.execute(sa.text("CREATE INDEX items_name ON items (name)"))
        connection.execute(
            sa.text("CREATE INDEX host_version ON simstore_alembic_version (version_num)")
        )
    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection, opts={"include_object": migrate.compared, "compare_type": True}
        )
        differences = compare_metadata(context, schema.metadata)
    engine.dispose()
    found = sorted((change[0], getattr(change[-1], "name", None)) for change in differences)
    assert found == [("remove_column", "extra"), ("remove_index", "drift_key")]


def test_a_host_alembic_history_lives_beside_simstore(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'host.db'}"
    host = tmp_path / "host_migrations"
    (host / "versions").mkdir(parents=True)
    (host / "env.py").write_text(
        textwrap.dedent(
            """
            from alembic import context
            from sqlalchemy import create_engine
            engine = create_engine(context.config.get_main_option("sqlalchemy.url"))
            with engine.begin() as connection:
                context.configure(connection=connection)
                with context.begin_transaction():
                    context.run_migrations()
            """
        )
    )
    (host / "versions" / "h1_items.py").write_text(
        textwrap.dedent(
            """
            import sqlalchemy as sa
            from alembic import op
            revision = "h1_items"
            down_revision = None
            branch_labels = None
            depends_on = None
            def upgrade():
                op.create_table("items", sa.Column("id", sa.Integer, primary_key=True))
            def downgrade():
                op.drop_table("items")
            """
        )
    )
    config = Config()
    config.set_main_option("script_location", str(host))
    config.set_main_option("sqlalchemy.url", url)
    command.upgrade(config, "head")
    migrate.upgrade(url)
    command.upgrade(config, "head")  # the host's history still runs (a no-op) after simstore's
    engine = sa.create_engine(url)
    with engine.connect() as connection:
        assert connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalar() == (
            "h1_items"
        )
        assert migrate.current(connection) == migrate.head()
        tables = set(sa.inspect(connection).get_table_names())
    engine.dispose()
    assert {"items", "alembic_version", "simstore_alembic_version"} <= tables
    store = SimStore(url)
    assert store.add("host and simstore side by side", key="a").inserted


@pytest.mark.parametrize("kind", ["postgresql", "mysql"])
def test_a_server_behind_the_schema_is_refused_with_the_command(kind: str) -> None:
    url = new_server_database(kind)
    with pytest.raises(SchemaOutOfDate, match=r"simstore --db .* db upgrade") as failure:
        SimStore(url)
    assert "has no simstore schema yet" in str(failure.value)
    store = SimStore(url, auto_upgrade=True)
    assert store.add("now it is upgraded", key="a").inserted
    assert migrate.check(url) == migrate.head()


@pytest.mark.slow  # builds a wheel and installs it into a fresh venv
def test_the_built_wheel_ships_the_migrations_and_works_in_a_fresh_venv(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
    )
    wheel = next(dist.glob("simstore-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "simstore/migrations/env.py" in names
    assert "simstore/migrations/versions/0001_initial.py" in names
    assert "simstore/py.typed" in names
    assert "simstore/storage/sqlite_schema.sql" in names

    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel)], check=True, capture_output=True
    )
    script = textwrap.dedent(
        """
        import simstore, simstore.storage.migrate as m
        assert "site-packages" in m.migrations_dir().as_posix(), m.migrations_dir()
        store = simstore.SimStore("sqlite:///wheel.db")
        assert store.add("made by the installed wheel", key="a").inserted
        assert m.packaged_sqlite_schema()[0] == m.head()  # the new file was made from it
        print(m.current("sqlite:///wheel.db"))
        """
    )
    # the installed wheel alone: a PYTHONPATH pointing at a checkout would import that instead
    alone = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    result = subprocess.run(
        [str(python), "-c", script], cwd=tmp_path, capture_output=True, text=True, env=alone
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == migrate.head()


def test_postgresql_keeps_band_keys_in_the_row_under_a_gin_index_the_lookup_uses() -> None:
    url = new_server_database("postgresql")
    migrate.upgrade(url)
    rng = random.Random(4)
    words = [f"w{i}" for i in range(5000)]
    texts = [" ".join(rng.choice(words) for _ in range(60)) for _ in range(1500)]
    with SimStore(url) as store:
        list(store.add_many([{"key": f"k{i}", "text": text} for i, text in enumerate(texts)]))
        [item] = batch.sign([texts[7]])
        with store.engine.connect() as conn:
            definition = conn.execute(
                sa.text("SELECT indexdef FROM pg_indexes WHERE indexname = :name"),
                {"name": schema.POSTGRESQL_BAND_KEY_INDEX},
            ).scalar_one()
            assert "USING gin (band_keys)" in definition and "WITH (fastupdate=off)" in definition
            stored = conn.execute(
                sa.text("SELECT band_keys FROM simstore_fingerprints WHERE key = 'k7'")
            ).scalar_one()
            assert sorted(stored) == list(item.band_keys)
            assert conn.execute(sa.text("SELECT COUNT(*) FROM simstore_minhash")).scalar() == 0
            conn.execute(sa.text("ANALYZE simstore_fingerprints"))
            statement = _prepared.rows_sharing_band_keys(conn.dialect, len(item.band_keys), True)
            values = {f"k{j}": key for j, key in enumerate(item.band_keys)}
            plan = conn.exec_driver_sql(
                "EXPLAIN " + statement.sql, {"ns": store.ns_id, "least": 2, "cutoff": 0, **values}
            ).scalars()
            assert any(schema.POSTGRESQL_BAND_KEY_INDEX in line for line in plan)
            # each shared row by its id (the lateral join), never a scan of the table
            assert not any("Seq Scan on simstore_fingerprints " in line for line in plan)


def test_postgresql_sessions_of_a_store_never_compile_their_lookups() -> None:
    # The planner guesses each band-key probe at 0.5% of the table, so past a few hundred
    # thousand rows a 1 ms lookup's estimated cost passes jit_above_cost and the server spent
    # ~20 ms compiling it. jit_above_cost = 0 on the database makes every plan a candidate.
    url = new_server_database("postgresql")
    plain = sa.create_engine(url)
    with plain.begin() as conn:
        conn.exec_driver_sql(f"ALTER DATABASE {plain.url.database} SET jit_above_cost = 0")
    plain.dispose()  # the setting applies to sessions that start after it
    migrate.upgrade(url)
    texts = [f"notice {i}: the ferry leaves the north pier at {i % 12} o'clock" for i in range(50)]
    [item] = batch.sign([texts[3]])
    values = {f"k{j}": key for j, key in enumerate(item.band_keys)}
    statement = (
        "EXPLAIN (ANALYZE) "
        + _prepared.rows_sharing_band_keys(plain.dialect, len(item.band_keys), True).sql
    )

    def plan(conn: sa.Connection, ns_id: int) -> str:
        lines = conn.exec_driver_sql(statement, {"ns": ns_id, "least": 1, "cutoff": 0, **values})
        return "\n".join(lines.scalars())

    with SimStore(url) as store:
        list(store.add_many([{"key": f"k{i}", "text": text} for i, text in enumerate(texts)]))
        with plain.connect() as conn:  # the server compiles when a session lets it
            assert "JIT:" in plan(conn, store.ns_id)
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("SHOW jit").scalar() == "off"
            assert "JIT:" not in plan(conn, store.ns_id)
        # queries go through a second engine of the store's own (autocommit reads)
        assert store._connections.read(lambda conn: conn.exec_driver_sql("SHOW jit").scalar()) == (
            "off"
        )
        assert store.query(texts[3])
    plain.dispose()
