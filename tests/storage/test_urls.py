"""URLs and engines a user may hand to ``SimStore``: a driver tripping over a query argument, an
IPv6 host without its closing bracket, a SQLite URI in memory, and an in-memory engine that gives
each thread a database of its own. Each is a clear simstore error or simply works."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import StaticPool

from simstore.errors import DatabaseUnavailable, InvalidInput, MissingExtra, SimstoreError
from simstore.store import SimStore

TEXT = "the harbour ferry leaves every twenty minutes from the north pier"


def _refused(bind: object, error: type[SimstoreError] = InvalidInput) -> SimstoreError:
    """The error ``SimStore(bind)`` raises, which must be ``error``."""
    with pytest.raises(error) as raised:
        SimStore(bind)
    return raised.value


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("mysql+pymysql://u:pw1234@127.0.0.1:1/x?charset=bogus", "charset=bogus"),
        ("mysql+pymysql://u:pw1234@127.0.0.1:1/x?connect_timeout=abc", "connect_timeout=abc"),
        ("mysql+pymysql://u:pw1234@127.0.0.1:1/x?colour=red", "colour=red"),
        ("postgresql+psycopg://u:pw1234@[::1:5432/x", "port is not a number"),
    ],
)
def test_a_url_the_driver_cannot_take_is_invalid_input(url: str, said: str) -> None:
    refused = _refused(url)
    assert said in str(refused)
    assert "pw1234" not in str(refused)  # the password stays hidden


def adds_from_threads(store: SimStore) -> list[bool]:
    """Whether each of two threads saw the text the other one's add kept (one must have)."""
    seen: list[bool] = []

    def add(key: str) -> None:
        seen.append(store.add(TEXT, key=key).inserted)

    for key in ("a", "b"):
        thread = threading.Thread(target=add, args=(key,))
        thread.start()
        thread.join()
    return seen


def test_a_sqlite_memory_uri_works_across_threads() -> None:
    store = SimStore("sqlite:///file:h55?mode=memory&cache=shared&uri=true")
    try:
        assert adds_from_threads(store) == [True, False]
    finally:
        store.close()


def test_a_per_thread_memory_engine_is_refused_with_the_fix() -> None:
    engine = sa.create_engine("sqlite://")  # SingletonThreadPool: a database per thread
    try:
        with pytest.raises(InvalidInput) as refused:
            SimStore(engine)
        # what is wrong, and both fixes, word for word (the engine is the one built just below)
        assert str(refused.value) == (
            "sqlite://: an in-memory SQLite engine with SingletonThreadPool gives every thread an "
            "empty database of its own; pass the URL instead (SimStore('sqlite://')), or make the "
            "engine with one shared connection: create_engine('sqlite://', poolclass=StaticPool, "
            "connect_args={'check_same_thread': False})"
        )
    finally:
        engine.dispose()
    shared = sa.create_engine(
        "sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False}
    )
    try:
        store = SimStore(shared)  # the engine the message names: one database for all threads
        assert adds_from_threads(store) == [True, False]
    finally:
        shared.dispose()


def test_a_connection_of_a_per_thread_memory_engine_is_taken_as_it_is() -> None:
    # the refusal is for an Engine, whose threads would each get a database: a Connection is one
    engine = sa.create_engine("sqlite://")
    try:
        with engine.connect() as connection:
            store = SimStore(connection)
            assert store.add(TEXT, key="a").inserted
            assert [match.key for match in store.query(TEXT)] == ["a"]
            store.close()
    finally:
        engine.dispose()


def test_text_that_is_no_url_is_refused_with_how_a_url_is_written() -> None:
    refused = _refused("notaurl")
    assert str(refused) == (
        "not a database URL: <unparseable database URL> (write e.g. sqlite:///simstore.db, "
        "postgresql+psycopg://user@host/db or mysql+pymysql://user@host/db)"
    )
    refused = _refused("postgresql+psycopg://u:pw1234@[::1:5432/x")
    said = str(refused)
    assert said.startswith(
        "not a database URL: <unparseable database URL>: its port is not a number ("
    )
    assert said.endswith(
        "); an IPv6 host goes in brackets before the port: postgresql+psycopg://user@[::1]:5432/db"
    )


STRAY_AT = (
    "holds more than one '@': write an '@' inside the user name, password or a query value as "
    "%40 (: / ? # [ ] @ there must be percent-encoded)"
)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql+psycopg://bob:Pw9x@Zq7v@127.0.0.1:1/x",
            "postgresql+psycopg://bob:***@127.0.0.1:1/x",
        ),
        (
            "mysql+pymysql://bob@127.0.0.1:1/x?passwd=Pw9x@Zq7v&charset=utf8mb4",
            "mysql+pymysql://bob@127.0.0.1:1/x?***",
        ),
        (
            "postgresql+psycopg://bob:Pw9x@Zq7v@127.0.0.1:1/x?sslmode=require",
            "postgresql+psycopg://bob:***@127.0.0.1:1/x?sslmode=require",
        ),
    ],
    ids=["password", "query", "password-and-query"],
)
def test_a_server_url_with_two_at_signs_is_refused_before_connecting(url: str, shown: str) -> None:
    # two '@' is the least that is refused: SQLAlchemy would cut the URL at the last one
    refused = _refused(url)
    assert str(refused) == f"{shown} {STRAY_AT}"


def test_one_at_sign_and_a_sqlite_path_with_at_signs_are_taken_as_written(tmp_path: Path) -> None:
    unreachable = _refused(
        "postgresql+psycopg://bob:Pw9xZq7v@127.0.0.1:1/x", DatabaseUnavailable
    )  # one '@': a URL, tried as written
    assert "postgresql+psycopg://bob:***@127.0.0.1:1/x" in str(unreachable)
    folder = tmp_path / "a@b"
    folder.mkdir()
    with SimStore(f"sqlite:///{folder / 'c@d.db'}") as store:  # a path, '@' and all
        assert store.add(TEXT, key="a").inserted
    assert (folder / "c@d.db").exists()


def test_postgres_scheme_is_refused_with_the_name_sqlalchemy_knows() -> None:
    refused = _refused("postgres://u@localhost/db")
    assert str(refused) == (
        "postgres://u@localhost/db: SQLAlchemy names PostgreSQL 'postgresql': write "
        "postgresql+psycopg://..."
    )


INSTALL_MYSQL = (
    "install simstore[mysql]: pip install 'simstore[mysql]' (from a checkout: pip install "
    "'.[mysql]')"
)


def test_a_missing_driver_names_the_extra_that_installs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = _refused(
        "mysql://u@localhost/db", MissingExtra
    )  # mysqlclient is not one of simstore's extras
    assert str(missing) == (
        # the URL as simstore hands it on, with the character set it adds for MySQL
        "cannot use mysql://u@localhost/db?charset=utf8mb4: No module named 'MySQLdb'; mysql:// "
        "means the "
        f"MySQLdb driver: write mysql+pymysql:// and {INSTALL_MYSQL}"
    )
    monkeypatch.setitem(sys.modules, "pymysql", None)  # the mysql extra not installed
    missing = _refused("mysql+pymysql://u@localhost/db", MissingExtra)
    assert str(missing).startswith("cannot use mysql+pymysql://u@localhost/db?charset=utf8mb4: ")
    assert str(missing).endswith(f"; {INSTALL_MYSQL}")


def test_a_missing_driver_of_no_extra_is_database_unavailable() -> None:
    failed = _refused("mssql+pyodbc://u@localhost/db", DatabaseUnavailable)
    assert not isinstance(failed, MissingExtra)
    assert str(failed) == "cannot use mssql+pyodbc://u@localhost/db: No module named 'pyodbc'"


def test_a_scheme_sqlalchemy_does_not_know_is_database_unavailable() -> None:
    # SQLAlchemy's error for an unknown dialect names no module (no ``name``): it is no missing
    # extra, and the refusal is simstore's own error, not an AttributeError of reading it
    failed = _refused("nosuchdb://u@localhost/db", DatabaseUnavailable)
    assert not isinstance(failed, MissingExtra)
    assert str(failed) == (
        "cannot use nosuchdb://u@localhost/db: Can't load plugin: sqlalchemy.dialects:nosuchdb"
    )


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("abc", "timeout must be a number of seconds, got 'abc'"),
        ("-0.001", "timeout must lie in 0..3600 seconds, got -0.001"),
        ("3600.001", "timeout must lie in 0..3600 seconds, got 3600.001"),
    ],
)
def test_a_sqlite_busy_timeout_outside_0_to_3600_seconds_is_refused(
    tmp_path: Path, given: str, said: str
) -> None:
    refused = _refused(f"sqlite:///{tmp_path / 'a.db'}?timeout={given}")
    assert str(refused) == said


@pytest.mark.parametrize(("given", "milliseconds"), [("0", 0), ("3600", 3_600_000)])
def test_a_sqlite_busy_timeout_of_0_or_3600_seconds_is_taken(
    tmp_path: Path, given: str, milliseconds: int
) -> None:
    with (
        SimStore(f"sqlite:///{tmp_path / 'a.db'}?timeout={given}") as store,
        store.engine.connect() as connection,
    ):
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == milliseconds


def test_arguments_the_driver_refuses_are_listed_with_secrets_masked() -> None:
    refused = _refused("mysql+pymysql://u@127.0.0.1:1/x?charset=bogus&password=Hq4xWv9L")
    said = str(refused)
    assert "Hq4xWv9L" not in said
    start = (
        "mysql+pymysql://u@127.0.0.1:1/x?charset=bogus&password=***: the mysql driver pymysql "
        "refuses the URL's arguments (charset=bogus, password=***): "
    )
    end = "; check each ?name=value against the driver's connection options"
    assert said.startswith(start) and said.endswith(end)
    assert said[len(start) : -len(end)] not in ("", "None")  # the driver's own words
