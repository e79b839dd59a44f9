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
    SchemaOutOfDate saying so: the code, not the database, needs upgrading.
    """
    from alembic import command

    with connection_for(bind) as connection, translate_errors(connection.engine.url):
        ours = _ours(bind, connection)
        config = _config(connection)
        with _upgrade_lock(connection, owned=ours):
            _refuse_newer(connection, bind)
            command.upgrade(config, revision)
            if ours:
                connection.commit()
            reached = _read_revision(connection)
            if ours:
                connection.rollback()
    return reached or ""


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
