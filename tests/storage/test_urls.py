"""URLs and engines a user may hand to ``SimStore``: a driver tripping over a query argument, an
IPv6 host without its closing bracket, a SQLite URI in memory, and an in-memory engine that gives
each thread a database of its own. Each is a clear simstore error or simply works."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import StaticPool

from simstore.errors import InvalidInput
from simstore.store import SimStore

TEXT = "the harbour ferry leaves every twenty minutes from the north pier"


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
    with pytest.raises(InvalidInput) as refused:
        SimStore(url)
    assert said in str(refused.value)
    assert "pw1234" not in str(refused.value)  # the password stays hidden


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
