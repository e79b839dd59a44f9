"""The progress display of ``ingest``: a bar with total, rate and time left on a terminal only."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time

from tests.cli.test_commands import Cli
from tests.cli.test_commands import cli as cli  # the fixture
from tests.cli.test_signals import big_feed
from tests.conftest import HANG


def _on_a_terminal(cli: Cli, *args: str) -> tuple[int, str]:
    """Run the CLI with stderr on a pseudo-terminal; its exit code and what the terminal got."""
    controller, terminal = pty.openpty()
    environment = {k: v for k, v in os.environ.items() if k != "SIMSTORE_URL"}
    environment.update(TERM="xterm-256color", COLUMNS="160")
    run = subprocess.Popen(
        [sys.executable, "-m", "simstore.cli", "--db", cli.url, *args],
        stdout=subprocess.DEVNULL,
        stderr=terminal,
        stdin=subprocess.DEVNULL,
        cwd=cli.folder,
        env=environment,
    )
    os.close(terminal)
    shown = bytearray()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(controller)
    return run.wait(timeout=HANG), shown.decode("utf-8", "replace")


def test_a_file_shows_a_bar_with_total_rate_and_eta_on_a_terminal_only(cli: Cli) -> None:
    feed = big_feed(cli.folder / "feed.jsonl", 6_000)
    code, shown = _on_a_terminal(cli, "ingest", "--batch-size", "200", str(feed))
    assert code == 0, shown
    assert "━" in shown and "%" in shown  # the bar and how much of the file is read
    assert "records, " in shown and "/s" in shown and "ETA" in shown

    piped = cli("ingest", str(feed))  # stderr is a pipe, not a terminal: no display at all
    assert piped.returncode == 0 and piped.stderr == ""
    quiet_code, quiet = _on_a_terminal(cli, "--quiet", "ingest", str(feed))
    assert quiet_code == 0 and "━" not in quiet and "ETA" not in quiet
