"""The namespaces of a database: which exist, what they hold, opening one without creating it,
and dropping one.

``SimStore(bind, namespace=...)`` creates a namespace it does not find, which is right for adding
and wrong for looking: a typo in a read-only command would make a namespace and report zeros.
``existing(bind, name)`` answers whether it is there without writing anything (on SQLite it does
not even create a missing file), ``listed(bind)`` lists them with their counts, and
``drop(store)`` deletes a namespace's rows from every simstore table and then the namespace.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from simstore.errors import DatabaseUnavailable, SimstoreError
from simstore.storage import migrate
from simstore.storage.db import connection_for, redact
from simstore.storage.locking import lock_for_write
from simstore.storage.schema import decisions, fingerprints, metadata, namespaces

if TYPE_CHECKING:
    from simstore.store import SimStore


class NoSuchNamespace(SimstoreError):
    """A namespace (or the database itself) that a read-only use expected is not there."""


@dataclass(frozen=True)
class NamespaceInfo:
    """One namespace: its name, the preset its rows were made with, and what it holds."""

    name: str
    preset: str  # name@version
    policy: str | None  # the recorded recipe (Policy.recipe); None: made by 0.3, not yet opened
    kept: int
    decisions: int
    created_at: datetime


def missing_sqlite_file(url: str | URL) -> Path | None:
    """The file a SQLite URL names when it does not exist (opening it would create it)."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return None
    path = Path(database)
    return None if path.exists() else path


def _no_database(url: str | URL, path: Path) -> SimstoreError:
    if not path.parent.is_dir():  # not even the folder: the database cannot be reached
        return DatabaseUnavailable(f"database {redact(url)}: no folder {path.parent}")
    return NoSuchNamespace(f"no database at {path} ({redact(url)}): nothing was added there yet")


def listed(bind: str | URL) -> list[NamespaceInfo]:
    """Every namespace of the database with its preset and counts, by name (nothing is written).

    The schema must be up to date (``SchemaOutOfDate`` names the fix); a missing SQLite file is
    ``NoSuchNamespace``, not a new empty database.
    """
    path = missing_sqlite_file(bind)
    if path is not None:
        raise _no_database(bind, path)
    migrate.check(bind)
    kept = (
        sa.select(sa.func.count()).where(fingerprints.c.ns_id == namespaces.c.id).scalar_subquery()
    )
    logged = (
        sa.select(sa.func.count()).where(decisions.c.ns_id == namespaces.c.id).scalar_subquery()
    )
    statement = sa.select(
        namespaces.c.name,
        namespaces.c.preset_name,
        namespaces.c.preset_version,
        namespaces.c.policy,
        kept,
        logged,
        namespaces.c.created_at,
    ).order_by(namespaces.c.name)
    with connection_for(bind) as conn:
        rows = conn.execute(statement).all()
    return [
        # a kept row is its own decision's record: the decisions are the kept and the logged
        NamespaceInfo(
            str(name), f"{preset}@{version}", policy, int(count), int(count) + int(made), created
        )
        for name, preset, version, policy, count, made, created in rows
    ]


def existing(bind: str | URL, name: str) -> None:
    """Raise ``NoSuchNamespace`` unless the database has namespace ``name`` (writes nothing)."""
    path = missing_sqlite_file(bind)
    if path is not None:
        raise _no_database(bind, path)
    migrate.check(bind)
    with connection_for(bind) as conn:
        found = conn.execute(sa.select(namespaces.c.id).where(namespaces.c.name == name)).scalar()
        names = (
            []
            if found is not None
            else list(
                conn.execute(sa.select(namespaces.c.name).order_by(namespaces.c.name)).scalars()
            )
        )
    if found is None:
        known = ", ".join(repr(known) for known in names[:10]) or "none"
        raise NoSuchNamespace(
            f"no namespace {name!r} in {redact(bind)} (namespaces: {known}; "
            "'simstore namespaces' lists them)"
        )


def drop(store: SimStore) -> dict[str, int]:
    """Delete the store's namespace: its rows in every simstore table, then the namespace row.

    One transaction that takes the namespace's exclusive write lock, so an add either finishes
    before it or fails after it with ``NamespaceDropped`` (its check under the lock finds the row
    gone; ids are never reused, so no later namespace can take this one's rows or writes).
    Returns the rows deleted per table; ``NamespaceDropped`` if it was dropped already.
    """
    deleted: dict[str, int] = {}
    with store.connections.transaction() as conn:
        lock_for_write(conn, store.ns_id, None, namespace=store.namespace)
        for table in metadata.sorted_tables:
            if table is namespaces or "ns_id" not in table.c:
                continue
            result = conn.execute(sa.delete(table).where(table.c.ns_id == store.ns_id))
            deleted[table.name] = int(result.rowcount)
        conn.execute(sa.delete(namespaces).where(namespaces.c.id == store.ns_id))
    return deleted
