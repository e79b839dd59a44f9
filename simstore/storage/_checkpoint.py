"""Checkpointing a SQLite file's write-ahead log off the commits: a thread per file, not per store.

SQLite checkpoints inside the commit that takes the log past 1,000 pages, syncing the log and the
file there: every ~35th add of a text waited ~10 ms for it (the add p99; seen with strace). Here a
PASSIVE checkpoint (it waits for no reader or writer) runs in a thread of its own whenever the log
has grown past ``LOG_BYTES``, and the stores' connections checkpoint in their commit only past
``SAFETY_PAGES``: under writes too sustained for a background checkpoint to catch up (it backfills
only the frames that were there when it began), the log still stays bounded. A log begun again
from its start after a whole checkpoint is truncated to ``SAFETY_PAGES`` (``journal_size_limit``):
without it the file kept the size of its largest moment (191 MiB after 60,000 adds).

Every store of this process on one file shares that file's thread (counted by ``attach``); it ends
with the last store's ``detach``. It sleeps until a commit of one of those stores wakes it, then
looks at the log at most once per ``PACE_S`` while commits go on, and a few times more, less and
less often, after the last (``TRAILING_S``: a commit wakes it as it begins, so the last one of a
burst ends after the look it caused); then it sleeps again: an idle store costs nothing.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy import event
from sqlalchemy.engine import Engine


class Checkpointer:
    """The checkpoint thread of one database file, shared by the stores that use it."""

    PACE_S = 0.1  # under sustained commits: one look at the log per this many seconds
    # after the last commit's wake, looks again at PACE_S, twice that, ... up to this: a commit
    # wakes the thread as it begins, and a look made while it runs misses what it writes
    TRAILING_S = 6.4
    LOG_BYTES = 4 << 20  # SQLite's own threshold: 1,000 pages of 4 KiB
    SAFETY_PAGES = 10_000

    # reentrant: a garbage collection inside ``attach`` may finalize a dropped store, whose
    # ``detach`` then runs in the same thread
    _guard: ClassVar[threading.RLock] = threading.RLock()
    _running: ClassVar[dict[str, Checkpointer]] = {}  # real path -> its checkpointer

    def __init__(self, path: str) -> None:
        self._path = path
        self._log = Path(path + "-wal")
        self._users = 0
        self._wake = threading.Event()  # set by commits (and by stop)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="simstore-checkpoint", daemon=True)
        self._thread.start()

    @classmethod
    def attach(cls, engine: Engine, path: str) -> Callable[[], None]:
        """Share ``path``'s checkpointer with ``engine``'s commits; returns the detach to call once
        (the last detach of a file stops its thread)."""
        key = os.path.realpath(path)
        with cls._guard:
            shared = cls._running.get(key)
            if shared is None:
                shared = cls._running[key] = cls(key)
            shared._users += 1
        wake = shared._wake

        def nudge(_conn: Any) -> None:
            wake.set()

        event.listen(engine, "connect", cls._later_automatic_checkpoint)
        event.listen(engine, "commit", nudge)

        def detach() -> None:
            with contextlib.suppress(Exception):  # the engine may be half torn down already
                event.remove(engine, "commit", nudge)
            shared._release(key)

        return detach

    @classmethod
    def running(cls) -> int:
        """How many files have a checkpoint thread in this process (for tests and diagnostics)."""
        with cls._guard:
            return len(cls._running)

    @classmethod
    def _later_automatic_checkpoint(cls, dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA wal_autocheckpoint={cls.SAFETY_PAGES}")
            # a log that is reset (begun again from its start after a whole checkpoint) keeps
            # the size of its largest moment unless it is truncated: this truncates it
            cursor.execute(f"PRAGMA journal_size_limit={cls.SAFETY_PAGES * 4096}")
        finally:
            cursor.close()

    def _release(self, key: str) -> None:
        with self._guard:
            self._users -= 1
            if self._users > 0:
                return
            if self._running.get(key) is self:
                del self._running[key]
        self._stopping.set()
        self._wake.set()
        # a store collected by a garbage collection that runs in this very thread cannot wait
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        connection: sqlite3.Connection | None = None
        try:
            while True:
                self._wake.wait()
                if self._stopping.is_set():
                    return
                self._wake.clear()
                connection = self._checkpoint(connection)
                if self._stopping.wait(self.PACE_S):
                    return
                delay = self.PACE_S
                while delay <= self.TRAILING_S and not self._wake.wait(delay):
                    connection = self._checkpoint(connection)
                    delay *= 2
        finally:
            if connection is not None:
                connection.close()

    def _checkpoint(self, connection: sqlite3.Connection | None) -> sqlite3.Connection | None:
        """A PASSIVE checkpoint when the log is past ``LOG_BYTES``; the connection to keep."""
        try:
            if self._log.stat().st_size < self.LOG_BYTES:
                return connection
            if connection is None:
                connection = sqlite3.connect(self._path, timeout=0, check_same_thread=False)
            # fetched, so that no statement of this connection pins the log
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except (OSError, sqlite3.Error):
            pass  # no log yet, or busy: the next commit wakes us again
        return connection


def _forget_in_child() -> None:
    """A forked child has none of its parent's threads: its stores start their own."""
    Checkpointer._guard = threading.RLock()
    Checkpointer._running = {}


os.register_at_fork(after_in_child=_forget_in_child)
