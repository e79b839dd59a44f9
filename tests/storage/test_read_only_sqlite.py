"""A SQLite database the user cannot write (a read-only file, or a WAL file in a folder it cannot
write) is read: ``stats``, ``query`` and ``export`` work, opened with SQLite's ``mode=ro`` (and
``immutable=1`` where no -shm file can be made); an add says the database is read-only (exit 3).
Before, every command failed with "attempt to write a readonly database". Run as the user
nobody, whom file permissions stop (root would write anyway)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from simstore.store import SimStore
from tests._workers import command
from tests.storage.test_faults import _as_another_user

TEXT = "The harbour ferry timetable changes on Monday: boats leave every twenty minutes."


@contextlib.contextmanager
def _stored() -> Iterator[tuple[Path, Path]]:
    """(the database ro.db holding TEXT as key "a", the folder for the code nobody runs): both
    outside tmp_path, which the user nobody cannot reach; removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="simstore-ro-"))
    code = Path(tempfile.mkdtemp(prefix="simstore-code-"))
    code.chmod(0o755)
    try:
        with SimStore(f"sqlite:///{folder / 'ro.db'}") as store:
            store.add(TEXT, key="a")
        yield folder / "ro.db", code
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)
        shutil.rmtree(code)


@pytest.mark.parametrize(
    ("locked", "journal"),
    [
        ("file", "wal"),
        ("folder", "wal"),  # the file is writable, but no -shm index can be made beside it
        ("file-and-folder", "wal"),
        # a file in SQLite's default rollback journal (as another program makes it): SQLite
        # refuses to turn a file it cannot write to WAL, so simstore must not ask
        ("file", "delete"),
    ],
)
def test_a_database_this_user_cannot_write_is_read(locked: str, journal: str) -> None:
    with _stored() as (path, code):
        folder, url = path.parent, f"sqlite:///{path}"
        feed = folder / "more.jsonl"
        feed.write_text(json.dumps({"id": "b", "text": "a new text about mountains"}) + "\n")
        if journal != "wal":
            with contextlib.closing(sqlite3.connect(path)) as connection:
                connection.execute(f"PRAGMA journal_mode={journal}")
        feed.chmod(0o444)
        for each in folder.glob("ro.db*"):
            each.chmod(0o666 if locked == "folder" else 0o444)
        folder.chmod(0o777 if locked == "file" else 0o555)
        before = path.read_bytes()
        prefix = _as_another_user(code)  # root drops to nobody; another user is stopped as is

        def simstore(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [*prefix, sys.executable, "-m", "simstore.cli", "--db", url, *args],
                cwd=code,
                env={**os.environ, "PYTHONPATH": str(code)},
                capture_output=True,
                text=True,
                check=False,
            )

        stats = simstore("--json", "stats")
        assert stats.returncode == 0, stats.stderr
        assert json.loads(stats.stdout)["kept"] == 1
        query = simstore("--json", "query", TEXT)
        assert query.returncode == 0, query.stderr
        assert [match["key"] for match in json.loads(query.stdout)["matches"]] == ["a"]
        exported = simstore("export")
        assert exported.returncode == 0, exported.stderr
        assert json.loads(exported.stdout.splitlines()[0])["key"] == "a"
        added = simstore("ingest", str(feed))
        assert added.returncode == 3, added.stderr
        assert "the database is read-only" in added.stderr
        assert "Traceback" not in added.stderr
        assert path.read_bytes() == before


def test_a_store_opened_read_only_sees_what_another_user_adds_meanwhile() -> None:
    # a file this user cannot write in a folder it can: SQLite's mode=ro reads it as any reader
    # does, through the write-ahead log's index, so a row the file's owner commits later is seen
    # (immutable=1, for a folder where no index can be made, would keep showing the old file)
    with _stored() as (path, code):
        url = f"sqlite:///{path}"
        path.chmod(0o444)
        path.parent.chmod(0o777)
        with subprocess.Popen(
            [*_as_another_user(code), *command("readonly-twice", url, "b")],
            cwd=code,
            env={**os.environ, "PYTHONPATH": str(code)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        ) as reader:
            assert reader.stdin is not None and reader.stdout is not None
            seen = [json.loads(reader.stdout.readline())]
            # the file's owner (root may write too) adds, and is still open when the reader
            # looks again: its row is in the write-ahead log, not yet in the file
            owner = sa.create_engine(url)
            try:
                with SimStore(owner) as writer:
                    assert writer.add("a new text about mountains and lakes", key="b").inserted
                    reader.stdin.write("go\n")
                    reader.stdin.flush()
                    seen.append(json.loads(reader.stdout.readline()))
            finally:
                owner.dispose()
        assert reader.returncode == 0
    assert seen == [{"before": False}, {"after": True}]
