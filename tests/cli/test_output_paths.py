"""Output paths cannot destroy data (issue 34, item 4): every file a command writes is refused
when it is the database (or its -wal/-shm), an input or another output, by name, symlink or hard
link, before anything is written; and it is replaced only whole, so a run that dies leaves an
existing file as it was. Real ``simstore`` subprocesses on real SQLite files."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_commands import Cli, records, write

pytestmark = pytest.mark.slow  # CLI subprocess runs

RECORDS = [
    '{"id": "a", "text": "the harbour ferry leaves every twenty minutes from the north pier"}',
    '{"id": "b", "text": "season tickets stay valid until the end of the month at the kiosk"}',
]


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path, f"sqlite:///{tmp_path / 'store.db'}")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def filled(cli: Cli) -> Cli:
    write(cli.folder / "in.jsonl", RECORDS)
    ran = cli("-q", "ingest", "in.jsonl")
    assert ran.returncode == 0, ran.stderr
    return cli


def link_to(folder: Path, target: str, how: str) -> str:
    """``target`` itself, or a new symlink or hard link to it."""
    if how == "name":
        return target
    name = f"{how}-to-{target}"
    if how == "symlink":
        (folder / name).symlink_to(target)
    else:
        os.link(folder / target, folder / name)
    return name


@pytest.mark.parametrize("how", ["name", "symlink", "hardlink"])
@pytest.mark.parametrize(
    "command",
    [
        ("report", "--out", "{}"),
        ("export", "--out", "{}"),
        ("dedup", "in.jsonl", "--out", "kept.jsonl", "--dups", "{}"),
        ("dedup", "in.jsonl", "--out", "{}"),
    ],
    ids=["report", "export", "dedup-dups", "dedup-out"],
)
def test_an_output_that_is_the_database_is_refused_and_the_store_survives(
    filled: Cli, command: tuple[str, ...], how: str
) -> None:
    database = filled.folder / "store.db"
    before = digest(database)
    target = link_to(filled.folder, "store.db", how)
    ran = filled(*(part.format(target) for part in command))
    assert ran.returncode == 4, ran.stderr
    assert ran.stderr.startswith("simstore: error:")
    assert "is the database file" in ran.stderr
    assert digest(database) == before
    assert not (filled.folder / "kept.jsonl").exists()  # nothing written, not even the others
    stats = filled.json("stats")
    assert stats["kept"] == 2


def test_the_write_ahead_log_and_shared_memory_files_are_the_database_too(filled: Cli) -> None:
    for suffix in ("-wal", "-shm"):
        ran = filled("dedup", "in.jsonl", "--out", f"store.db{suffix}")
        assert ran.returncode == 4, ran.stderr
        assert f"store.db{suffix}" in ran.stderr


@pytest.mark.parametrize("how", ["name", "symlink", "hardlink"])
def test_an_output_that_is_an_input_is_refused_and_the_input_survives(
    filled: Cli, how: str
) -> None:
    source = filled.folder / "in.jsonl"
    before = digest(source)
    target = link_to(filled.folder, "in.jsonl", how)
    for command in (
        ("dedup", "in.jsonl", "--out", target),
        ("dedup", "in.jsonl", "--out", "kept.jsonl", "--dups", target),
        ("report", "--texts", "in.jsonl", "--out", target),
    ):
        ran = filled(*command)
        assert ran.returncode == 4, (command, ran.stderr)
        assert ran.stderr.startswith("simstore: error:")
        assert "the same file as the input" in ran.stderr
        assert digest(source) == before
    assert not (filled.folder / "kept.jsonl").exists()


def test_two_outputs_that_are_one_file_are_refused(filled: Cli) -> None:
    (filled.folder / "alias.jsonl").symlink_to("kept.jsonl")
    for other in ("kept.jsonl", "./kept.jsonl", "alias.jsonl"):
        ran = filled("dedup", "in.jsonl", "--out", "kept.jsonl", "--dups", other)
        assert ran.returncode == 4, ran.stderr
        assert "are the same file" in ran.stderr
    assert not (filled.folder / "kept.jsonl").exists()


def test_spark_dedup_checks_its_outputs_before_spark_starts(filled: Cli) -> None:
    for command in (
        ("spark", "dedup", "in.jsonl", "--out", "store.db"),
        ("spark", "dedup", "in.jsonl", "--out", "in.jsonl"),
        ("spark", "dedup", "in.jsonl", "--out", "o", "--handover", "o"),
    ):
        ran = filled(*command)
        assert ran.returncode == 4, (command, ran.stderr)
        assert ran.stderr.startswith("simstore: error:")


def test_outputs_through_a_symlink_replace_its_target_and_keep_its_mode(filled: Cli) -> None:
    folder = filled.folder
    target = folder / "kept.jsonl"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(0o640)
    (folder / "alias.jsonl").symlink_to("kept.jsonl")
    ran = filled("-q", "dedup", "in.jsonl", "--out", "alias.jsonl", "--dups", "/dev/null")
    assert ran.returncode == 0, ran.stderr
    assert (folder / "alias.jsonl").is_symlink()
    assert [record["id"] for record in records(target)] == ["a", "b"]
    assert target.stat().st_mode & 0o777 == 0o640
    assert not [path.name for path in folder.iterdir() if path.name.endswith(".tmp")]
    exported = filled("export", "--out", "alias.jsonl")
    assert exported.returncode == 0, exported.stderr
    assert len(records(target)) == 2


def committed(database: Path) -> int:
    with contextlib.closing(sqlite3.connect(database)) as connection:
        try:
            row = connection.execute("SELECT count(*) FROM simstore_fingerprints").fetchone()
        except sqlite3.OperationalError:  # not made yet
            return 0
    return int(row[0])


def test_a_run_killed_half_way_leaves_an_existing_output_as_it_was(cli: Cli) -> None:
    """dedup reading stdin is killed (-9) after its first record was committed and written:
    the --out and --dups it was given still hold what they held before the run."""
    out, dups = cli.folder / "kept.jsonl", cli.folder / "dups.jsonl"
    out.write_text('{"id": "earlier", "text": "kept by an earlier run"}\n', encoding="utf-8")
    dups.write_text('{"id": "earlier-dup"}\n', encoding="utf-8")
    before = digest(out), digest(dups)
    command = [sys.executable, "-m", "simstore.cli", "--db", cli.url, "-q", "dedup", "-"]
    command += ["--format", "jsonl", "--batch-size", "1", "--out", "kept.jsonl", "--dups"]
    command += ["dups.jsonl"]
    with subprocess.Popen(command, cwd=cli.folder, stdin=subprocess.PIPE, text=True) as process:
        assert process.stdin is not None
        process.stdin.write(RECORDS[0] + "\n")
        process.stdin.flush()
        while process.poll() is None and committed(cli.folder / "store.db") == 0:
            time.sleep(0.02)  # a condition, not a deadline: the first record is committed
        assert process.poll() is None, "dedup ended before it was killed"
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stdin.close()
    assert (digest(out), digest(dups)) == before
