"""How many round trips a query and an add cost on the servers, counted by the servers' own means.

A query with text under the default policy, in a namespace of signed texts, is one statement:
its candidates by shared band keys come back with their details. Nothing else travels: no
ping, no isolation level set and reset, no COMMIT, no rollback on return. An add is its lock
statement (which also proves the namespace exists and reads its unsigned-rows flag), the
lookup of its key's earlier decision, its candidates, its inserts and the transaction's BEGIN
(PostgreSQL; MariaDB begins implicitly) and COMMIT. PostgreSQL: the
frontend messages of libpq's protocol trace (each ``Sync`` or simple ``Query`` ends a round trip).
MariaDB: the session's ``Questions`` counter, less what the two readings of it cost themselves.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from simstore.store import SimStore

FERRY = (
    "The harbour ferry timetable changes on Monday: boats leave every twenty minutes from the "
    "north pier between six and nine in the morning, and every half hour for the rest of the day."
)


def _read_connection(store: SimStore) -> Any:
    """The DBAPI connection the store's queries use (one thread: the pool hands out the same)."""
    return store._connections.read(lambda conn: conn.connection.dbapi_connection)


def _write_connection(store: SimStore) -> Any:
    """The DBAPI connection the store's adds use (one thread: the pool hands out the same)."""
    return store._connections.write(lambda conn: conn.connection.dbapi_connection)


def _round_trips(store: SimStore, call: Callable[[], object], raw: Any = None) -> int:
    """Round trips of ``call`` on ``raw`` (default: the queries' connection)."""
    raw = _read_connection(store) if raw is None else raw
    if store.engine.dialect.name == "postgresql":
        return _postgresql_round_trips(raw, call)
    return _mariadb_statements(raw, call)


def _postgresql_round_trips(raw: Any, call: Callable[[], object]) -> int:
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "trace"
        with trace.open("w") as sink:
            raw.pgconn.trace(sink.fileno())
            call()
            raw.pgconn.untrace()
        messages = [line.split("\t") for line in trace.read_text().splitlines()]
    return sum(
        1 for m in messages if len(m) > 3 and m[1] == "F" and m[3].strip() in ("Sync", "Query")
    )


def _mariadb_statements(raw: Any, call: Callable[[], object]) -> int:
    def questions() -> int:
        with raw.cursor() as cursor:
            cursor.execute("SHOW SESSION STATUS LIKE 'Questions'")
            return int(cursor.fetchone()[1])

    baseline = -(questions() - questions())  # what reading the counter costs
    before = questions()
    call()
    return questions() - before - baseline


def test_a_text_query_is_one_round_trip(server_url: str) -> None:
    store = SimStore(server_url, namespace=f"trips-{uuid.uuid4().hex[:8]}")
    store.add(FERRY, key="ferry")
    store.add(FERRY.replace("harbour", "river").replace("Monday", "Friday") + " New.", key="other")
    store.query(FERRY)  # warm: the namespace's unsigned-rows flag is read once a second at most
    found: list[list[str]] = []

    def query() -> None:
        found.append([m.key for m in store.query(FERRY + "!")])

    trips = _round_trips(store, query)
    store.close()
    assert found[0][0] == "ferry"
    assert trips == 1


@pytest.mark.parametrize("near", [True, False], ids=["found", "nothing found"])
def test_a_fingerprint_query_is_its_lookup_and_at_most_one_read_of_details(
    server_url: str, near: bool
) -> None:
    store = SimStore(server_url, namespace=f"trips-{uuid.uuid4().hex[:8]}")
    store.add(key="f", fingerprint=0x0123_4567_89AB_CDEF)
    store.query(fingerprint=1)

    def query() -> None:
        store.query(fingerprint=0x0123_4567_89AB_CDEF ^ (0b101 if near else 0xFFFF_FFFF))

    trips = _round_trips(store, query)
    store.close()
    # PostgreSQL keeps the near rows and reads their details in the lookup itself (bit_count)
    assert trips == (2 if near and not server_url.startswith("postgresql") else 1)


@pytest.mark.parametrize("kept", [True, False], ids=["kept", "duplicate"])
def test_an_add_is_its_lock_lookups_inserts_and_commit(server_url: str, kept: bool) -> None:
    store = SimStore(server_url, namespace=f"trips-{uuid.uuid4().hex[:8]}")
    store.add(FERRY, key="ferry")
    store.add("Apples, pears and plums ripen in the orchard at the end of the summer.", key="warm")
    decided = []
    text = "A new text on the river boats, their crews and cargo." if kept else FERRY + " Again."

    def add() -> None:
        decided.append(store.add(text, key="timed"))

    trips = _round_trips(store, add, _write_connection(store))
    store.close()
    assert decided[0].inserted is kept
    if server_url.startswith("postgresql"):
        # BEGIN, simstore_lock_for_add, the key's decision, candidates, one INSERT (a kept row
        # with its band keys: one statement), COMMIT
        assert trips == 6
    else:
        # FOR UPDATE, the key's decision, candidates, the row (and the kept row's band keys
        # in one multi-row INSERT), COMMIT
        assert trips == (6 if kept else 5)


def test_an_add_of_a_key_already_kept_replays_without_looking_its_text_up(server_url: str) -> None:
    # the key's recorded decision answers it: no candidate lookup, no insert
    store = SimStore(server_url, namespace=f"trips-{uuid.uuid4().hex[:8]}")
    store.add(FERRY, key="ferry")
    store.add("Apples, pears and plums ripen in the orchard at the end of the summer.", key="warm")
    decided = []
    trips = _round_trips(store, lambda: decided.append(store.add(FERRY, key="ferry")),
                         _write_connection(store))  # fmt: skip
    store.close()
    assert decided[0].replayed and decided[0].inserted
    # PostgreSQL: BEGIN, simstore_lock_for_add, the key's decision, COMMIT; MariaDB: no BEGIN
    assert trips == (4 if server_url.startswith("postgresql") else 3)
