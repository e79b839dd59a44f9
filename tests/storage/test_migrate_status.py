"""``migrate.status``: one answer to "is the schema up to date, and if not, what do I run?"."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from simstore.errors import SchemaOutOfDate
from simstore.storage import migrate
from simstore.storage.db import create_engine_for


def test_a_fresh_file_is_not_up_to_date_and_the_message_names_the_command(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    status = migrate.status(url)
    assert (status.revision, status.head, status.up_to_date) == (None, migrate.head(), False)
    assert status.error is not None and f"simstore --db '{url}' db upgrade" in status.error
    assert status.message == f"{url}: none (no simstore schema yet) (head is {migrate.head()})"
    with pytest.raises(SchemaOutOfDate) as raised:
        migrate.check(url)
    assert str(raised.value) == status.error


def test_after_upgrade_it_is_up_to_date(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    migrate.upgrade(url)
    status = migrate.status(url)
    assert status.up_to_date and status.error is None
    assert status.revision == status.head == migrate.head()
    assert status.message == f"{url}: {migrate.head()} (head)"


def test_an_engine_or_a_connection_gives_the_same_status(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    migrate.upgrade(url)
    engine = create_engine_for(url)
    try:
        with engine.connect() as connection:
            assert migrate.status(connection) == migrate.status(engine) == migrate.status(url)
    finally:
        engine.dispose()


def test_a_database_newer_than_this_simstore_says_so(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    migrate.upgrade(f"sqlite:///{path}")
    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("UPDATE simstore_alembic_version SET version_num = '9999_future'")
    status = migrate.status(f"sqlite:///{path}")
    assert status.revision == "9999_future" and not status.up_to_date
    assert status.error is not None and "newer than this simstore" in status.error
    # what to do, word for word: pip's upgrade flag is -U (a lowercase -u is no pip option)
    assert status.error.endswith(
        "the code is older than the database; upgrade simstore (pip install -U simstore) "
        "instead of the database"
    )
    assert status.message.endswith(f": 9999_future (head is {migrate.head()})")
