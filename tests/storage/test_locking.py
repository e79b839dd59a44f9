"""The write locks, by behaviour: while one process holds an uncommitted add, another process adding
a near-duplicate waits for it, then sees it and is recorded as its duplicate; one row is kept.

Deterministic rather than a race: this process adds inside a transaction of its own and does not
commit; a second OS process adds a near-duplicate under another key. The test waits (with a
generous deadline, never a fixed sleep) until the server shows the second add waiting for a lock,
or the second process finishes. Finishing first means no lock kept it out: it decided without
seeing the first add, and two near-duplicates are kept. On SQLite the database's write lock
excludes every other writer, so there the test checks that the second add has not finished while
the first is open.

Three locks, one case each (``simstore.storage.locking``): the SimHash probe keys (fingerprints
two bits apart), the MinHash band keys (two texts with no 16-bit band in common, so only their
band keys can serialise them), and the namespace lock a batch takes exclusively. Then the lock
keys themselves (one bigint of its own per thing locked), and on PostgreSQL the radius past which
an add locks the whole namespace, so that an unrelated add waits for it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection, make_url

from simstore import fingerprint, hamming
from simstore.errors import DatabaseUnavailable
from simstore.storage import locking
from simstore.storage.db import create_engine_for
from simstore.storage.schema import decisions, fingerprints, namespaces
from simstore.store import SimStore
from simstore.text import minhash
from tests.conftest import lock_waiting_engines

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 120.0  # seconds: a loaded machine is slow to start a process, never this slow
BASE = 0x0123_4567_89AB_CDEF
EVERY_BIT = (1 << 64) - 1
POST = (
    "Night market on Harbour Street reopens Friday with forty stalls, live music and late "
    "buses home."
)
EDITED = POST.replace("Friday", "on Friday night")

ADDER = """
import json, os, sys, time
from simstore.store import SimStore
url, namespace, key, kind, value, go = sys.argv[1:]
with SimStore(url, namespace=namespace) as store:
    print("opened", flush=True)
    started = time.monotonic()
    while not os.path.exists(go) and time.monotonic() - started < 300:
        time.sleep(0.01)
    print("adding", flush=True)
    if kind == "text":
        decision = store.add(value, key=key)
    else:
        decision = store.add(key=key, fingerprint=int(value))
    of = decision.duplicate_of.key if decision.duplicate_of else None
    print(json.dumps({"inserted": decision.inserted, "duplicate_of": of}), flush=True)
"""


def _bands(value: int) -> list[int]:
    return [(value >> shift) & 0xFFFF for shift in (48, 32, 16, 0)]


def _band_keys(text: str) -> set[int]:
    return set(minhash.band_keys(minhash.signatures([text]))[0].tolist())


def _waiting_for_a_lock(conn: Connection, database: str | None) -> bool:
    """Whether another session of this database waits for a lock (the server's own view)."""
    if conn.dialect.name == "postgresql":
        found = conn.execute(
            sa.text(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE NOT l.granted AND a.datname = current_database() "
                "AND a.pid <> pg_backend_pid()"
            )
        ).scalar_one()
    else:
        found = conn.execute(
            sa.text(
                # a locking read still running is waiting: the holder's lock cannot be had
                "SELECT count(*) FROM information_schema.processlist p "
                "LEFT JOIN information_schema.innodb_trx t ON p.id = t.trx_mysql_thread_id "
                "WHERE p.db = :db AND p.id <> CONNECTION_ID() AND (t.trx_state = 'LOCK WAIT' "
                "OR (p.command = 'Query' AND p.info LIKE '%FOR UPDATE%'))"
            ),
            {"db": database},
        ).scalar_one()
    return int(found) > 0


def _rows(conn: Connection, namespace: str) -> tuple[list[str], dict[str, str]]:
    ns = conn.execute(sa.select(namespaces.c.id).where(namespaces.c.name == namespace)).scalar_one()
    kept = conn.execute(sa.select(fingerprints.c.key).where(fingerprints.c.ns_id == ns)).scalars()
    duplicates = conn.execute(
        sa.select(decisions.c.key, decisions.c.duplicate_of).where(
            decisions.c.ns_id == ns, decisions.c.inserted.is_(False)
        )
    ).all()
    return sorted(kept), {key: of for key, of in duplicates}


def _second_add_waits_for_the_first(
    url: str, tmp_path: Path, first: dict[str, Any], second: tuple[str, str], batch: bool
) -> None:
    namespace = f"lock-{uuid.uuid4().hex[:8]}"
    SimStore(url, namespace=namespace, auto_upgrade=True).close()  # committed: both see it
    engine = create_engine_for(url)
    # the server's own view, through a plain engine (none of simstore's session set-up)
    watcher = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    output = tmp_path / "second.out"
    try:
        kind, value = second
        go = tmp_path / "go"
        with output.open("w") as out:  # opened before the first add: it waits for no lock
            process = subprocess.Popen(
                [sys.executable, "-c", ADDER, url, namespace, "second", kind, value, str(go)],
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                text=True,
            )
        _until(lambda: "opened" in output.read_text(), process, output, "open its store")
        with engine.connect() as conn:
            transaction = conn.begin()
            holder = SimStore(conn, namespace=namespace)
            if batch:
                decided = next(iter(holder.add_many([{"key": "first", **first}])))
            else:
                decided = holder.add(key="first", **first)
            assert decided.inserted  # written, not committed: the locks are held until commit
            go.touch()
            try:
                _until_the_second_waits(process, output, watcher, url)
            finally:
                transaction.commit()
            process.wait(timeout=DEADLINE)
        lines = output.read_text().splitlines()
        assert process.returncode == 0, lines
        assert json.loads(lines[-1]) == {"inserted": False, "duplicate_of": "first"}
        with engine.connect() as conn:
            assert _rows(conn, namespace) == (["first"], {"second": "first"})
    finally:
        engine.dispose()
        watcher.dispose()


def _until(
    condition: Callable[[], bool], process: subprocess.Popen[str], output: Path, what: str
) -> None:
    started = time.monotonic()
    while not condition():
        if process.poll() is not None or time.monotonic() - started > DEADLINE:
            pytest.fail(f"the second process did not {what}: {output.read_text()!r}")
        time.sleep(0.05)


def _until_the_second_waits(
    process: subprocess.Popen[str], output: Path, watcher: sa.Engine, url: str
) -> None:
    """Return once the second add is seen waiting; fail if it finishes while the first is open."""
    server = watcher.dialect.name != "sqlite"
    started = time.monotonic()
    adding_at = None
    while time.monotonic() - started < DEADLINE:
        if process.poll() is not None:
            pytest.fail(
                "the second add finished while the first was uncommitted (no lock kept it "
                f"out): {output.read_text()!r}"
            )
        if adding_at is None and "adding" in output.read_text():
            adding_at = time.monotonic()
        if adding_at is not None:
            if server:
                with watcher.connect() as conn:
                    if _waiting_for_a_lock(conn, make_url(url).database):
                        return
            elif time.monotonic() - adding_at > 1.5:
                return  # SQLite: well inside its 30 s busy timeout, and not finished
        time.sleep(0.05)
    with watcher.connect() as conn:
        seen = _sessions(conn) if server else []
    pytest.fail(f"the second add was never seen waiting: {output.read_text()!r}; {seen}")


def _sessions(conn: Connection) -> list[Any]:
    """What the server says its sessions are doing (for a failure's message)."""
    if conn.dialect.name == "postgresql":
        query = "SELECT pid, state, wait_event_type, query FROM pg_stat_activity"
    else:
        query = (
            "SELECT p.id, p.db, p.state, t.trx_state, p.info FROM information_schema.processlist p "
            "LEFT JOIN information_schema.innodb_trx t ON p.id = t.trx_mysql_thread_id"
        )
    return [tuple(row) for row in conn.execute(sa.text(query))]


def test_the_pair_needs_the_band_key_lock() -> None:
    # the texts share no 16-bit band (so no SimHash probe key of radius 3) but band keys
    assert hamming(fingerprint(POST), fingerprint(EDITED)) > 3
    assert not [
        x
        for x, y in zip(_bands(fingerprint(POST)), _bands(fingerprint(EDITED)), strict=True)
        if x == y
    ]
    assert len(_band_keys(POST) & _band_keys(EDITED)) >= 2


LOCKS = ["simhash probe keys", "minhash band keys", "namespace lock of a batch"]


@pytest.mark.parametrize("dialect", ["sqlite-file", "postgresql", "mysql"], indirect=True)
@pytest.mark.parametrize("lock", LOCKS)
def test_a_near_duplicate_from_another_process_waits_and_is_its_duplicate(
    database_url: str, tmp_path: Path, lock: str
) -> None:
    if lock == "simhash probe keys":
        first: dict[str, Any] = {"fingerprint": BASE}
        second = ("fingerprint", str(BASE ^ 0b1001))  # 2 bits away
    elif lock == "minhash band keys":
        first, second = {"text": POST}, ("text", EDITED)
    else:
        first, second = {"fingerprint": BASE}, ("fingerprint", str(BASE ^ 0b1))
    _second_add_waits_for_the_first(
        database_url, tmp_path, first, second, batch=lock.startswith("name")
    )


def _as_bigint(value: int) -> int:
    """``value``'s low 64 bits read as a signed bigint (two's complement, by int.from_bytes)."""
    return int.from_bytes((value & EVERY_BIT).to_bytes(8, "big"), "big", signed=True)


def test_each_lock_key_is_a_bigint_of_its_own() -> None:
    """The PostgreSQL advisory keys of an add: a probe key's (namespace, band, value), a key's
    lock and a MinHash band key's lock each name one thing of one namespace (two adds that share
    a lock key wait for each other whether or not they are near), and each fits bigint, the key
    type of ``pg_advisory_xact_lock``. A band key whose mix with its namespace is 2**63 (the
    edge of the wrap to negative) is the bigint -2**63."""
    ns_ids = [1, 2, 3, 255, 1 << 20]
    probes = [
        (ns_id, band, value)
        for ns_id in ns_ids
        for band in range(4)
        for value in (0, 1, 0x00FF, 0x8000, 0xFFFF)
    ]
    probe_locks = {locking._band_key(*probe) for probe in probes}
    assert len(probe_locks) == len(probes)
    keys = [(ns_id, f"k{number}") for ns_id in ns_ids for number in range(16)]
    key_locks = {locking._key_lock(*key) for key in keys}
    assert len(key_locks) == len(keys)
    band_keys = [-(2**63), -1, 0, 1, 0x1234_5678_9ABC_DEF0, 2**63 - 1]
    minhash_locks = {locking._minhash_lock(ns_id, key) for ns_id in ns_ids for key in band_keys}
    assert len(minhash_locks) == len(ns_ids) * len(band_keys)
    assert all(-(2**63) <= lock < 2**63 for lock in probe_locks | key_locks | minhash_locks)
    edge = (1 << 63) ^ locking._NAMESPACE_SPREAD  # mixed with namespace 1: exactly 2**63
    assert locking._minhash_lock(1, edge) == _as_bigint(1 << 63) == -(2**63)
    assert locking._minhash_lock(1, edge ^ 1) == _as_bigint((1 << 63) + 1)


SEED = BASE ^ 0x0F0F_0F0F_0F0F_0F0F  # 32 bits from BASE and from its complement
SEED_TEXT = "Quarterly water bills will be posted in May; meter readers visit homes in April."


@pytest.mark.parametrize("server_url", ["postgresql"], indirect=True)
@pytest.mark.parametrize("radius", [locking.BAND_LOCK_MAX_RADIUS, locking.BAND_LOCK_MAX_RADIUS + 1])
def test_on_postgresql_an_unrelated_add_waits_only_past_the_band_lock_radius(
    server_url: str, radius: int
) -> None:
    """Up to ``BAND_LOCK_MAX_RADIUS`` an add locks its probe keys, so an add of an unrelated
    fingerprint (every bit flipped) goes on while the first is uncommitted; one bit wider the
    add locks the namespace exclusively and the unrelated add waits for it. The waiting
    session's lock_timeout turns that wait into an error instead of a hang: it bounds only a
    lock wait, which the first case never has, so a slow machine cannot fail either case."""
    namespace = f"radius-{uuid.uuid4().hex[:8]}"
    with SimStore(server_url, namespace=namespace, max_distance=radius, auto_upgrade=True) as seed:
        # committed first: the namespace already holds a fingerprint row, so neither add below
        # updates the namespace row (whose row lock would make any two adds wait)
        assert seed.add(key="seed", fingerprint=SEED).inserted
    with lock_waiting_engines(server_url) as (engine, impatient), engine.connect() as conn:
        transaction = conn.begin()
        try:
            holder = SimStore(conn, namespace=namespace, max_distance=radius)
            assert holder.add(key="first", fingerprint=BASE).inserted
            other = SimStore(impatient, namespace=namespace, max_distance=radius)
            try:
                if radius <= locking.BAND_LOCK_MAX_RADIUS:
                    assert other.add(key="second", fingerprint=BASE ^ EVERY_BIT).inserted
                else:
                    with pytest.raises(DatabaseUnavailable, match="lock timeout"):
                        other.add(key="second", fingerprint=BASE ^ EVERY_BIT)
            finally:
                other.close()
            holder.close()
        finally:
            transaction.rollback()


@pytest.mark.parametrize("server_url", ["postgresql"], indirect=True)
def test_on_postgresql_an_add_waits_for_no_add_of_another_namespace(server_url: str) -> None:
    """Every lock key of an add carries its namespace: while one namespace holds an uncommitted
    add, another namespace adds the same text under the same key, which shares every probe key,
    MinHash band key and the key itself with it, and goes on. A key, band or probe lock taken
    across namespaces would make it wait, which the waiting session's lock_timeout turns into
    an error instead of a hang (there is no wait at all when the locks are right)."""
    names = [f"apart-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    for namespace in names:
        with SimStore(server_url, namespace=namespace, auto_upgrade=True) as seed:
            # committed first: neither add below updates its namespace row
            assert seed.add(SEED_TEXT, key="seed").inserted
    with lock_waiting_engines(server_url) as (engine, impatient), engine.connect() as conn:
        transaction = conn.begin()
        try:
            holder = SimStore(conn, namespace=names[0])
            assert holder.add(POST, key="shared").inserted
            with SimStore(impatient, namespace=names[1]) as other:
                assert other.add(POST, key="shared").inserted
            holder.close()
        finally:
            transaction.rollback()
