"""Opening a store on an existing database: the cheap schema check checks, and writes nothing."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.runtime.migration import MigrationContext

from simstore.errors import DatabaseUnavailable, InvalidInput, SchemaOutOfDate
from simstore.storage import migrate, namespaces
from simstore.storage.namespaces import NoSuchNamespace
from simstore.store import SimStore


def _alembic_revision(url: str) -> str | None:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"version_table": migrate.VERSION_TABLE})
        revision = context.get_current_revision()
    engine.dispose()
    return revision


def test_current_reads_what_alembic_reads(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    assert migrate.current(url) is None is _alembic_revision(url)
    migrate.upgrade(url, "0004_minhash")
    assert migrate.current(url) == "0004_minhash" == _alembic_revision(url)
    with pytest.raises(SchemaOutOfDate, match=r"simstore --db .* db upgrade"):
        migrate.check(url)
    migrate.upgrade(url)
    assert migrate.current(url) == migrate.head() == _alembic_revision(url)
    assert migrate.check(url) == migrate.head()


def test_several_revisions_in_the_version_table_are_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    migrate.upgrade(url)
    with sqlite3.connect(tmp_path / "a.db") as raw:
        raw.execute(f"INSERT INTO {migrate.VERSION_TABLE} VALUES ('0001_initial')")
    with pytest.raises(SchemaOutOfDate, match="several revisions"):
        migrate.current(url)


def test_an_old_file_is_still_upgraded_on_open(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    migrate.upgrade(url, "0003_settings")
    with SimStore(url) as store:
        assert store.add("hello there, an old file upgraded on open", key="a").inserted
    assert migrate.current(url) == migrate.head()


def test_opening_an_existing_namespace_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    with SimStore(f"sqlite:///{path}") as store:
        store.add("a text to keep, so that the file is not empty", key="a")
    watcher = sqlite3.connect(path)
    try:
        before = watcher.execute("PRAGMA data_version").fetchone()
        for _ in range(3):
            SimStore(f"sqlite:///{path}").close()
        assert watcher.execute("PRAGMA data_version").fetchone() == before
        with SimStore(f"sqlite:///{path}") as store:  # a write does show: the probe works
            store.add("another text, different from the first one entirely", key="b")
        assert watcher.execute("PRAGMA data_version").fetchone() != before
    finally:
        watcher.close()


def test_an_old_file_opened_without_auto_upgrade_is_refused_and_left_as_it_was(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    migrate.upgrade(url, "0003_settings")
    with pytest.raises(SchemaOutOfDate, match=r"simstore --db .* db upgrade"):
        SimStore(url, auto_upgrade=False)
    assert migrate.current(url) == "0003_settings"  # not upgraded, no namespace made
    with SimStore(url) as store:  # by default a SQLite file is upgraded on open
        assert store.add("hello there, an old file upgraded on open", key="a").inserted
    assert migrate.current(url) == migrate.head()


def test_a_partition_shorter_than_a_minute_is_refused_before_the_file_is_made(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.db"
    with pytest.raises(InvalidInput) as refused:
        SimStore(f"sqlite:///{path}", partition="59s")
    assert str(refused.value) == "partition must be at least one minute (partition numbers are INT)"
    assert not path.exists()
    with SimStore(f"sqlite:///{path}", partition="1m") as store:  # one minute is enough
        assert store.scope.partition_seconds == 60


OTHER_TEXTS = [f"note {i}: the {word} committee meets on the {i}th floor" for i, word in
               enumerate(["garden", "budget", "music", "safety", "archive", "canteen", "parking",
                          "library", "sports", "travel", "housing", "welcome"])]  # fmt: skip


def test_looking_a_namespace_up_writes_nothing_and_names_the_known_ones(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    url = f"sqlite:///{path}"
    for look in (lambda: namespaces.existing(url, "b"), lambda: namespaces.listed(url)):
        with pytest.raises(NoSuchNamespace) as missing:
            look()
        assert str(missing.value) == f"no database at {path} ({url}): nothing was added there yet"
        assert not path.exists()  # not made by looking
    for memory in ("sqlite://", "sqlite:///:memory:"):  # no file: a new, empty database
        with pytest.raises(SchemaOutOfDate, match="no simstore schema yet"):
            namespaces.listed(memory)
    nowhere = f"sqlite:///{tmp_path / 'no' / 'a.db'}"
    with pytest.raises(DatabaseUnavailable, match=f"no folder {tmp_path / 'no'}$"):
        namespaces.existing(nowhere, "b")

    migrate.upgrade(url)
    with pytest.raises(NoSuchNamespace) as unknown:
        namespaces.existing(url, "b")
    assert str(unknown.value) == (
        f"no namespace 'b' in {url} (namespaces: none; 'simstore namespaces' lists them)"
    )
    started = datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)  # stored as UTC
    with SimStore(url, namespace="b") as store:
        assert store.add(OTHER_TEXTS[0], key="kept").inserted
        assert not store.add(OTHER_TEXTS[0] + " again", key="copy").inserted
        preset = f"{store.preset.name}@{store.preset.version}"
        recipe = store.policy.recipe()
    SimStore(url, namespace="a").close()
    namespaces.existing(url, "b")  # there: no error
    assert [(info.name, info.preset, info.policy, info.kept, info.decisions)
            for info in namespaces.listed(url)] == [
        ("a", preset, recipe, 0, 0),
        ("b", preset, recipe, 1, 2),  # the kept row and its duplicate's record
    ]  # fmt: skip
    made = {info.name: info.created_at.replace(tzinfo=None) for info in namespaces.listed(url)}
    assert started <= made["b"] <= made["a"] <= datetime.now(timezone.utc).replace(tzinfo=None)
    # a read-only SQLite URI names a file that exists
    namespaces.existing(f"sqlite:///file:{path}?mode=ro&uri=true", "b")

    for name in "cdefghijkl":
        SimStore(url, namespace=name).close()
    with pytest.raises(NoSuchNamespace) as typo:
        namespaces.existing(url, "typo")
    first_ten = ", ".join(repr(name) for name in "abcdefghij")  # "k" and "l" are not named
    assert str(typo.value) == (
        f"no namespace 'typo' in {url} (namespaces: {first_ten}; 'simstore namespaces' lists them)"
    )
