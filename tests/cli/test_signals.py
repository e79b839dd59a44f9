"""The ``simstore`` command stopped from outside: Ctrl-C mid-ingest, a closed pipe, JSON errors."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_commands import Cli, write
from tests.cli.test_commands import cli as cli
from tests.conftest import HANG

pytestmark = pytest.mark.slow  # signals sent into CLI subprocesses mid-run

# 40 batches of 500: Ctrl-C is sent as soon as the first is seen committed, so it lands mid-run
# however slow the machine (the interrupted run's pace is what decides, not a clock)
RECORDS = 20_000


def big_feed(path: Path, count: int = RECORDS) -> Path:
    """``count`` distinct records with keys (a few words each, so most are kept)."""
    words = ["harbour", "ferry", "library", "market", "garden", "station", "bridge", "tower"]
    lines = [
        json.dumps({"id": f"r{n}", "text": f"record {n} {words[n % 8]} {n * 7919 % 100_003}"})
        for n in range(count)
    ]
    return write(path, lines)


def _start(cli: Cli, *args: str, stdin: bool = False) -> subprocess.Popen[str]:
    environment = {k: v for k, v in os.environ.items() if k != "SIMSTORE_URL"}
    return subprocess.Popen(
        [sys.executable, "-m", "simstore.cli", "--db", cli.url, *args],
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        cwd=cli.folder,
        env=environment,
    )


def _decisions(cli: Cli) -> int:
    """Records committed: the kept rows (each its decision's record) and the logged decisions."""
    try:
        with contextlib.closing(sqlite3.connect(cli.folder / "store.db", timeout=30)) as db:
            return int(
                db.execute(
                    "SELECT (SELECT COUNT(*) FROM simstore_decisions) + "
                    "(SELECT COUNT(*) FROM simstore_fingerprints)"
                ).fetchone()[0]
            )
    except sqlite3.OperationalError:  # not made yet
        return 0


def test_ctrl_c_mid_ingest_exits_130_and_says_what_was_committed(cli: Cli) -> None:
    feed = big_feed(cli.folder / "big.jsonl")
    run = _start(cli, "--json", "ingest", "--batch-size", "500", str(feed))
    deadline = time.monotonic() + HANG
    while _decisions(cli) == 0 and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.05)  # until the first batch is committed
    assert run.poll() is None, "the ingest ended before it could be interrupted"
    run.send_signal(signal.SIGINT)
    stdout, stderr = run.communicate(timeout=HANG)
    assert run.returncode == 130, stderr
    summary = json.loads(stdout)
    stored = _decisions(cli)
    assert summary["interrupted"] is True
    assert 0 < summary["committed"] == stored < RECORDS
    assert summary["read"] == stored  # every record read was committed, nothing half-written
    assert f"interrupted: {stored:,} records committed" in stderr
    assert "Traceback" not in stderr and "Aborted" not in stderr

    again = cli.json("ingest", "--batch-size", "5000", str(feed))  # goes on where it stopped
    assert (again["replayed"], again["read"]) == (stored, RECORDS)
    assert _decisions(cli) == RECORDS


def test_ctrl_c_while_waiting_on_stdin_ends_the_input_there(cli: Cli) -> None:
    run = _start(cli, "ingest", "--format", "lines", "--batch-size", "1", "-", stdin=True)
    assert run.stdin is not None
    run.stdin.write("a first line, added while the feed stays open\n")
    run.stdin.flush()
    deadline = time.monotonic() + HANG
    while _decisions(cli) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)  # committed: the ingest now waits for the next line
    run.send_signal(signal.SIGINT)
    stdout, stderr = run.communicate(timeout=HANG)
    assert run.returncode == 130, stderr
    assert "interrupted: 1 record committed" in stderr
    assert re.search(r"^records read\s+1$", stdout, re.M)


def test_a_closed_pipe_ends_dedup_quietly_with_141(cli: Cli) -> None:
    feed = big_feed(cli.folder / "big.jsonl", 20_000)
    run = _start(cli, "dedup", str(feed), "--out", "-")
    assert run.stdout is not None and run.stderr is not None
    first = run.stdout.readline()  # like `| head -1`: read a line, then close the pipe
    assert json.loads(first)["id"] == "r0"
    run.stdout.close()
    stderr = run.stderr.read()
    assert run.wait(timeout=HANG) == 141, stderr
    assert stderr == ""  # no error line, no "Exception ignored ... BrokenPipeError"


def test_json_errors_are_a_document_on_stdout_and_skipped_records_are_listed(cli: Cli) -> None:
    bad = write(cli.folder / "bad.jsonl", ['{"id": "a", "text": "a text"}', "{oops", '{"id": "b"}'])
    result = cli("--json", "ingest", bad.name)
    assert result.returncode == 1
    summary = json.loads(result.stdout)  # one document: the summary, with the skipped records
    assert [(r["where"], r["key"]) for r in summary["skipped_records"]] == [
        ("bad.jsonl:2", None),
        ("bad.jsonl:3", None),
    ]
    assert "no 'text' field" in summary["skipped_records"][1]["reason"]

    missing = cli("--json", "show", "nope")
    assert missing.returncode == 1
    assert json.loads(missing.stdout) == {
        "error": missing.stderr.removeprefix("simstore: error: ").strip(),
        "exit_code": 1,
    }
    usage = cli("--json", "query")  # a usage error: exit 2, as JSON too
    assert usage.returncode == 2
    assert json.loads(usage.stdout)["exit_code"] == 2
    bad_input = cli("--json", "--keep", "soon", "purge")
    assert bad_input.returncode == 4 and json.loads(bad_input.stdout)["exit_code"] == 4
