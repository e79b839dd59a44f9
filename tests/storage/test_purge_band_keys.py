"""Purge and remove find a row's MinHash band keys by recomputing them from its signature."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from simstore.policy import batch
from simstore.policy.policies import DEFAULT_POLICY
from simstore.storage import migrate
from simstore.storage.schema import fingerprints, minhash_keys
from simstore.store import SimStore
from simstore.text import minhash
from tests._workers import stored_band_keys
from tests.conftest import new_server_database

DAY1 = datetime(2026, 3, 1, 12)
WORDS = [
    "harbour",
    "ferry",
    "timetable",
    "north",
    "pier",
    "boats",
    "morning",
    "evening",
    "river",
    "bridge",
    "market",
]

KEYS = minhash.LAYOUTS[DEFAULT_POLICY.minhash_bands][0]  # band keys a text (a key a band)


def _text(i: int) -> str:
    return " ".join(f"{WORDS[(i * 7 + j) % len(WORDS)]}{(i * 31 + j) % 97}" for j in range(30))


def _orphans_and_rows(store: SimStore) -> tuple[int, int]:
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(sa.func.count()).select_from(minhash_keys)).scalar_one()
        orphans = conn.execute(
            sa.select(sa.func.count())
            .select_from(minhash_keys)
            .where(~sa.exists().where(fingerprints.c.id == minhash_keys.c.fp_id))
        ).scalar_one()
    return int(orphans), int(rows)


def test_purge_and_remove_leave_no_band_keys_behind(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/p.db"
    with SimStore(url, keep="1d") as store:
        items = [
            {"key": f"k{i}", "text": _text(i), "at": DAY1 + timedelta(days=i % 2, minutes=i)}
            for i in range(60)
        ]
        kept = sum(decision.inserted for decision in store.add_many(items, batch_size=7))
        assert kept == 60
        _orphans, before = _orphans_and_rows(store)
        assert before >= 60 * (KEYS - 4)  # a key a band, but for the odd repeat
        assert (
            store.purge(now=DAY1 + timedelta(days=2)) == 30
        )  # 30 kept rows (their own decisions' records)
        orphans, after = _orphans_and_rows(store)
        assert orphans == 0
        assert 0 < after < before
        assert store.remove("k1")
        orphans, left = _orphans_and_rows(store)
        assert orphans == 0 and left < after
        # a day-2 text still matches itself through its band keys after the purge
        found = store.query(_text(3), now=DAY1 + timedelta(days=1, hours=12))
        assert [match.key for match in found][:1] == ["k3"]


@pytest.mark.parametrize("dialect", ["sqlite", "mysql"])  # the two with band-key rows
def test_purge_deletes_exactly_the_purged_rows_band_keys(dialect: str, tmp_path: Path) -> None:
    # On a server the keys go many rows a statement (their keys and their ids): a key shared
    # with a row that stays, or with another namespace's copy of the same text, must stay.
    url = f"sqlite:///{tmp_path}/p.db" if dialect == "sqlite" else new_server_database("mysql")
    migrate.upgrade(url)
    texts = [_text(i) for i in range(300)]  # more rows than one statement takes (128)
    items = [
        {"key": f"k{i}", "text": text, "at": DAY1 + timedelta(days=i % 2, minutes=i)}
        for i, text in enumerate(texts)
    ]
    with SimStore(url, keep="1d", namespace="other") as other:
        assert all(decision.inserted for decision in other.add_many(items))
    with SimStore(url, keep="1d") as store:
        assert all(decision.inserted for decision in store.add_many(items))
        assert (
            store.purge(now=DAY1 + timedelta(days=2)) == 150
        )  # 150 kept rows (their own decisions' records)
        staying = batch.sign([text for i, text in enumerate(texts) if i % 2 == 1])
        everything = batch.sign(texts)
        with store.engine.connect() as conn:
            assert stored_band_keys(conn, namespace="default") == sorted(
                key for item in staying for key in item.band_keys
            )
            assert stored_band_keys(conn, namespace="other") == sorted(
                key for item in everything for key in item.band_keys
            )
