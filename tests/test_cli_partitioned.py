"""The ``simstore`` command on a partitioned PostgreSQL database: the global --keep and purge."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from simstore import migrate, partitions
from simstore.store import SimStore

from .conftest import new_server_database
from .test_cli import LONG_TEXT, Cli

WARNING = "but the database's partitions are dropped after"


def test_a_global_keep_within_the_databases_window_silences_its_warning(tmp_path: Path) -> None:
    url = new_server_database("postgresql")
    migrate.upgrade(url)
    now = datetime.now(timezone.utc).replace(tzinfo=None)
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
    assert counted["dry_run"] is True and counted["deleted"] == 0  # the text is from today
