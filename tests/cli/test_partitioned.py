"""The ``simstore`` command on a partitioned PostgreSQL database: the global --keep and purge."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from simstore.policy.policies import DEFAULT_POLICY
from simstore.storage import migrate, partitions
from simstore.store import SimStore
from simstore.text import minhash
from tests._workers import stored_band_keys
from tests.cli.test_commands import LONG_TEXT, Cli
from tests.conftest import new_server_database

WARNING = "but the database's partitions are dropped after"

KEYS = minhash.LAYOUTS[DEFAULT_POLICY.minhash_bands][0]  # band keys a text (a key a band)


def test_a_global_keep_within_the_databases_window_silences_its_warning(tmp_path: Path) -> None:
    url = new_server_database("postgresql")
    migrate.upgrade(url)
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    # rows from before the window, then partitions: the third text is the first re-sent (the
    # same after normalisation: a duplicate), the second another text
    old = [LONG_TEXT[::-1], f"1 {LONG_TEXT}", f"{LONG_TEXT[::-1]}!"]
    with SimStore(url, keep="2d") as store:
        for n, text in enumerate(old):
            store.add(text, key=f"old{n}", at=now - timedelta(days=5))
    partitions.enable(url, interval="1d", keep="2d", now=now)
    with SimStore(url, keep="2d") as store:
        store.add(LONG_TEXT, key="a")
    cli = Cli(tmp_path, url)

    warned = cli("stats")
    assert warned.returncode == 0, warned.stderr
    assert WARNING in warned.stderr  # no window: the namespace would keep what the database drops

    quiet = cli("--keep", "2d", "stats")
    assert quiet.returncode == 0 and WARNING not in quiet.stderr, quiet.stderr

    dry = cli("--keep", "2d", "--json", "purge", "--dry-run")
    assert dry.returncode == 0 and WARNING not in dry.stderr, dry.stderr
    counted = json.loads(dry.stdout)
    assert counted["dry_run"] is True
    # the legacy partition (the table as it was) is not dropped before its end is 2 days old, so
    # the old rows go row by row: 2 kept (one old text was a duplicate), its decision (the kept
    # rows are their own), and the band keys in those rows (a key a band)
    assert counted["tables"] == {
        "simstore_fingerprints": 2,
        "simstore_decisions": 1,
        "simstore_minhash": 2 * KEYS,
    }
    done = cli("--keep", "2d", "--json", "purge")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tables"] == counted["tables"]  # what the dry run said
    with SimStore(url, keep="2d") as store:
        assert store.stats().kept == 1 and store.get("a") is not None


def test_a_purge_leaves_the_band_keys_of_other_namespaces_rows_it_does_not_drop(
    tmp_path: Path,
) -> None:
    """The legacy partition is not dropped until its end is past the window: the rows of other
    namespaces in it keep their band keys (they used to lose them, and with them their matches)."""
    url = new_server_database("postgresql")
    migrate.upgrade(url)
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    old = now - timedelta(days=5)
    for namespace in ("a", "b"):
        with SimStore(url, namespace=namespace) as store:
            store.add(LONG_TEXT, key=f"{namespace}-old", at=old)
    partitions.enable(url, interval="1d", keep="2d", now=now)
    purged = Cli(tmp_path, url)("--namespace", "a", "--keep", "2d", "--json", "purge")
    assert purged.returncode == 0, purged.stderr
    assert json.loads(purged.stdout)["tables"]["simstore_minhash"] == KEYS  # a's row's
    with SimStore(url, namespace="b") as store:  # no window: b's old row still matches
        assert [match.key for match in store.query(LONG_TEXT)] == ["b-old"]
        with store.engine.connect() as conn:
            left = len(stored_band_keys(conn, namespace="b"))
    assert left == KEYS
