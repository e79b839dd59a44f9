"""Insert-if-new under real concurrency: OS processes released together by a barrier add clusters
of near-duplicates in shuffled orders; exactly one member of each cluster must be kept."""

from __future__ import annotations

import multiprocessing
import random
import threading
import time
import uuid
from typing import Any

import pytest
import sqlalchemy as sa

from simstore.store import SimStore
from tests._workers import run_together

pytestmark = pytest.mark.slow  # OS processes racing on every dialect

PROCESSES = 4
CLUSTERS = 40
MEMBERS_PER_PROCESS = 2


def _worker(
    url: str, namespace: str, radius: int, items: list[tuple[str, int]], barrier: Any, results: Any
) -> None:
    store = SimStore(url, namespace=namespace, max_distance=radius)
    outcome = []
    barrier.wait()
    for key, value in items:
        decision = store.add(key=key, fingerprint=value)
        outcome.append(
            (key, decision.inserted, decision.duplicate_of.key if decision.duplicate_of else None)
        )
    store.close()
    results.put(outcome)


# a memory database cannot be shared between processes: every other dialect races
@pytest.mark.parametrize("dialect", ["sqlite-file", "postgresql", "mysql"], indirect=True)
@pytest.mark.parametrize("radius", [3, 8])
def test_racing_processes_keep_exactly_one_per_cluster(database_url: str, radius: int) -> None:
    namespace = f"race-{uuid.uuid4().hex[:8]}"
    SimStore(database_url, namespace=namespace, auto_upgrade=True).close()
    rng = random.Random(radius)
    cluster_of: dict[str, int] = {}
    per_process: list[list[tuple[str, int]]] = [[] for _ in range(PROCESSES)]
    for cluster in range(CLUSTERS):
        base = rng.getrandbits(64)
        for process in range(PROCESSES):
            for member in range(MEMBERS_PER_PROCESS):
                # members differ from the base in at most one bit: pairwise within 2 <= radius
                value = base ^ (1 << rng.randrange(64)) if rng.random() < 0.7 else base
                key = f"c{cluster}-p{process}-m{member}"
                cluster_of[key] = cluster
                per_process[process].append((key, value))
    for items in per_process:
        rng.shuffle(items)

    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(PROCESSES)
    results = context.Queue()
    workers = [
        context.Process(
            target=_worker, args=(database_url, namespace, radius, items, barrier, results)
        )
        for items in per_process
    ]
    outcomes = run_together(workers, results)

    decisions = [entry for outcome in outcomes for entry in outcome]
    assert len(decisions) == len(cluster_of)
    kept_by_cluster: dict[int, list[str]] = {}
    for key, inserted, _duplicate_of in decisions:
        if inserted:
            kept_by_cluster.setdefault(cluster_of[key], []).append(key)
    assert sorted(kept_by_cluster) == list(range(CLUSTERS))
    assert all(len(kept) == 1 for kept in kept_by_cluster.values()), kept_by_cluster
    for key, inserted, duplicate_of in decisions:
        if not inserted:
            assert duplicate_of == kept_by_cluster[cluster_of[key]][0]

    engine = sa.create_engine(database_url)
    with engine.connect() as connection:
        rows = connection.execute(
            sa.text(
                "SELECT f.key FROM simstore_fingerprints f JOIN simstore_namespaces n "
                "ON n.id = f.ns_id WHERE n.name = :ns"
            ),
            {"ns": namespace},
        ).scalars()
        assert sorted(rows) == sorted(kept[0] for kept in kept_by_cluster.values())
    engine.dispose()


FERRY = (
    "The harbour ferry timetable changes on Monday: boats leave every twenty minutes from the "
    "north pier between six and nine in the morning, and every half hour for the rest of the "
    "day. Tickets are sold on board and at the kiosk by the car park, and bicycles travel free "
    "of charge outside the morning rush, when the deck is kept clear for passengers with luggage."
)
# a near-duplicate found only by the MinHash band keys: 5 bits from FERRY with no SimHash band
# equal (so no probe lock is shared), 6 of 16 band keys shared, Jaccard 0.85 (asserted below)
FERRY_CUT = FERRY.replace(
    "Tickets are sold on board and at the kiosk by the car park, and bicycles", "Bicycles"
)


def test_an_add_waits_for_an_uncommitted_near_duplicate_that_shares_only_band_keys(
    server_url: str,
) -> None:
    # A deterministic interleaving: A has taken its locks and checked, and waits to insert (on
    # the key of a row this test holds uncommitted); B, a near-duplicate of A's text, must then
    # wait for A's commit instead of checking without seeing A. On PostgreSQL only the MinHash
    # band-key locks make it wait (no SimHash probe key is shared); on MariaDB the namespace
    # row's lock does. Without them both texts were kept, every time.
    from simstore.text.encoding import bands
    from tests.storage.test_faults import _admin, _backends, _kind, _uncommitted_kept_row

    namespace = f"race-{uuid.uuid4().hex[:8]}"
    store = SimStore(server_url, namespace=namespace)
    a, b = store._planner.items([("a", FERRY, None), ("b", FERRY_CUT, None)], None)
    assert all(x != y for x, y in zip(bands(a.fingerprint), bands(b.fingerprint), strict=True))
    assert set(a.band_keys) & set(b.band_keys)
    kind = _kind(server_url)
    decided: dict[str, Any] = {}

    def add(text: str, key: str) -> None:
        decided[key] = store.add(text, key=key)

    first = threading.Thread(target=add, args=(FERRY, "a"))
    second = threading.Thread(target=add, args=(FERRY_CUT, "b"))
    with _uncommitted_kept_row(server_url, namespace, "a"), _admin(server_url) as admin:
        first.start()
        # (InnoDB refreshes innodb_trx only after 0.1 s without readers: no faster polling)
        while len(_backends(admin, kind, waiting=True)) < 1:  # A waits at its insert
            assert first.is_alive()
            time.sleep(0.2)
        second.start()
        while second.is_alive() and len(_backends(admin, kind, waiting=True)) < 2:
            time.sleep(0.2)  # until B waits too, or (a missing lock) has decided already
    first.join()
    second.join()
    store.close()
    assert decided["a"].inserted
    assert not decided["b"].inserted, "B checked without seeing A: two near-duplicates kept"
    assert decided["b"].duplicate_of.key == "a"
