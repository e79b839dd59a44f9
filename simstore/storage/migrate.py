"""Schema migrations: simstore runs its own alembic scripts, with a version table of its own.

``upgrade(bind)`` brings a database to the packaged head under a server-wide lock (PostgreSQL's
``pg_advisory_xact_lock``, MySQL's ``GET_LOCK``, SQLite's ``BEGIN IMMEDIATE``), so that processes
upgrading one database at once take turns and all succeed; ``current(bind)`` names its revision;
``status(bind)`` says whether it is at head and, when not, what to run; ``check(bind)`` raises
SchemaOutOfDate (naming the command to run) unless it is at head. The CLI, the Flask commands
and the Django management command all show a ``Status`` the same way.

Every ``SimStore`` checks the schema when it opens, so the check is cheap: the packaged head and
the known revisions are read from the scripts once per process (they are part of the installed
package and do not change under it), and the database's revision is one SELECT on the version
table (after the dialect's own has-table probe), not an alembic ``MigrationContext``.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import exc
from sqlalchemy.engine import URL, Connection

from simstore.errors import SchemaOutOfDate
from simstore.storage import schema
from simstore.storage.db import connection_for, redact, translate_errors

VERSION_TABLE = "simstore_alembic_version"
SQLITE_SCHEMA = Path(__file__).with_name("sqlite_schema.sql")


def compared(obj: object, name: str | None, type_: str, reflected: bool, other: object) -> bool:
    """alembic's ``include_object`` for comparing a database with simstore's models: simstore's
    own tables and what is on them, less its version table and PostgreSQL's GIN index (made by
    the migration, not in the models: no other dialect has one)."""
    if type_ == "table":
        return bool(name and name.startswith("simstore_")) and name != VERSION_TABLE
    if type_ == "index" and name == schema.POSTGRESQL_BAND_KEY_INDEX:
        return False
    table = getattr(obj, "table", None)
    return table is None or str(table.name).startswith("simstore_")


@functools.cache
def migrations_dir() -> Path:
    """Installed wheels carry the scripts in simstore/migrations; a checkout has them at the top."""
    package = Path(__file__).resolve().parent.parent  # simstore/storage/migrate.py -> simstore
    for candidate in (package / "migrations", package.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise SchemaOutOfDate("simstore's migration scripts are missing from this installation")


def _config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.attributes["target_metadata"] = schema.metadata
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@functools.cache
def _revisions(location: Path) -> tuple[str, frozenset[str]]:
    """The head and every revision of the scripts at ``location`` (read once per process)."""
    config = Config()
    config.set_main_option("script_location", str(location))
    script = ScriptDirectory.from_config(config)
    revision = script.get_current_head()
    assert revision is not None  # noqa: S101 - the package always ships at least one revision
    return revision, frozenset(found.revision for found in script.walk_revisions())


def head() -> str:
    """The newest revision shipped with this simstore."""
    return _revisions(migrations_dir())[0]


def current(bind: object) -> str | None:
    """The revision the database is at, or None when simstore's schema was never created."""
    with connection_for(bind) as connection, translate_errors(connection.engine.url):
        ours = _ours(bind, connection)
        revision = _read_revision(connection)
        if ours and connection.in_transaction():
            connection.rollback()
        return revision


def _read_revision(connection: Connection) -> str | None:
    """What alembic's ``get_current_revision`` answers, in one query on the version table."""
    if not connection.dialect.has_table(connection, VERSION_TABLE):
        return None
    query = f"SELECT version_num FROM {VERSION_TABLE}"  # noqa: S608 - a constant name
    found = connection.exec_driver_sql(query).all()
    if len(found) > 1:
        heads = ", ".join(sorted(str(row[0]) for row in found))
        raise SchemaOutOfDate(f"simstore's version table has several revisions ({heads})")
    return str(found[0][0]) if found else None


def _owns(bind: object) -> bool:
    return not isinstance(bind, Connection)


def _ours(bind: object, connection: Connection) -> bool:
    """Whether the transaction ``connection`` works in is simstore's to end: a connection it
    made, or a caller's outside a transaction. A caller's connection is left as it came:
    SQLAlchemy begins a transaction on its first statement, and one left open would make the
    store's later writes savepoints of a transaction nobody commits."""
    return _owns(bind) or not connection.in_transaction()


def upgrade(bind: object, revision: str = "heads") -> str:
    """Run the migrations up to ``revision`` (default: the newest); returns the revision reached.

    A database at a revision this simstore does not know (made by a newer one) is refused with
    SchemaOutOfDate saying so: the code, not the database, needs upgrading. An empty SQLite
    database asked for the head gets the head's schema in one step (``sqlite_schema.sql``).
    """
    return _upgrade(bind, revision, schema_file=True)


def upgrade_by_scripts(bind: object, revision: str = "heads") -> str:
    """``upgrade`` that runs every script, also on an empty SQLite database: how
    ``sqlite_schema.sql`` is made, and what the tests compare it with."""
    return _upgrade(bind, revision, schema_file=False)


def _upgrade(bind: object, revision: str, *, schema_file: bool) -> str:
    from alembic import command

    with connection_for(bind) as connection, translate_errors(connection.engine.url):
        ours = _ours(bind, connection)
        with _upgrade_lock(connection, owned=ours):
            _refuse_newer(connection, bind)
            if not (schema_file and _created_at_head(connection, revision)):
                command.upgrade(_config(connection), revision)
            if ours:
                connection.commit()
            reached = _read_revision(connection)
            if ours:
                connection.rollback()
    return reached or ""


def _created_at_head(connection: Connection, revision: str) -> bool:
    """On an empty SQLite database asked for the head, make the head's schema from
    ``sqlite_schema.sql`` (under the upgrade lock the caller holds); False when the scripts must
    run instead."""
    if connection.dialect.name != "sqlite" or revision not in ("head", "heads", head()):
        return False
    made, statements = packaged_sqlite_schema()
    if made != head():
        return False
    if connection.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar():
        return False
    for statement in statements:
        connection.exec_driver_sql(statement)
    return True


@functools.cache
def packaged_sqlite_schema() -> tuple[str | None, tuple[str, ...]]:
    """The revision ``sqlite_schema.sql`` was made at and its statements (read once per
    process); (None, ()) when the file is missing."""
    if not SQLITE_SCHEMA.is_file():
        return None, ()
    statements = split_statements(SQLITE_SCHEMA.read_text(encoding="utf-8"))
    return _revision_in(statements), statements


def split_statements(script: str) -> tuple[str, ...]:
    """The statements of an SQL script, each whole (as SQLite's parser sees where one ends);
    lines of comment between them are left out."""
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        if not pending and (not line.strip() or line.lstrip().startswith("--")):
            continue
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip().removesuffix(";"))
            pending = ""
    if pending.strip():
        raise SchemaOutOfDate(f"{SQLITE_SCHEMA} ends inside a statement: {pending.strip()[:80]}")
    return tuple(statements)


_VERSION_ROW = f"INSERT INTO {VERSION_TABLE} (version_num) VALUES "  # noqa: S608 - constants


def _revision_in(statements: tuple[str, ...]) -> str | None:
    for statement in statements:
        if statement.startswith(_VERSION_ROW):
            return statement.removeprefix(_VERSION_ROW).strip("()'")
    return None


def sqlite_schema_script(connection: Connection) -> str:
    """What ``sqlite_schema.sql`` holds for the SQLite database on ``connection``: its schema as
    ``sqlite_master`` records it (in the order it was made, SQLite's own objects left out) and
    its version row. Run on a file the scripts brought from empty to the head."""
    rows = connection.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
        "ORDER BY rowid"
    ).all()
    revision = _read_revision(connection)
    counters = connection.exec_driver_sql(
        "SELECT name, seq FROM sqlite_sequence ORDER BY name"
        if connection.dialect.has_table(connection, "sqlite_sequence")
        else "SELECT 1 WHERE 0"
    ).all()
    lines = [
        "-- simstore's schema at its newest revision, as SQLite records it after the migration",
        "-- scripts ran on an empty file; a new file is made from it in one transaction.",
        "-- Made by tests/data/make_sqlite_schema.py; tests/storage/test_migrations.py checks it.",
    ]
    lines += [f"{row[0]};" for row in rows]
    # AUTOINCREMENT's counters as the scripts left them (SQLite makes its table with the first)
    lines += [
        f"INSERT INTO sqlite_sequence (name, seq) VALUES ('{name}', {int(seq)});"  # noqa: S608
        for name, seq in counters
    ]
    lines.append(f"{_VERSION_ROW}('{revision}');")
    return "\n".join(lines) + "\n"


UPGRADE_LOCK_KEY = 0x73696D73746F7265  # "simstore": PostgreSQL's advisory locks are per database


@contextlib.contextmanager
def _upgrade_lock(connection: Connection, *, owned: bool) -> Iterator[None]:
    """Hold the database's upgrade lock: one process migrates, the others wait, then find it done.

    PostgreSQL's transaction-level advisory lock ends with the upgrade's transaction. MySQL's
    GET_LOCK belongs to the session (named after the database: it is server-wide); it is taken
    and its transaction ended before alembic begins, so that alembic still commits each revision
    on its own there (MySQL's DDL commits anyway). SQLite's BEGIN IMMEDIATE takes the file's
    write lock.
    """
    name = connection.dialect.name
    if name == "postgresql":
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({UPGRADE_LOCK_KEY})")
        yield
        return
    if name == "sqlite":
        if owned:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        yield
        return
    if name not in ("mysql", "mariadb"):
        yield
        return
    lock = f"simstore_upgrade:{connection.engine.url.database or ''}"[:64]
    # GET_LOCK answers 0 when its wait ends without the lock: wait again
    while connection.exec_driver_sql("SELECT GET_LOCK(%s, 3600)", (lock,)).scalar() != 1:
        pass
    if owned:
        connection.commit()
    try:
        yield
    finally:
        with contextlib.suppress(exc.SQLAlchemyError):
            if owned and connection.in_transaction():
                connection.rollback()
            connection.exec_driver_sql("SELECT RELEASE_LOCK(%s)", (lock,))
            if owned:
                connection.commit()


def _refuse_newer(connection: Connection, bind: object) -> None:
    """Raise SchemaOutOfDate when the database is at a revision this simstore does not ship."""
    at = _read_revision(connection)
    if at is not None and at not in _revisions(migrations_dir())[1]:
        url = redact(bind if isinstance(bind, (str, URL)) else connection.engine.url)
        raise SchemaOutOfDate(_newer_message(url, at))


def _newer_message(url: str, at: str) -> str:
    return (
        f"database {url} is at revision {at}, newer than this simstore (its newest is {head()}): "
        "the code is older than the database; upgrade simstore (pip install -U simstore) "
        "instead of the database"
    )


def upgrade_command(url: str) -> str:
    """The command that brings the database at ``url`` to the packaged head (``--db`` is an
    option of ``simstore`` itself, before the subcommand)."""
    return f"simstore --db '{url}' db upgrade"


@dataclass(frozen=True)
class Status:
    """Where a database's schema stands against this simstore's migrations."""

    url: str  # the database, its password hidden
    revision: str | None  # None: simstore's schema was never created there
    head: str  # the newest revision this simstore ships
    error: str | None  # why the schema is not usable, naming the command that fixes it

    @property
    def up_to_date(self) -> bool:
        return self.error is None

    @property
    def message(self) -> str:
        """One line for people: ``<url>: <revision> (head)`` or ``(head is <head>)``."""
        revision = self.revision or "none (no simstore schema yet)"
        state = "head" if self.up_to_date else f"head is {self.head}"
        return f"{self.url}: {revision} ({state})"


def status(bind: object) -> Status:
    """The revision of the database, the packaged head, and what to run when they differ."""
    with connection_for(bind) as connection:
        url = redact(bind if isinstance(bind, (str, URL)) else connection.engine.url)
        ours = _ours(bind, connection)
        at = current(connection)
        if ours and connection.in_transaction():
            connection.rollback()
    newest = head()
    if at == newest:
        return Status(url, at, newest, None)
    known = _revisions(migrations_dir())[1]
    if at is not None and at not in known:
        return Status(url, at, newest, _newer_message(url, at))
    state = "has no simstore schema yet" if at is None else f"is at revision {at}"
    error = (
        f"database {url} {state}; simstore {newest} needs it upgraded: run {upgrade_command(url)}"
    )
    return Status(url, at, newest, error)


def check(bind: object) -> str:
    """Return the current revision if it is the packaged head, else raise SchemaOutOfDate."""
    found = status(bind)
    if found.error is not None:
        raise SchemaOutOfDate(found.error)
    return found.head
