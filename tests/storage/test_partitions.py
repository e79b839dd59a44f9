"""PostgreSQL native partitioning by time: conversion in place, purge by DROP, keys stay unique."""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing
import random
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from simstore.errors import DatabaseUnavailable, InvalidInput, KeyConflict, SchemaOutOfDate
from simstore.policy.policies import DEFAULT_POLICY, SimHashOnly
from simstore.storage import migrate, partitions
from simstore.storage.db import create_engine_for
from simstore.storage.retention import EPOCH
from simstore.store import SimStore
from simstore.text import minhash
from tests._workers import stored_band_keys
from tests.cli.test_commands import Cli
from tests.conftest import HANG, lock_waiting_engines, new_server_database

DAY0 = datetime(2026, 3, 1, 10, 0, 0)
EVERY_BIT = (1 << 64) - 1
ONE_DAY = timedelta(days=1)

KEYS = minhash.LAYOUTS[DEFAULT_POLICY.minhash_bands][0]  # band keys a text (a key a band)


def _partitioned_url() -> str:
    url = new_server_database("postgresql")
    migrate.upgrade(url)
    return url


def _names(url: str, table: str = "simstore_fingerprints") -> list[str]:
    engine = create_engine_for(url)
    try:
        with engine.connect() as conn:
            return partitions.partition_names(conn, table)
    finally:
        engine.dispose()


def _enable(url: str, now: datetime, interval: str = "1d", keep: str = "2d") -> None:
    engine = create_engine_for(url)
    try:
        with engine.begin() as conn:
            partitions.enable(conn, interval=interval, keep=keep, now=now)
    finally:
        engine.dispose()


def test_rows_before_and_after_conversion_match_and_purge_drops_partitions() -> None:
    url = _partitioned_url()
    rng = random.Random(1)
    before = {f"old{i}": rng.getrandbits(64) for i in range(50)}
    with SimStore(url, keep="2d", policy=SimHashOnly()) as store:
        for key, value in before.items():
            store.add(fingerprint=value, key=key, at=DAY0)
    _enable(url, now=DAY0 + timedelta(hours=1))
    names = _names(url)
    assert "simstore_fingerprints_p_legacy" in names and "simstore_fingerprints_p_default" in names
    # day 0 stays in the legacy partition (the old table); days 1..3 are made ahead
    assert len([n for n in names if n[-1].isdigit()]) == 3

    after = {f"new{i}": rng.getrandbits(64) for i in range(50)}
    with SimStore(url, keep="2d", policy=SimHashOnly()) as store:
        for key, value in after.items():
            assert store.add(fingerprint=value, key=key, at=DAY0 + timedelta(days=1)).inserted
        # rows on both sides of the conversion are found, by a near value, from either side
        for key, value in {**before, **after}.items():
            found = store.query(fingerprint=value ^ 0b101, now=DAY0 + timedelta(days=1))
            assert [m.key for m in found] == [key]
            assert store.add(fingerprint=value ^ 1, key=f"dup-{key}", at=DAY0 + timedelta(days=1))
        assert store.stats().kept == 100
        # now - keep = March 2, 02:00: the legacy partition (up to March 2, 00:00) goes whole,
        # the rows of March 2, 10:00 stay
        purged = store.purge(now=datetime(2026, 3, 4, 2, 0))
        assert purged >= 50  # the 50 old kept rows (their own decisions' records), at least
        assert "simstore_fingerprints_p_legacy" not in _names(url)
        assert store.get("old0") is None and store.get("new0") is not None
        # the id sequence outlived the dropped partition that used to own it
        assert store.add(fingerprint=rng.getrandbits(64), key="later", at=DAY0 + timedelta(days=3))


def _band_key_rows(url: str) -> int:
    engine = create_engine_for(url)
    try:
        with engine.connect() as conn:
            return len(stored_band_keys(conn))
    finally:
        engine.dispose()


def test_texts_in_dropped_partitions_take_their_band_keys_along() -> None:
    """PostgreSQL keeps a row's band keys in the row: a dropped partition takes them along."""
    url = _partitioned_url()
    _enable(url, now=DAY0)
    texts = [
        "The river ferry timetable changes for the spring season, with boats every half hour.",
        "Volunteers planted two hundred oak saplings along the northern bank on Saturday.",
        "The old stone bridge closes for repairs from Monday; buses will take its traffic.",
    ]
    with SimStore(url, keep="2d") as store:
        partitions_before = set(_names(url))
        for day, text in enumerate(texts):
            assert store.add(text, key=f"day{day}", at=DAY0 + timedelta(days=day)).inserted
        assert _band_key_rows(url) == 3 * KEYS  # a key a band
        store.purge(now=DAY0 + timedelta(days=3))  # day 0 (its whole partition) is past the window
        assert store.get("day0") is None and store.get("day1") is not None
        assert partitions_before - set(_names(url))  # day 0 left by DROP, not by deletes
        assert _band_key_rows(url) == 2 * KEYS
        repost = "RT @citynews: " + texts[2]
        decision = store.add(repost, key="repost", at=DAY0 + timedelta(days=3))
        assert decision.duplicate_of is not None and decision.duplicate_of.key == "day2"


def test_a_partition_goes_once_its_end_is_keep_old(caplog: pytest.LogCaptureFixture) -> None:
    """Interval 1d, keep 2d: March 1's partitions end March 2, 00:00, so a purge drops them from
    March 4, 00:00 on, not a second before, and its dry run counts their rows alike. The store's
    own window (3d) is longer: the rows go by the drop alone."""
    caplog.set_level(logging.INFO, logger="simstore")
    url = _partitioned_url()
    _enable(url, now=DAY0 - timedelta(days=1))  # partitions from March 1 on
    march1 = f"simstore_fingerprints_p{int((datetime(2026, 3, 1) - EPOCH).total_seconds())}"
    rng = random.Random(3)
    with SimStore(url, keep="3d", policy=SimHashOnly()) as store:
        values = [rng.getrandbits(64) for _ in range(3)]
        for n, value in enumerate(values):
            store.add(fingerprint=value, key=f"k{n}", at=DAY0)
        assert not store.add(fingerprint=values[0] ^ 1, key="dup", at=DAY0).inserted
        store.add(fingerprint=rng.getrandbits(64), key="next", at=DAY0 + timedelta(days=1))
        edge = datetime(2026, 3, 4)
        for now, dropped in ((edge - timedelta(seconds=1), 0), (edge, 4)):  # 3 kept, 1 logged
            dry = store.purge_counts(now=now, dry_run=True)
            done = store.purge_counts(now=now)
            assert dry is not None and done is not None
            assert (dry.partition_rows, done.partition_rows) == (dropped, dropped), now
            assert (march1 in _names(url)) is (dropped == 0)
        assert store.get("k0") is None and store.get("dup") is None
        assert store.get("next") is not None
    # the legacy partition ended March 1: dropped too, though listed after the ones still kept
    assert "simstore_fingerprints_p_legacy" not in _names(url)
    assert f"dropped partition {march1} (3 rows)" in caplog.messages


def test_a_dry_run_counts_dropped_partitions_and_the_windows_rows_apart_at_their_edges() -> None:
    """Interval 1d, keep 2d, purged at March 4, 06:00 by a store whose own window (1d) is shorter:
    the partitions ending by March 2, 06:00 go whole, which is March 1's (it ends at 00:00): its
    kept text and decision. A row at March 2, 00:00 (the first second of a partition that stays)
    and one of 10:00, with its duplicate, go row by row (the window starts March 3, 06:00), with
    their band keys; the dry run counts each once, where the purge then deletes it."""
    url = _partitioned_url()
    _enable(url, now=DAY0 - timedelta(days=1))  # partitions from March 1 on
    march2 = datetime(2026, 3, 2)
    texts = [
        "The river ferry timetable changes for the spring season, with boats every half hour.",
        "Volunteers planted two hundred oak saplings along the northern bank on Saturday.",
        "The old stone bridge closes for repairs from Monday; buses will take its traffic.",
        "A new bakery on the market square sells rye bread baked in a wood-fired oven.",
    ]
    with SimStore(url, keep="1d", partition="1h") as store:
        store.add(texts[0], key="dropped", at=DAY0)  # March 1, 10:00
        assert not store.add(texts[0] + "!", key="dropped-dup", at=DAY0).inserted
        store.add(texts[1], key="edge", at=march2)
        store.add(texts[2], key="row", at=march2 + timedelta(hours=10))
        assert not store.add(
            texts[2] + "!", key="row-dup", at=march2 + timedelta(hours=10)
        ).inserted
        store.add(texts[3], key="kept", at=datetime(2026, 3, 3, 12))
        now = datetime(2026, 3, 4, 6)
        dry = store.purge_counts(now=now, dry_run=True)
        assert dry is not None
        assert (dry.partition_rows, dry.fingerprints, dry.decisions) == (2, 2, 1)
        assert dry.band_keys == 2 * KEYS  # "edge"'s and "row"'s (a key a band)
        done = store.purge_counts(now=now)
        assert done is not None
        counted = (done.partition_rows, done.fingerprints, done.decisions, done.band_keys)
        assert counted == (2, 2, 1, 2 * KEYS)
        keys = ("dropped", "dropped-dup", "edge", "row", "row-dup", "kept")
        assert [key for key in keys if store.get(key) is not None] == ["kept"]
        assert _band_key_rows(url) == KEYS


def test_the_legacy_partition_counts_as_dropped_once_its_end_is_keep_old() -> None:
    """Rows from before partitioning (February 28 and March 1, 10:00) sit in the legacy partition,
    which ends at the first boundary, March 2, 00:00 (interval 1d, keep 2d). At March 3, 12:00 it
    is not dropped (now - keep, March 1, 12:00, floored to the interval is before its end): the
    store's 1d window takes both rows row by row, and the dry run counts them so. At March 4,
    06:00 (now - keep floored is the first boundary itself) it goes whole, counted as dropped."""
    url = _partitioned_url()
    with SimStore(url, keep="1d", partition="1h", policy=SimHashOnly()) as store:
        store.add(fingerprint=0x1111_2222_3333_4444, key="feb28", at=DAY0 - timedelta(days=1))
        store.add(fingerprint=0x5555_6666_7777_8888, key="march1", at=DAY0)
    _enable(url, now=DAY0 + timedelta(hours=1))
    with SimStore(url, keep="1d", partition="1h", policy=SimHashOnly()) as store:
        kept = store.purge_counts(now=datetime(2026, 3, 3, 12), dry_run=True)
        assert kept is not None and (kept.partition_rows, kept.fingerprints) == (0, 2)
        edge = datetime(2026, 3, 4, 6)
        dry = store.purge_counts(now=edge, dry_run=True)
        done = store.purge_counts(now=edge)
        assert dry is not None and done is not None
        assert (dry.partition_rows, dry.fingerprints) == (done.partition_rows, done.fingerprints)
        assert (done.partition_rows, done.fingerprints) == (2, 0)
        assert "simstore_fingerprints_p_legacy" not in _names(url)
        assert store.get("feb28") is None and store.get("march1") is None


def test_no_partition_is_made_over_rows_in_the_default_partition(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Enabled on March 1 (1d), partitions reach March 5, 00:00: a row of March 6, 00:00 goes to
    the DEFAULT partition. Three days on, the partitions ahead reach March 8: March 5's (the row
    lies at its end, outside it) and March 7's are made, March 6's (the row lies at its start)
    is not, with a warning, and the row is still found."""
    url = _partitioned_url()
    _enable(url, now=DAY0)
    march5, march6, march7 = (datetime(2026, 3, day) for day in (5, 6, 7))
    made = {
        day: f"simstore_fingerprints_p{int((day - EPOCH).total_seconds())}"
        for day in (march5, march6, march7)
    }
    with SimStore(url, policy=SimHashOnly()) as store:
        assert store.add(fingerprint=0x1234_5678_9ABC_DEF0, key="late", at=march6).inserted
        assert not set(made.values()) & set(_names(url))
        _enable(url, now=DAY0 + timedelta(days=3))
        assert set(made.values()) - set(_names(url)) == {made[march6]}
        assert store.get("late") is not None
    warned = f"rows of {march6}..{march7} sit in simstore_fingerprints_p_default; no partition made"
    assert warned in caplog.messages


def test_a_key_stays_unique_across_partitions() -> None:
    url = _partitioned_url()
    _enable(url, now=DAY0)
    with SimStore(url, keep="2d", policy=SimHashOnly()) as store:
        value = random.Random(2).getrandbits(64)
        store.add(fingerprint=value, key="k", at=DAY0)
        # the same key a day later lands in another partition: still the first decision
        again = store.add(fingerprint=value, key="k", at=DAY0 + timedelta(days=1))
        assert again.inserted and store.stats().decisions == 1
        with pytest.raises(KeyConflict):
            store.add(fingerprint=value ^ (1 << 40), key="k", at=DAY0 + timedelta(days=1))


def test_an_add_of_a_key_waits_for_an_uncommitted_add_of_it_in_another_partition() -> None:
    """The unique constraint holds the time column, so it cannot make an add of "k" on March 2
    wait for an uncommitted add of "k" on March 1 (another partition): only the lock on the key
    itself does (``simstore.storage.locking``). The waiting session's lock_timeout turns the
    wait into an error instead of a hang (a lock wait is certain here: the holder never commits
    before it). The two values differ in every bit, so no probe key is common; a seed row
    committed first means neither add updates the namespace row, which every add would wait
    for. Once the first commits, the second is told the key is taken: one row."""
    url = _partitioned_url()
    _enable(url, now=DAY0)
    value = 0x0123_4567_89AB_CDEF
    with SimStore(url, keep="2d", policy=SimHashOnly()) as seed:
        assert seed.add(fingerprint=0x0F0F_0F0F_0F0F_0F0F, key="seed", at=DAY0).inserted
    with lock_waiting_engines(url) as (engine, impatient), engine.connect() as conn:
        transaction = conn.begin()
        holder = SimStore(conn, keep="2d", policy=SimHashOnly())
        assert holder.add(fingerprint=value, key="k", at=DAY0).inserted
        with SimStore(impatient, keep="2d", policy=SimHashOnly()) as other:

            def add_later() -> object:  # "k" on March 2, far from the first in every bit
                return other.add(fingerprint=value ^ EVERY_BIT, key="k", at=DAY0 + ONE_DAY)

            with pytest.raises(DatabaseUnavailable, match="lock timeout"):
                add_later()
            holder.close()
            transaction.commit()
            with pytest.raises(KeyConflict):
                add_later()
            assert other.stats().kept == 2  # "seed" and the first "k"


def test_partition_maintenance_keeps_adds_out_until_it_commits() -> None:
    """``enable`` run again (keep changed; every partition exists, so no DDL at all) takes the
    tables' lock exclusively, as a purge that drops partitions does: an add, which takes it
    shared first, waits until the maintenance commits, so a DROP never waits for an add that
    waits for it (``simstore.storage.locking``). The add's session has a lock_timeout, which
    turns that certain wait into an error instead of a hang; after the commit it goes in."""
    url = _partitioned_url()
    _enable(url, now=DAY0)
    names = _names(url)
    with (
        lock_waiting_engines(url) as (engine, impatient),
        SimStore(impatient, keep="2d", policy=SimHashOnly()) as other,
    ):
        with engine.connect() as conn:
            transaction = conn.begin()
            partitions.enable(conn, interval="1d", keep="3d", now=DAY0)
            assert _names(url) == names  # nothing made: the lock alone keeps the add out
            with pytest.raises(DatabaseUnavailable, match="lock timeout"):
                other.add(fingerprint=0x0123_4567_89AB_CDEF, key="during", at=DAY0)
            transaction.commit()
        assert other.add(fingerprint=0x0123_4567_89AB_CDEF, key="after", at=DAY0).inserted
        assert other.get("during") is None
    assert partitions.layout(url) == partitions.Partitioning(
        ONE_DAY, 3 * ONE_DAY, datetime(2026, 3, 2)
    )


def _add_same_key(url: str, value: int, at: datetime, barrier: object) -> None:
    with SimStore(url, keep="2d", policy=SimHashOnly()) as store:
        barrier.wait()  # type: ignore[attr-defined]
        with contextlib.suppress(KeyConflict):  # the loser of the race, told so
            store.add(fingerprint=value, key="raced", at=at)


@pytest.mark.slow
def test_racing_adds_of_one_key_into_two_partitions_keep_one_row() -> None:
    url = _partitioned_url()
    _enable(url, now=DAY0)
    context = multiprocessing.get_context("spawn")
    for attempt in range(3):
        barrier = context.Barrier(2)
        workers = [
            context.Process(
                target=_add_same_key,
                args=(url, value, DAY0 + timedelta(days=day), barrier),
            )
            # far apart in every band: no band lock in common, only the key lock serialises them
            for day, value in ((0, 0x1111_2222_3333_4444 + attempt), (1, 0x9999_AAAA_BBBB_CCCC))
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(HANG)  # a spawned worker is slow to start under load
            assert worker.exitcode == 0, attempt
        engine = create_engine_for(url)
        with engine.connect() as conn:
            count = conn.execute(  # its decisions: kept rows (their own records) and logged ones
                sa.text(
                    "SELECT (SELECT count(*) FROM simstore_decisions WHERE key = 'raced') + "
                    "(SELECT count(*) FROM simstore_fingerprints WHERE key = 'raced')"
                )
            ).scalar_one()
            conn.execute(sa.text("DELETE FROM simstore_decisions WHERE key = 'raced'"))
            conn.execute(sa.text("DELETE FROM simstore_fingerprints WHERE key = 'raced'"))
            conn.commit()
        engine.dispose()
        assert count == 1, attempt


def test_interval_cannot_change_and_keep_can() -> None:
    url = _partitioned_url()
    _enable(url, now=DAY0)
    with pytest.raises(InvalidInput, match="interval cannot change"):
        _enable(url, now=DAY0, interval="12h")
    _enable(url, now=DAY0 + timedelta(days=5), keep="7d")
    engine = create_engine_for(url)
    with engine.connect() as conn:
        layout = partitions.read(conn)
    engine.dispose()
    assert layout is not None and layout.keep == timedelta(days=7)
    # the partitions up to 3 days ahead of day 5 were made by the second run
    day8 = int((datetime(2026, 3, 9) - datetime(1970, 1, 1)).total_seconds())
    assert f"simstore_fingerprints_p{day8}" in _names(url)


def test_the_interval_is_whole_hours_and_keep_at_least_one_interval() -> None:
    url = _partitioned_url()
    for interval, keep, refused in (
        ("59m", "1h", "the partition interval must be a whole number of hours"),
        ("90m", "2h", "the partition interval must be a whole number of hours"),
        ("1d", "23h", "keep must be at least one partition interval"),
    ):
        with pytest.raises(InvalidInput, match=f"^{refused}$"):
            _enable(url, now=DAY0, interval=interval, keep=keep)
    assert partitions.layout(url) is None  # nothing was written
    _enable(url, now=DAY0, interval="1h", keep="1h")  # the shortest of both
    # the first boundary: the hour after the newest time (now, 10:00; no rows yet)
    made = partitions.Partitioning(
        timedelta(hours=1), timedelta(hours=1), DAY0 + timedelta(hours=1)
    )
    assert partitions.layout(url) == made


def test_the_first_boundary_follows_rows_newer_than_now() -> None:
    url = _partitioned_url()
    with SimStore(url, policy=SimHashOnly()) as store:
        store.add(fingerprint=0x0F0F_0F0F_0F0F_0F0F, key="later", at=DAY0 + timedelta(days=2))
    _enable(url, now=DAY0)
    layout = partitions.layout(url)  # the day after the newest row's (March 3), not now's
    assert layout is not None and layout.first_boundary == datetime(2026, 3, 4)
    with SimStore(url, policy=SimHashOnly()) as store:
        assert store.get("later") is not None


def test_cli_partitions_postgresql_and_refuses_other_databases(tmp_path: Path) -> None:
    url = _partitioned_url()
    cli = Cli(tmp_path, url)
    done = cli("--json", "db", "partition")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["interval_seconds"] == 86400 and report["keep_seconds"] == 172800
    assert "simstore_fingerprints_p_legacy" in report["partitions"]
    sqlite_url = f"sqlite:///{tmp_path}/x.db"
    SimStore(sqlite_url).close()
    refused = cli("db", "partition", db=sqlite_url)
    assert refused.returncode == 4 and "PostgreSQL" in refused.stderr  # 4: invalid input


def test_enable_takes_a_url_checks_the_schema_and_commits() -> None:
    fresh = new_server_database("postgresql")
    with pytest.raises(SchemaOutOfDate, match=r"simstore --db .* db upgrade"):
        partitions.enable(fresh, interval="1d", keep="2d", now=DAY0)
    migrate.upgrade(fresh)
    layout = partitions.enable(fresh, interval="1d", keep="3d", now=DAY0)
    assert layout.keep == timedelta(days=3) and layout.interval == timedelta(days=1)
    # committed: another connection sees the partitions (by URL too)
    names = partitions.partition_names(fresh, "simstore_fingerprints")
    assert names == _names(fresh) and "simstore_fingerprints_p_legacy" in names
    engine = create_engine_for(fresh)
    try:
        with engine.connect() as conn:
            assert partitions.read(conn) == layout
    finally:
        engine.dispose()


def test_enable_on_sqlite_is_refused_with_the_reason(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    migrate.upgrade(url)
    with pytest.raises(
        InvalidInput,
        match=r"^native partitioning is a PostgreSQL feature; sqlite databases purge by batched "
        r"deletes$",
    ):
        partitions.enable(url, interval="1d", keep="2d")


def test_purges_and_adds_running_together_never_deadlock() -> None:
    # A purge drops and creates partitions (DDL: ACCESS EXCLUSIVE on each parent table, in the
    # order fingerprints, decisions) while adds read decisions, then fingerprints, then insert:
    # without a common first lock they deadlocked (20 of 120 adds) and racing purgers made the
    # same partition twice ("relation already exists").
    url = _partitioned_url()
    _enable(url, now=DAY0, interval="1h", keep="2h")
    clock = [DAY0]
    errors: list[BaseException] = []
    added: list[int] = []
    adds: list[int] = []
    done = threading.Event()

    def add(seed: int) -> None:
        rng = random.Random(seed)
        with SimStore(url, keep="2h", policy=SimHashOnly()) as store:
            n = 0
            while not done.is_set():
                at = clock[0] + timedelta(minutes=rng.randrange(50))
                try:
                    store.add(fingerprint=rng.getrandbits(64), key=f"a{seed}-{n}", at=at)
                except BaseException as error:
                    errors.append(error)
                n += 1
                adds.append(n)  # list.append is atomic: a count the purgers can wait on
            added.append(n)

    def purge(hours: range) -> None:
        with SimStore(url, keep="2h", policy=SimHashOnly()) as store:
            for hour in hours:
                moment = DAY0 + timedelta(hours=hour)
                clock[0] = max(clock[0], moment)
                try:
                    store.purge(now=moment)
                except BaseException as error:
                    errors.append(error)
                # adds go on between purges: wait for two more (a condition, not a rate)
                seen, started = len(adds), time.monotonic()
                while len(adds) < seen + 2:
                    if time.monotonic() - started > 120:
                        errors.append(TimeoutError("no add ran between two purges"))
                        return
                    time.sleep(0.01)

    adders = [threading.Thread(target=add, args=(seed,)) for seed in (1, 2)]
    purgers = [threading.Thread(target=purge, args=(range(1, 13),)) for _ in range(2)]
    for thread in adders + purgers:
        thread.start()
    for thread in purgers:
        thread.join()
    done.set()
    for thread in adders:
        thread.join()
    assert errors == []  # every purge saw adds run between it and the next: beside them
    assert sum(added) == len(adds)


def _statistics(url: str, relation: str) -> tuple[bool, int]:
    """Whether ``relation`` has been analyzed (by hand or by autovacuum), and the rows modified
    since."""
    engine = create_engine_for(url)
    try:
        with engine.connect() as conn:
            analyzed, modified = conn.exec_driver_sql(
                "SELECT last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL, "
                "n_mod_since_analyze FROM pg_stat_user_tables WHERE relname = %s",
                (relation,),
            ).one()
            return bool(analyzed), int(modified)
    finally:
        engine.dispose()


@pytest.mark.slow  # a bulk load big enough for the statistics to matter
def test_bulk_loads_into_the_legacy_partition_get_statistics() -> None:
    # Rows older than the first boundary land in <table>_p_legacy. Without statistics there
    # (autovacuum off) PostgreSQL scanned it whole for every batch's key lookup.
    url = _partitioned_url()
    _enable(url, now=DAY0 + timedelta(days=3))
    legacy = "simstore_fingerprints_p_legacy"
    rng = random.Random(7)
    with SimStore(url, keep="10d", policy=SimHashOnly()) as store:
        loaded = [{"key": f"k{i}", "fingerprint": rng.getrandbits(64)} for i in range(2_500)]
        assert all(d.inserted for d in store.add_many(loaded, at=DAY0))
        # the counters reach pg_stat_user_tables within about a second of the commit
        for _ in range(100):
            analyzed, modified = _statistics(url, legacy)
            if analyzed or modified >= 2_500:
                break
            time.sleep(0.1)
        # a batch this big refreshes statistics that lag by more than 20% of a table
        more = [{"key": f"m{i}", "fingerprint": rng.getrandbits(64)} for i in range(1_000)]
        assert all(d.inserted for d in store.add_many(more, at=DAY0))
    assert _statistics(url, legacy)[0]
