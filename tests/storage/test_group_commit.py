"""Group commit (``SimStore(group_commit=True)``) and the relaxed commit of PostgreSQL.

Threads add at once through one store: the adds that queue while one group commits are written
as the next group, in one transaction, and every caller gets its own decision after that commit.
To make the groups certain, the first group's write waits until the other threads have queued
behind it (a wrapper around the store's group writer; the database is real).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pytest
import sqlalchemy as sa

from simstore.errors import InvalidInput, InvalidType, KeyConflict, SimstoreError
from simstore.policy.policies import Item
from simstore.results import Decision
from simstore.store import SimStore
from tests.conftest import StoreFactory

TOPICS = [
    "the harbour ferry timetable for the winter months and the night boats to the islands",
    "a recipe for slow-cooked lentil soup with cumin, lemon and plenty of fresh coriander",
    "how the city library lends musical instruments, from violins to electric keyboards",
    "the rules of the chess club's autumn tournament, its time controls and its prizes",
    "what to pack for a week of hiking in the mountains when the weather keeps changing",
    "the history of the old railway bridge over the river and its restoration last year",
]


def _text(topic: str, variant: int = 0) -> str:
    tail = " It is posted on the board by the door." if variant else ""
    return (
        f"This notice explains {topic}. Read it carefully before you sign up, and ask the "
        f"front desk if anything in it is unclear to you.{tail}"
    )


def _hold_first_group(store: SimStore, queued: int) -> list[list[str]]:
    """The keys of each group the store writes; the first waits until ``queued`` adds queue."""
    group = store._writer._group
    assert group is not None
    write_group = group._write_group
    groups: list[list[str]] = []

    def holding(items: Sequence[Item], moments: Sequence[datetime]) -> list[Decision]:
        groups.append([item.key for item in items])
        if len(groups) == 1:
            deadline = time.monotonic() + 60
            while len(group._queue) < queued:
                assert time.monotonic() < deadline, "the other adds never queued"
                time.sleep(0.005)
        return write_group(items, moments)

    group._write_group = holding
    return groups


def _start_add(store: SimStore, text: str, key: str, outcomes: dict[str, Any]) -> threading.Thread:
    """``store.add(text, key=key)`` in a thread of its own; its decision or error in
    ``outcomes``."""

    def add() -> None:
        try:
            outcomes[key] = store.add(text, key=key)
        except BaseException as error:  # KeyboardInterrupt too: an interrupted add's outcome
            outcomes[key] = error

    thread = threading.Thread(target=add)
    thread.start()
    return thread


def _wait_until(condition: Any) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, "the adds never got there"
        time.sleep(0.001)


def _add_in_threads(store: SimStore, adds: list[tuple[str, str]]) -> dict[str, Any]:
    """Each add in a thread of its own, the first alone until it leads; key -> outcome."""
    outcomes: dict[str, Any] = {}
    assert store._writer._group is not None
    threads = [_start_add(store, *adds[0], outcomes)]
    _wait_until(lambda: store._writer._group is not None and store._writer._group._leading)
    threads += [_start_add(store, text, key, outcomes) for text, key in adds[1:]]
    for thread in threads:
        thread.join()
    return outcomes


def test_adds_that_queue_during_a_commit_are_written_as_one_group(
    make_store: StoreFactory,
) -> None:
    store = make_store(group_commit=True)
    store.add(_text(TOPICS[0]), key="filled")
    adds = [(_text(TOPICS[1]), "leader")]
    adds += [(_text(TOPICS[0], 1), "near-filled")]  # a near-duplicate of a kept text
    adds += [(_text(topic), f"new-{i}") for i, topic in enumerate(TOPICS[2:])]
    groups = _hold_first_group(store, queued=len(adds) - 1)
    outcomes = _add_in_threads(store, adds)

    assert groups[0] == ["leader"]
    assert sorted(groups[1]) == sorted(key for _text, key in adds[1:])
    assert len(groups) == 2
    assert all(isinstance(outcome, Decision) for outcome in outcomes.values()), outcomes
    assert outcomes["near-filled"].duplicate_of.key == "filled"
    kept = {key for key, decision in outcomes.items() if decision.inserted}
    assert kept == {key for _text, key in adds} - {"near-filled"}
    for key, decision in outcomes.items():  # what each caller was told is what was committed
        recorded = store.get(key)
        assert recorded is not None and recorded.inserted == decision.inserted
    store.close()


def test_the_adds_of_one_group_are_committed_in_one_transaction(
    make_store: StoreFactory, engine: sa.Engine
) -> None:
    # the leader's group and the group that queued behind it: two COMMITs for six adds (one
    # transaction each would be six; the decisions alone cannot tell)
    store = make_store(group_commit=True)
    adds = [(_text(topic), f"add-{i}") for i, topic in enumerate(TOPICS)]
    groups = _hold_first_group(store, queued=len(adds) - 1)
    commits: list[int] = []

    def count(_conn: sa.Connection) -> None:
        commits.append(1)

    sa.event.listen(engine, "commit", count)
    try:
        outcomes = _add_in_threads(store, adds)
    finally:
        sa.event.remove(engine, "commit", count)
    assert [len(group) for group in groups] == [1, len(adds) - 1]
    assert all(outcome.inserted for outcome in outcomes.values()), outcomes
    assert len(commits) == 2
    assert store.stats().kept == len(adds)
    store.close()


def test_near_duplicates_in_one_group_are_decided_in_arrival_order(
    make_store: StoreFactory,
) -> None:
    store = make_store(group_commit=True)
    group = store._writer._group
    assert group is not None
    groups = _hold_first_group(store, queued=2)
    outcomes: dict[str, Any] = {}
    threads = [_start_add(store, _text(TOPICS[1]), "leader", outcomes)]
    _wait_until(lambda: groups)
    threads.append(_start_add(store, _text(TOPICS[2]), "first", outcomes))
    _wait_until(lambda: len(group._queue) == 1)
    threads.append(_start_add(store, _text(TOPICS[2], 1), "second", outcomes))
    for thread in threads:
        thread.join()
    assert groups[1] == ["first", "second"]
    assert outcomes["first"].inserted
    assert outcomes["second"].duplicate_of.key == "first"
    store.close()


def test_an_add_that_fails_in_a_group_fails_alone(make_store: StoreFactory) -> None:
    store = make_store(group_commit=True)
    store.add(_text(TOPICS[0]), key="taken")
    adds = [(_text(TOPICS[1]), "leader"), (_text(TOPICS[3]), "taken")]  # another text, same key
    adds += [(_text(topic), f"new-{i}") for i, topic in enumerate(TOPICS[4:])]
    groups = _hold_first_group(store, queued=len(adds) - 1)
    outcomes = _add_in_threads(store, adds)

    assert len(groups[1]) == len(adds) - 1  # they were one group, which failed as a whole
    assert isinstance(outcomes["taken"], KeyConflict)
    assert all(outcomes[key].inserted for key in outcomes if key != "taken")
    assert store.kept_text("taken") is not None and store.stats().kept == len(adds)
    store.close()


def test_an_interrupted_group_fails_each_of_its_adds_and_writes_none(
    make_store: StoreFactory,
) -> None:
    # the second group's leader is interrupted (KeyboardInterrupt) before its group is written:
    # it gets the interrupt, each other add of the group an error naming its key, none is
    # written, and the next add leads a group of its own
    adds = [(_text(topic), f"add-{i}") for i, topic in enumerate(TOPICS)]
    with make_store(group_commit=True) as store:
        groups = _hold_first_group(store, queued=len(adds) - 1)
        group = store._writer._group
        assert group is not None
        held = group._write_group

        def interrupted(items: Sequence[Item], moments: Sequence[datetime]) -> list[Decision]:
            if groups:
                groups.append([item.key for item in items])
                raise KeyboardInterrupt
            return held(items, moments)

        group._write_group = interrupted
        outcomes = _add_in_threads(store, adds)
        group._write_group = held  # no longer interrupted
        after = store.add(_text(TOPICS[1]), key="after")
        kept, unwritten = store.stats().kept, [store.get(key) for key in groups[1]]

    assert [len(keys) for keys in groups] == [1, len(adds) - 1, 1]  # "after" alone last
    assert outcomes.pop(groups[0][0]).inserted
    leader, *others = groups[1]
    assert isinstance(outcomes.pop(leader), KeyboardInterrupt)
    assert {key: str(outcome) for key, outcome in outcomes.items()} == {
        key: f"key {key!r} was not added: the thread writing its group stopped (KeyboardInterrupt)"
        for key in others
    }
    assert all(type(outcome) is SimstoreError for outcome in outcomes.values())
    assert unwritten == [None] * len(groups[1]) and after.inserted and kept == 2


def test_group_commit_and_synchronous_commit_take_booleans(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'flags.db'}"
    with pytest.raises(InvalidType, match="group_commit must be True or False"):
        SimStore(url, group_commit="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidType, match="synchronous_commit must be True or False"):
        SimStore(url, synchronous_commit=0)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="already commits without waiting for the disk"):
        SimStore(url, synchronous_commit=False)
    with pytest.raises(InvalidInput, match="innodb_flush_log_at_trx_commit"):
        SimStore("mysql+pymysql://root@127.0.0.1/test", synchronous_commit=False)
    engine = sa.create_engine(url)
    with engine.connect() as conn, pytest.raises(InvalidInput) as refused:
        SimStore(conn, group_commit=True)
    assert str(refused.value) == (
        "group_commit needs a URL or an Engine: adds on a Connection of yours are committed when "
        "you commit it"
    )
    with pytest.raises(InvalidInput, match="needs a database URL"):
        SimStore(engine, synchronous_commit=False)
    engine.dispose()


RELAXED_ONLY_ON_POSTGRESQL = "synchronous_commit=False is PostgreSQL's setting, not "
MYSQL_FLUSHES = (
    "MySQL/MariaDB have no such setting per session: the server's "
    "innodb_flush_log_at_trx_commit = 2 does this for all its clients"
)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        (
            "sqlite:///flags.db",
            "sqlite's: SQLite, as simstore opens it (WAL, synchronous=NORMAL), already commits "
            "without waiting for the disk",
        ),
        ("mysql+pymysql://root@127.0.0.1/test", f"mysql's: {MYSQL_FLUSHES}"),
        ("mariadb+pymysql://root@127.0.0.1/test", f"mariadb's: {MYSQL_FLUSHES}"),
        ("mssql+pyodbc://u@localhost/db", "mssql's"),  # no reason known: none given
    ],
    ids=["sqlite", "mysql", "mariadb", "other"],
)
def test_relaxed_commit_off_postgresql_is_refused_with_the_reason(url: str, said: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        SimStore(url, synchronous_commit=False)
    assert str(refused.value) == RELAXED_ONLY_ON_POSTGRESQL + said


def test_relaxed_commit_for_an_engine_or_a_bad_url_is_refused_with_the_fix() -> None:
    engine = sa.create_engine("sqlite://")
    try:
        with pytest.raises(InvalidInput) as refused:
            SimStore(engine, synchronous_commit=False)
    finally:
        engine.dispose()
    assert str(refused.value) == (
        "synchronous_commit=False needs a database URL (simstore sets it on the sessions it "
        "opens); for an Engine of yours, set it on the engine, e.g. "
        "connect_args={'options': '-c synchronous_commit=off'}"
    )
    with pytest.raises(InvalidInput, match=r"^not a database URL: "):  # the URL's own fault
        SimStore("notaurl", synchronous_commit=False)


def _setting(store: SimStore) -> str:
    return str(store._connections.write(lambda conn: conn.exec_driver_sql(
        "SHOW synchronous_commit").scalar()))  # fmt: skip


def _other_settings(store: SimStore) -> tuple[str, str]:
    """synchronous_commit of the store's other sessions: its transactions' (remove, purge) and
    its reads'."""
    with store._connections.transaction() as conn:
        in_transaction = str(conn.exec_driver_sql("SHOW synchronous_commit").scalar())
    read = store._connections.read(
        lambda conn: str(conn.exec_driver_sql("SHOW synchronous_commit").scalar())
    )
    return in_transaction, read


@pytest.mark.parametrize("server_url", ["postgresql"], indirect=True)
def test_relaxed_commit_is_set_on_the_stores_write_sessions_only(server_url: str) -> None:
    # the relaxed store's adds run with synchronous_commit off; another store's keep the
    # server's setting (on by default)
    relaxed = SimStore(server_url, namespace="relaxed", synchronous_commit=False)
    default = SimStore(server_url, namespace="default")
    try:
        assert _setting(relaxed) == "off"
        assert _setting(default) == "on"  # the server's own setting, left alone
        # adds only: a removal or purge of either store waits for the disk as the server says
        assert _other_settings(relaxed) == _other_settings(default) == ("on", "on")
        assert relaxed.add(_text(TOPICS[0]), key="a").inserted
        match = relaxed.add(_text(TOPICS[0], 1), key="b").duplicate_of
        assert match is not None and match.key == "a"
    finally:
        relaxed.close()
        default.close()
