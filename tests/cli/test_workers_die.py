"""``ingest --workers N`` stopped from outside leaves no worker behind: killed with -9, the
workers die with it (they were left blocked forever on the pool's pipe, ~66 MB each); SIGTERM is
a Ctrl-C with exit 143 that says what was committed. Waits are counts of polls, not times."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_commands import Cli
from tests.cli.test_commands import cli as cli
from tests.cli.test_signals import _decisions, _start, big_feed

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

POLLS = 6_000  # of 0.05 s: a generous bound on a loaded machine, never a time asserted


def children(parent: int) -> set[int]:
    """The live (not zombie) processes whose parent is ``parent``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == parent and fields[0] != "Z":
                    found.add(int(entry.name))
    return found


def alive(pids: set[int]) -> set[int]:
    living = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            if (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                living.add(pid)
    return living


def _running_with_workers(cli: Cli, feed: Path) -> tuple[subprocess.Popen[str], set[int]]:
    run = _start(cli, "--json", "ingest", "--workers", "2", "--batch-size", "500", str(feed))
    workers: set[int] = set()
    for _ in range(POLLS):  # until both workers run and a batch is committed
        workers = children(run.pid)
        if run.poll() is not None or (len(workers) >= 2 and _decisions(cli) > 0):
            break
        time.sleep(0.05)
    assert run.poll() is None, "the ingest ended before it could be stopped"
    assert len(workers) >= 2, workers
    return run, workers


def _gone(workers: set[int]) -> set[int]:
    """The workers still alive after polling for them to end (killed if any are left)."""
    for _ in range(POLLS // 10):
        if not alive(workers):
            return set()
        time.sleep(0.05)
    left = alive(workers)
    for pid in left:  # ours: do not leave them to the machine
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return left


def test_kill_9_of_ingest_leaves_no_worker(cli: Cli) -> None:
    feed = big_feed(cli.folder / "big.jsonl")
    for _round in range(2):
        run, workers = _running_with_workers(cli, feed)
        run.kill()
        run.wait()  # not communicate(): a surviving worker would hold stdout open
        left = _gone(workers)
        for pipe in (run.stdout, run.stderr):
            assert pipe is not None
            pipe.close()
        assert left == set(), "workers outlived their parent's kill -9"


def test_sigterm_of_ingest_says_what_was_committed_and_leaves_no_worker(cli: Cli) -> None:
    feed = big_feed(cli.folder / "big.jsonl")
    run, workers = _running_with_workers(cli, feed)
    run.send_signal(signal.SIGTERM)
    stdout, stderr = run.communicate()
    assert run.returncode == 143, stderr
    stored = _decisions(cli)
    summary = json.loads(stdout)
    assert summary["interrupted"] is True and 0 < summary["committed"] == stored
    assert f"terminated: {stored:,} records committed" in stderr
    assert "Traceback" not in stderr
    assert _gone(workers) == set()
