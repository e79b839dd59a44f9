"""Expiry by last sighting and capped namespaces, on every dialect.

Times are worked out by hand: one-hour partitions, keep two hours. A text kept at 10:00 and seen
again at 11:30 is last seen at 11:30: at 13:15 the window starts at 11:15 (it still matches), at
13:45 at 11:45 (it does not), and a purge at 13:45 deletes the partitions before 11:00 only, so
its 11:00 partition stays until a purge after 13:59:59. Without the option it stays at 10:00 and
the 10:00 partition goes at 13:45.
"""

from __future__ import annotations

import logging
import multiprocessing
import random
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from simstore.errors import InvalidInput, InvalidType, PolicyMismatch
from simstore.io.handover import LoadRow
from simstore.policy import batch
from simstore.policy.policies import MinHashVerification, SimHashOnly, policy_with
from simstore.storage import expiry, locking, maintenance, migrate, partitions
from simstore.storage.db import create_engine_for
from simstore.storage.namespaces import drop
from simstore.storage.schema import fingerprints, namespaces, settings
from simstore.store import SimStore
from tests._workers import random_text, run_together, stored_band_keys
from tests.conftest import StoreFactory, new_server_database

T0 = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)
SEEN = T0 + timedelta(minutes=90)  # 11:30
TEXT = "The ferry to the islands leaves at seven every morning from the north pier."
OTHER = "Quarterly figures show the bakery sold more rye bread than ever before in March."
LAST_SEEN = MinHashVerification(expire_by_last_seen=True)


def _row(store: SimStore, key: str) -> tuple[datetime, int] | None:
    with store.engine.connect() as conn:
        row = conn.execute(
            sa.select(fingerprints.c.added_at, fingerprints.c.part)
            .join(namespaces, namespaces.c.id == fingerprints.c.ns_id)
            .where(namespaces.c.name == store.namespace, fingerprints.c.key == key)
        ).first()
    return None if row is None else (row[0], int(row[1]))


def _band_keys(store: SimStore) -> list[int]:
    with store.engine.connect() as conn:
        return stored_band_keys(conn, namespace=store.namespace)


def _hour(moment: datetime) -> int:
    """The one-hour partition number of a time (seconds since the epoch // 3600)."""
    return int(moment.timestamp()) // 3600


def test_a_duplicate_moves_its_kept_text_to_the_last_sighting(make_store: StoreFactory) -> None:
    store = make_store(keep="2h", partition="1h", policy=LAST_SEEN)
    assert store.add(TEXT, key="a", at=T0).inserted
    keys = _band_keys(store)
    duplicate = store.add(TEXT + " ", key="a-dup", at=SEEN)
    assert not duplicate.inserted and duplicate.duplicate_of is not None
    assert duplicate.duplicate_of.key == "a"
    assert _row(store, "a") == (SEEN.replace(tzinfo=None), _hour(SEEN))
    assert _band_keys(store) == keys  # the side table's keys carry no time: untouched

    # 13:15: last seen 1h45 ago, inside the window: a new copy matches it
    late = store.add(TEXT + "!", key="late", at=T0 + timedelta(hours=3, minutes=15))
    assert late.duplicate_of is not None and late.duplicate_of.key == "a"
    store.close()


def test_a_sighting_moves_the_kept_text_of_its_own_namespace_only(
    make_store: StoreFactory,
) -> None:
    # one key kept in two namespaces at 10:00: a copy seen at 11:30 in the first moves that
    # namespace's row only (the move's UPDATE names the namespace as well as the key; without
    # it, mutmut's _prepared.move_kept__mutmut_8 moved the other namespace's row too)
    store = make_store(keep="2h", partition="1h", policy=LAST_SEEN)
    other = make_store(
        keep="2h", partition="1h", policy=LAST_SEEN, namespace=f"other-{uuid.uuid4().hex[:8]}"
    )
    assert store.add(TEXT, key="a", at=T0).inserted
    assert other.add(OTHER, key="a", at=T0).inserted
    duplicate = store.add(TEXT + " ", key="a-dup", at=SEEN)
    assert duplicate.duplicate_of is not None and duplicate.duplicate_of.key == "a"
    assert _row(store, "a") == (SEEN.replace(tzinfo=None), _hour(SEEN))
    assert _row(other, "a") == (T0.replace(tzinfo=None), _hour(T0))
    store.close()
    other.close()


def test_without_the_option_the_first_sighting_counts(make_store: StoreFactory) -> None:
    store = make_store(keep="2h", partition="1h")
    store.add(TEXT, key="a", at=T0)
    store.add(TEXT + " ", key="a-dup", at=SEEN)
    assert _row(store, "a") == (T0.replace(tzinfo=None), _hour(T0))
    # 13:15: first seen 3h15 ago, outside the window: a new copy is kept
    assert store.add(TEXT + "!", key="late", at=T0 + timedelta(hours=3, minutes=15)).inserted
    store.close()


@pytest.mark.parametrize("expire_by_last_seen", [True, False])
def test_a_purge_drops_what_was_not_seen_for_the_window(
    make_store: StoreFactory, expire_by_last_seen: bool
) -> None:
    policy = MinHashVerification(expire_by_last_seen=expire_by_last_seen)
    store = make_store(keep="2h", partition="1h", policy=policy)
    store.add(TEXT, key="a", at=T0)
    store.add(OTHER, key="b", at=T0)  # never seen again
    store.add(TEXT + " ", key="a-dup", at=SEEN)
    now = T0 + timedelta(hours=3, minutes=45)
    dry = store.purge_counts(now=now, dry_run=True)
    purged = store.purge_counts(now=now)
    assert dry is not None and purged is not None
    assert dry.fingerprints == purged.fingerprints == (1 if expire_by_last_seen else 2)
    assert store.get("b") is None
    assert (store.get("a") is not None) is expire_by_last_seen
    if expire_by_last_seen:  # its band keys survived the move and the purge: it is still found
        with store.engine.connect() as conn:
            ns_id = conn.execute(
                sa.select(namespaces.c.id).where(namespaces.c.name == store.namespace)
            ).scalar_one()
            row_id = conn.execute(
                sa.select(fingerprints.c.id).where(
                    fingerprints.c.ns_id == ns_id, fingerprints.c.key == "a"
                )
            ).scalar_one()
            assert stored_band_keys(conn, row_id=row_id)
        matches = store.query(TEXT + "!!", now=T0 + timedelta(hours=3))
        assert [m.key for m in matches] == ["a"]
    store.close()


def test_a_sighting_only_moves_forward(make_store: StoreFactory) -> None:
    store = make_store(keep="1d", partition="1h", policy=LAST_SEEN)
    store.add(key="a", fingerprint=0xABCDEF0123456789, at=T0)
    store.add(key="late", fingerprint=0xABCDEF0123456788, at=SEEN)
    store.add(key="earlier", fingerprint=0xABCDEF0123456787, at=T0 + timedelta(minutes=30))
    assert _row(store, "a") == (SEEN.replace(tzinfo=None), _hour(SEEN))
    store.close()


def test_a_batch_moves_stored_and_just_kept_texts(make_store: StoreFactory) -> None:
    store = make_store(keep="1d", partition="1h", policy=LAST_SEEN)
    store.add(TEXT, key="a", at=T0)
    later = T0 + timedelta(hours=5)
    decisions = store.add_many(
        [("b", OTHER), ("a-dup", TEXT + " "), ("b-dup", OTHER + " ")], at=later
    )
    assert [d.inserted for d in decisions] == [True, False, False]
    assert _row(store, "a") == (later.replace(tzinfo=None), _hour(later))
    assert _row(store, "b") == (later.replace(tzinfo=None), _hour(later))
    store.close()


def test_a_text_kept_by_a_batch_moves_to_its_later_sighting_in_that_batch(
    make_store: StoreFactory,
) -> None:
    # items with times of their own: "b" is kept at T0 and sighted at T0+5h by a later item of
    # the same batch, so its row is written at the sighting; "c" is sighted before it was kept
    # (an earlier time later in the batch), which never moves a text back
    store = make_store(keep="1d", partition="1h", policy=LAST_SEEN)
    later = T0 + timedelta(hours=5)
    decisions = list(
        store.add_many(
            [
                {"key": "b", "text": OTHER, "at": T0},
                {"key": "b-dup", "text": OTHER + " ", "at": later},
                {"key": "c", "text": TEXT, "at": later},
                {"key": "c-dup", "text": TEXT + " ", "at": T0},
            ]
        )
    )
    assert [d.inserted for d in decisions] == [True, False, True, False]
    assert _row(store, "b") == (later.replace(tzinfo=None), _hour(later))
    assert _row(store, "c") == (later.replace(tzinfo=None), _hour(later))
    store.close()


def test_a_hand_over_moves_the_stored_kept_text_its_duplicates_name(
    make_store: StoreFactory,
) -> None:
    """A load's kept row's last sighting is its latest duplicate's time: the load's moment."""
    store = make_store(keep="1d", partition="1h", policy=LAST_SEEN)
    store.add(TEXT, key="a", at=T0)
    item = batch.sign([TEXT + " "], keys=["a-dup"], policy=store.policy)[0]
    row = LoadRow("a-dup", False, item.fingerprint, duplicate_of="a", distance=0)
    loaded_at = T0 + timedelta(hours=6)
    assert store.load([row], at=loaded_at).duplicates == 1
    assert _row(store, "a") == (loaded_at.replace(tzinfo=None), _hour(loaded_at))
    store.close()


def test_the_recipe_records_the_option(make_store: StoreFactory) -> None:
    make_store(policy=LAST_SEEN).close()
    with pytest.raises(PolicyMismatch, match="expire_by_last_seen"):
        make_store(policy=MinHashVerification())
    adopted = make_store()
    assert adopted.policy.expire_by_last_seen is True
    adopted.close()


def test_a_bad_option_value_is_refused() -> None:
    with pytest.raises(InvalidInput, match="expire_by_last_seen of minhash takes bool"):
        policy_with("minhash", {"expire_by_last_seen": "maybe"})
    with pytest.raises(InvalidType, match="expire_by_last_seen must be True or False"):
        SimHashOnly(expire_by_last_seen=1)  # type: ignore[arg-type]
    assert policy_with("simhash", {"expire_by_last_seen": "on"}).expire_by_last_seen is True


# the cap: five rows in three partitions, kept at 09:10 and 09:20, 10:00, 11:00 and 11:30
CAPPED = [
    ("h1-old", T0 - timedelta(minutes=50)),
    ("h1-new", T0 - timedelta(minutes=40)),
    ("h2", T0),
    ("h3-old", T0 + timedelta(hours=1)),
    ("h3-new", T0 + timedelta(hours=1, minutes=30)),
]


def _capped(make_store: StoreFactory, **options: object) -> SimStore:
    store = make_store(partition="1h", **options)
    for number, (key, moment) in enumerate(CAPPED):
        store.add(key=key, fingerprint=(0x1111 * (number + 1)) << 40, at=moment)
    return store


@pytest.mark.parametrize(
    ("cap", "left"),
    [
        (5, ["h1-old", "h1-new", "h2", "h3-old", "h3-new"]),  # at the cap: nothing goes
        (4, ["h1-new", "h2", "h3-old", "h3-new"]),  # the oldest row of the oldest partition
        (3, ["h2", "h3-old", "h3-new"]),  # the oldest partition, whole
        (2, ["h3-old", "h3-new"]),
        (1, ["h3-new"]),  # within the newest partition too: its oldest row
    ],
)
def test_a_purge_evicts_the_oldest_past_the_cap(
    make_store: StoreFactory, caplog: pytest.LogCaptureFixture, cap: int, left: list[str]
) -> None:
    caplog.set_level(logging.INFO, logger="simstore")
    store = _capped(make_store)
    store.set_max_kept(cap)
    assert store.max_kept == cap
    dry = store.purge_counts(dry_run=True)
    assert dry is not None and dry.evicted == 5 - len(left) and dry.max_kept == cap
    assert store.stats().kept == 5  # a dry run writes nothing
    purged = store.purge_counts()
    assert purged is not None and purged.evicted == 5 - len(left) and purged.keep is None
    assert purged.band_keys == 0  # rows added by fingerprint have none, also when nothing goes
    # a cap without a window: no window, no edge, the namespace's partition length, each flag
    assert (dry.keep, dry.before, dry.partition_seconds, dry.dry_run) == (None, None, 3600, True)
    assert (purged.before, purged.partition_seconds, purged.dry_run) == (None, 3600, False)
    assert (purged.fingerprints, purged.decisions, purged.partition_rows) == (0, 0, 0)
    assert [key for key, _ in CAPPED if store.get(key) is not None] == left
    # exactly at the cap nothing is evicted, nor logged as evicted (expiry.over_cap: "past")
    assert any(m.startswith("evicted ") for m in caplog.messages) is (cap < 5)
    stats = store.stats()
    assert (stats.kept, stats.max_kept) == (len(left), cap)
    store.close()


def test_with_expiry_by_last_sighting_the_cap_evicts_the_least_recently_seen(
    make_store: StoreFactory,
) -> None:
    store = _capped(make_store, policy=SimHashOnly(expire_by_last_seen=True))
    seen = T0 + timedelta(hours=2)
    assert not store.add(key="again", fingerprint=(0x1111 * 1) << 40 ^ 1, at=seen).inserted
    store.set_max_kept(2)
    store.purge()
    assert [key for key, _ in CAPPED if store.get(key) is not None] == ["h1-old", "h3-new"]
    store.close()


def test_the_window_goes_first_then_the_cap(make_store: StoreFactory) -> None:
    store = _capped(make_store, keep="2h")
    store.set_max_kept(1)
    now = T0 + timedelta(hours=2, minutes=30)  # window from 10:30: the 09:00 partition goes
    # a dry run counts the cap over the partitions the window keeps: 10:00's (where the window
    # starts) and 11:00's, three rows
    dry = store.purge_counts(now=now, dry_run=True)
    assert dry is not None and (dry.fingerprints, dry.evicted) == (2, 2)
    purged = store.purge_counts(now=now)
    assert purged is not None and (purged.fingerprints, purged.evicted) == (2, 2)
    assert [key for key, _ in CAPPED if store.get(key) is not None] == ["h3-new"]
    store.close()


def test_the_cap_evicts_its_own_namespaces_oldest_by_time_with_their_band_keys(
    make_store: StoreFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """The partitions before the one that crosses the cap go whole (08:00's), then that one's
    oldest rows by time, not by id ("early" is added after "late"), of its own namespace only
    (another's older row in that partition stays); the band keys of all that goes are counted,
    and the eviction is logged."""
    caplog.set_level(logging.INFO, logger="simstore")
    store = make_store(partition="1h")
    other = make_store(namespace=f"other-{uuid.uuid4().hex[:8]}", partition="1h")
    other.add(OTHER, key="oldest", at=T0 - timedelta(minutes=55))  # 09:05, the 09:00 partition
    store.add(TEXT, key="late", at=T0 - timedelta(minutes=20))  # 09:40
    store.add(OTHER, key="early", at=T0 - timedelta(minutes=50))  # 09:10
    store.add(key="h2", fingerprint=0x5555 << 40, at=T0)  # 10:00, no band keys
    store.add(_raced_text(5), key="ancient", at=T0 - timedelta(hours=2))  # 08:00
    before = _band_keys(store)
    store.set_max_kept(2)
    # newest first: 10:00 holds 1, 09:00 2, 08:00 1: the cap cuts 09:00 with one row too many
    purged = store.purge_counts()
    assert purged is not None and (purged.evicted, purged.fingerprints) == (2, 0)
    left = [key for key in ("ancient", "late", "early", "h2") if store.get(key) is not None]
    assert left == ["late", "h2"]
    assert other.get("oldest") is not None
    after = _band_keys(store)
    assert 0 < len(after) < len(before) and purged.band_keys == len(before) - len(after)
    said = f"evicted 2 kept texts past the cap of 2 from {store.namespace}"
    assert said in caplog.messages
    other.close()
    store.close()


def test_purges_and_evictions_go_on_past_a_full_batch(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches of two rows (PURGE_BATCH_ROWS lowered: the loops, not the size, are pinned): a
    window purge deletes all five kept texts (with their band keys) and five decisions of the
    09:00 partition, and the cap then evicts three of the five rows of the 11:00 partition, not
    just a batch of them."""
    monkeypatch.setattr(maintenance, "PURGE_BATCH_ROWS", 2)
    store = make_store(partition="1h", keep="2h")
    for number in range(5):
        text, value = _raced_text(number), (0x1111 * (number + 1)) << 40
        store.add(text, key=f"old{number}", at=T0 - timedelta(minutes=50))
        assert not store.add(text + "!", key=f"dup{number}", at=T0 - timedelta(minutes=40)).inserted
        store.add(
            key=f"new{number}", fingerprint=value ^ (1 << 20), at=SEEN + timedelta(seconds=number)
        )
    store.set_max_kept(2)
    keys = len(_band_keys(store))
    assert keys >= 5 * 10  # the old texts' band keys (the new rows, added by value, have none)
    now = T0 + timedelta(hours=2, minutes=30)  # the window starts at 10:30: 09:00 goes
    dry = store.purge_counts(now=now, dry_run=True)
    purged = store.purge_counts(now=now)
    assert dry is not None and purged is not None
    assert (dry.fingerprints, dry.decisions, dry.evicted, dry.band_keys) == (5, 5, 3, keys)
    assert (purged.fingerprints, purged.decisions, purged.evicted) == (5, 5, 3)
    assert purged.band_keys == keys and _band_keys(store) == []
    assert store.stats().kept == 2 and store.stats().decisions == 2
    assert [n for n in range(5) if store.get(f"new{n}") is not None] == [3, 4]
    store.close()


@pytest.mark.parametrize(
    ("value", "error"),
    [(-1, InvalidInput), (0, InvalidInput), (True, InvalidType), ("5", InvalidType)],
)
def test_a_bad_cap_is_refused_and_changes_nothing(
    make_store: StoreFactory, value: object, error: type[Exception]
) -> None:
    store = _capped(make_store)
    store.set_max_kept(3)
    with pytest.raises(error, match="max_kept must"):
        store.set_max_kept(value)  # type: ignore[arg-type]
    assert store.max_kept == 3
    store.set_max_kept(None)
    assert store.max_kept is None and store.purge_counts() is None  # no window, no cap
    store.close()


def test_a_fill_counts_the_kept_texts_of_its_own_namespace(
    make_store: StoreFactory, engine: Engine
) -> None:
    store = _capped(make_store)  # five kept
    other = make_store(namespace=f"other-{uuid.uuid4().hex[:8]}")
    other.add(key="x", fingerprint=0x7777 << 40, at=T0)
    assert expiry.fill_of(store.scope) is None and expiry.fill_of(other.scope) is None
    store.set_max_kept(10)
    other.set_max_kept(4)
    mine = expiry.Fill(store.namespace, 5, 10)
    theirs = expiry.Fill(other.namespace, 1, 4)
    assert (expiry.fill_of(store.scope), expiry.fill_of(other.scope)) == (mine, theirs)
    # a server's database holds other tests' namespaces too
    ours = {store.namespace, other.namespace}
    assert [fill for fill in expiry.fills(engine) if fill.namespace in ours] == sorted(
        [mine, theirs]
    )
    store.close()
    other.close()


def test_dropping_a_namespace_forgets_its_cap(make_store: StoreFactory) -> None:
    store = make_store()
    store.set_max_kept(10)
    mine = f"max_kept:{store.ns_id}"  # a server's database holds other tests' namespaces too
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(settings.c.value).where(settings.c.name == mine)).scalar()
    drop(store.scope)
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(settings.c.name).where(settings.c.name == mine)).all() == []
    store.close()


def test_a_sighting_lock_is_a_bigint_of_its_own_for_each_kept_text() -> None:
    """The PostgreSQL advisory key an add takes to move a kept text: one per kept text, inside
    bigint's range, and never the key lock of an add of that key (``locking``), which adds take
    first: sharing one would break the lock order."""
    keys = [f"k{number}" for number in range(64)]
    locks = [expiry._sighting_lock(7, key) for key in keys]
    assert len(set(locks)) == len(keys)
    assert all(-(2**63) <= lock < 2**63 for lock in locks)
    assert not set(locks) & {locking._key_lock(7, key) for key in keys}


def test_a_partitioned_postgresql_database_moves_the_row_to_its_new_partition() -> None:
    """``db partition`` (1h, keep 2h) made before the first add: rows go to the partitions of
    their hours. The sighted row moves from the 10:00 partition to the 11:00 one, so the purge
    at 13:45, which drops the partitions ending by 11:45 (10:00's, with the row never seen
    again), leaves it."""
    url = new_server_database("postgresql")
    migrate.upgrade(url)
    engine = create_engine_for(url)
    try:
        with engine.begin() as conn:
            partitions.enable(conn, interval="1h", keep="2h", now=T0 - timedelta(hours=1))
        with SimStore(engine, keep="2h", partition="1h", policy=LAST_SEEN) as store:
            store.add(TEXT, key="a", at=T0)
            store.add(OTHER, key="b", at=T0)
            assert not store.add(TEXT + " ", key="a-dup", at=SEEN).inserted
            with engine.connect() as conn:
                homes: dict[str, str] = dict(
                    conn.execute(
                        sa.text("SELECT key, tableoid::regclass::text FROM simstore_fingerprints")
                    ).all()
                )
            hour = int(SEEN.timestamp()) // 3600 * 3600
            assert homes == {
                "a": f"simstore_fingerprints_p{hour}",
                "b": f"simstore_fingerprints_p{hour - 3600}",
            }
            purged = store.purge_counts(now=T0 + timedelta(hours=3, minutes=45))
            assert purged is not None and purged.partition_rows == 1
            assert store.get("a") is not None and store.get("b") is None
            found = store.query(TEXT + "!", now=T0 + timedelta(hours=3))
            assert [m.key for m in found] == ["a"]
    finally:
        engine.dispose()


# racing: adds that sight old kept texts, in processes, while another process purges
RACED = 24
WORKERS = 3


def _raced_text(number: int) -> str:
    return random_text(random.Random(number), words=14)


def _sighting_worker(url: str, namespace: str, worker: int, barrier: Any, out: Any) -> None:
    store = SimStore(url, namespace=namespace, partition="1h")
    moment = T0 + timedelta(hours=1, minutes=10 * worker)
    order = list(range(RACED))
    random.Random(worker).shuffle(order)
    decided = []
    barrier.wait()
    for number in order:
        decision = store.add(_raced_text(number) + "!" * (worker + 1), key=f"w{worker}-{number}",
                             at=moment)  # fmt: skip
        best = decision.duplicate_of
        decided.append((decision.key, moment, None if best is None else best.key))
    store.close()
    out.put(decided)


def _purging_worker(url: str, namespace: str, barrier: Any, out: Any) -> None:
    store = SimStore(url, namespace=namespace, partition="1h", keep="2h")
    barrier.wait()
    purged = sum(store.purge(now=T0 + timedelta(hours=3, minutes=15)) for _ in range(15))
    store.close()
    out.put(purged)


@pytest.mark.slow  # OS processes racing on every dialect
@pytest.mark.parametrize("dialect", ["sqlite-file", "postgresql", "mysql"], indirect=True)
def test_sightings_racing_a_purge_lose_no_sighted_text(database_url: str) -> None:
    """Every kept text a duplicate names is still stored, at its latest duplicate's time, with
    its band keys (a new copy finds it): a purge never deletes a row an add has just moved."""
    namespace = "raced"
    with SimStore(database_url, namespace=namespace, partition="1h", policy=LAST_SEEN) as store:
        for number in range(RACED):
            store.add(_raced_text(number), key=f"k{number}", at=T0)
    context = multiprocessing.get_context("spawn")
    barrier, out = context.Barrier(WORKERS + 1), context.Queue()
    processes = [
        context.Process(target=_sighting_worker, args=(database_url, namespace, w, barrier, out))
        for w in range(WORKERS)
    ]
    processes.append(
        context.Process(target=_purging_worker, args=(database_url, namespace, barrier, out))
    )
    results = run_together(processes, out)
    decided = [entry for result in results if isinstance(result, list) for entry in result]
    assert len(decided) == WORKERS * RACED
    # a kept text's time: its latest sighting, or its own when that is later (a worker's text
    # kept at 11:20, once the purge took the original, and sighted by one of 11:10 stays put)
    own = {key: moment for key, moment, kept in decided if kept is None}
    latest: dict[str, datetime] = {}
    for _key, moment, kept in decided:
        if kept is not None:
            latest[kept] = max(latest.get(kept, moment), moment, own.get(kept, moment))
    assert latest  # some adds found a stored text
    with SimStore(database_url, namespace=namespace) as store:
        for kept, moment in latest.items():
            assert _row(store, kept) == (moment.replace(tzinfo=None), _hour(moment)), kept
        now = T0 + timedelta(hours=2)
        for number in range(RACED):
            found = store.query(_raced_text(number) + "?", now=now)
            assert len(found) == 1 and found[0].key in latest


def _raced_value(number: int, worker: int | None = None) -> int:
    """Kept value ``number``, or worker ``worker``'s sighting of it: one bit flipped in each band
    but band ``worker`` (a bit of its own), so that two workers' values differ in every 16-bit
    band. They are 3 bits from the kept value and 6 from each other: no band lock of one add is
    the other's (``simstore.storage.locking``), so both may find and move the kept row at once."""
    value = random.Random(number).getrandbits(64)
    if worker is None:
        return value
    for band in range(4):
        if band != worker:
            value ^= 1 << (band * 16 + worker)
    return value


def _partitioned_sighter(url: str, worker: int, barrier: Any, out: Any) -> None:
    store = SimStore(url, namespace="raced", partition="1h")
    moment = T0 + timedelta(hours=1 + worker)  # each worker's sightings in another partition
    barrier.wait()
    try:
        for number in range(RACED):
            value = _raced_value(number, worker)
            store.add(key=f"w{worker}-{number}", fingerprint=value, at=moment)
        out.put(worker)
    except Exception as error:  # the test shows it, instead of waiting for a result
        out.put(f"worker {worker}: {type(error).__name__}: {error}")
    finally:
        store.close()


@pytest.mark.slow  # OS processes racing
def test_sightings_racing_on_a_partitioned_postgresql_database_move_each_row_once() -> None:
    """Single adds in processes sight the same kept fingerprints at once, each moving them to
    another partition: they take turns (a row moved by a concurrent UPDATE would fail the
    second), and every kept row ends in the partition of its latest sighting."""
    url = new_server_database("postgresql")
    migrate.upgrade(url)
    engine = create_engine_for(url)
    policy = SimHashOnly(expire_by_last_seen=True)
    try:
        with engine.begin() as conn:
            partitions.enable(conn, interval="1h", keep="1d", now=T0 - timedelta(hours=1))
            # again, later: the partitions up to the last worker's hour are made too
            partitions.enable(conn, interval="1h", keep="1d", now=T0 + timedelta(hours=1))
        with SimStore(engine, namespace="raced", partition="1h", policy=policy) as store:
            for number in range(RACED):
                store.add(key=f"k{number}", fingerprint=_raced_value(number), at=T0)
        context = multiprocessing.get_context("spawn")
        barrier, out = context.Barrier(WORKERS), context.Queue()
        workers = [
            context.Process(target=_partitioned_sighter, args=(url, w, barrier, out))
            for w in range(WORKERS)
        ]
        assert sorted(map(str, run_together(workers, out))) == [str(w) for w in range(WORKERS)]
        last = T0 + timedelta(hours=WORKERS)
        with engine.connect() as conn:
            homes = conn.execute(
                sa.text("SELECT key, added_at, tableoid::regclass::text FROM simstore_fingerprints")
            ).all()
        assert sorted(key for key, _at, _home in homes) == sorted(f"k{n}" for n in range(RACED))
        hour = int(last.timestamp()) // 3600 * 3600
        assert {(at, home) for _key, at, home in homes} == {
            (last.replace(tzinfo=None), f"simstore_fingerprints_p{hour}")
        }
    finally:
        engine.dispose()
