"""The progress display of ``simstore spark dedup`` on a terminal.

Spark knows how many tasks each running stage has and how many are done, not how long a whole
run will take: the display shows the command's phase, the active stage with its tasks, and the
time left in that stage at the rate its tasks have finished so far. A thread of its own reads
Spark's status tracker four times a second; it ends with the ``shown`` block that started it.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

POLL_SECONDS = 0.25


class SparkProgress:
    """A one-line display on stderr: phase, stage, tasks and time left in the stage."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self._phase = ""
        self._seen: dict[int, tuple[float, int]] = {}  # stage id -> (first seen, tasks done)

    def phase(self, text: str) -> None:
        """What the command does now (reading, deciding, writing an output)."""
        self._phase = text

    @contextlib.contextmanager
    def shown(self, session: SparkSession) -> Iterator[None]:
        """The display, for the duration of the block (nothing when not enabled)."""
        if not self.enabled:
            yield
            return
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        task = progress.add_task(self.line(None))
        stop = threading.Event()
        tracker = session.sparkContext.statusTracker()

        def poll() -> None:
            while not stop.wait(POLL_SECONDS):
                progress.update(task, description=self.line(tracker))

        watcher = threading.Thread(target=poll, name="simstore-spark-progress", daemon=True)
        with progress:
            watcher.start()
            try:
                yield
            finally:
                stop.set()
                watcher.join()

    def line(self, tracker: Any) -> str:
        """The phase, and the active stage's tasks with the time left in it when known."""
        if tracker is None:
            return self._phase
        parts = [self._phase]
        for stage_id in sorted(tracker.getActiveStageIds())[-1:]:
            info = tracker.getStageInfo(stage_id)
            if info is None:
                continue
            done, total = info.numCompletedTasks, info.numTasks
            now = time.monotonic()
            first, _before = self._seen.setdefault(stage_id, (now, done))
            self._seen[stage_id] = (first, done)
            text = f"Spark stage {stage_id}: {done:,}/{total:,} tasks"
            if 0 < done < total and now > first:
                left = (total - done) * (now - first) / done
                text += f", about {left:,.0f} s left in it"
            parts.append(text)
        return " · ".join(part for part in parts if part)
