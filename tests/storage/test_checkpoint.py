"""The write-ahead log of a SQLite file is checkpointed off the commits, and stays bounded.

SQLite checkpoints inside the commit that takes its log past 1,000 pages; simstore's thread
(``simstore.storage._checkpoint``) does it instead once the log passes ``LOG_BYTES``, and the
stores' connections only past ``SAFETY_PAGES``. The tests lower both thresholds, so that a few
seconds of writes cross them: what is tested is that each is acted on, not its value.

Pages reach the database file only by a checkpoint while a store is open (closing the last
connection checkpoints too), so the file growing is the thread's work. No fixed sleeps: each wait
is for a condition, under a deadline far above what a loaded machine needs.
"""

from __future__ import annotations

import multiprocessing
import random
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

import pytest
import sqlalchemy as sa

from simstore.storage._checkpoint import Checkpointer
from simstore.store import SimStore
from tests._workers import random_text

# a hang guard, not a speed check: long enough to hold on a loaded machine (60 s failed once
# beside a mutation run at load 10), where each wait below takes well under a second when quiet
DEADLINE = 300.0  # seconds


def _pragma(store: SimStore, name: str) -> int:
    raw = store.engine.raw_connection()
    try:
        return int(raw.cursor().execute(f"PRAGMA {name}").fetchone()[0])
    finally:
        raw.close()


def _burst(store: SimStore, first: int, count: int) -> None:
    rng = random.Random(first)  # distinct texts: every add keeps a row and its band keys
    items = ((f"k{n}", random_text(rng, 60)) for n in range(first, first + count))
    for _decision in store.add_many(items, batch_size=100):
        pass


def _wait_until_the_file_grows(path: Path, size: int, failure: str) -> None:
    """Until a checkpoint copies pages into the database file (its size was ``size``)."""
    started = time.monotonic()
    while path.stat().st_size == size:
        assert time.monotonic() - started < DEADLINE, failure
        time.sleep(0.02)


def test_the_thread_copies_the_log_into_the_file_once_it_passes_its_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Checkpointer, "LOG_BYTES", 256 << 10)
    path = tmp_path / "wal.db"
    store = SimStore(f"sqlite:///{path}")
    try:
        # the commits leave the log to the thread up to SAFETY_PAGES
        assert _pragma(store, "wal_autocheckpoint") == Checkpointer.SAFETY_PAGES
        # a log begun again after a whole checkpoint is cut back to SAFETY_PAGES pages
        pages = Checkpointer.SAFETY_PAGES * _pragma(store, "page_size")
        assert _pragma(store, "journal_size_limit") == pages
        assert any(t.name == "simstore-checkpoint" for t in threading.enumerate())
        size = path.stat().st_size
        _burst(store, 0, 300)  # ~1 MiB of log: past the thread's threshold
        assert Path(f"{path}-wal").stat().st_size > Checkpointer.LOG_BYTES
        _wait_until_the_file_grows(path, size, "the checkpoint thread never copied the log")
    finally:
        store.close()


def _checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "simstore-checkpoint"]


def test_the_stores_of_one_file_share_one_thread_which_ends_with_the_last(
    tmp_path: Path,
) -> None:
    before = _checkpoint_threads()
    first = SimStore(f"sqlite:///{tmp_path / 'one.db'}")
    second = SimStore(f"sqlite:///{tmp_path / 'one.db'}")
    other = SimStore(f"sqlite:///{tmp_path / 'other.db'}")
    errors: list[threading.ExceptHookArgs] = []
    hook, threading.excepthook = threading.excepthook, errors.append
    try:
        threads = [t for t in _checkpoint_threads() if t not in before]
        assert len(threads) == 2  # one a file, not one a store
        first.add("a text the first store keeps", key="a")
        first.close()
        assert all(t.is_alive() for t in threads)  # the second store still uses the file
        second.add("another text kept through the second store", key="b")
        second.close()
        # closed with the last store of its file, before close returns
        assert [t.is_alive() for t in threads].count(False) == 1
        other.close()
        assert not any(t.is_alive() for t in threads)
    finally:
        threading.excepthook = hook
        for store in (first, second, other):
            store.close()
    assert errors == []  # the threads ended without an error


def test_the_log_of_a_bursts_last_commit_is_checkpointed_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one commit that takes the log past the threshold, then no other: the commit wakes the
    # thread as it begins, so the look it causes comes before the frames it writes, and the
    # thread must look again after it (it waited for a next commit that never came)
    monkeypatch.setattr(Checkpointer, "LOG_BYTES", 256 << 10)
    path = tmp_path / "burst.db"
    with SimStore(f"sqlite:///{path}") as store:
        size = path.stat().st_size
        rng = random.Random(1)
        items = [(f"k{n}", random_text(rng, 60)) for n in range(300)]
        for _decision in store.add_many(items, batch_size=300):
            pass
        _wait_until_the_file_grows(path, size, "the last commit's log was never checkpointed")


def test_a_file_opened_again_after_its_last_store_closed_gets_a_thread_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Checkpointer, "LOG_BYTES", 256 << 10)
    path = tmp_path / "again.db"
    running = Checkpointer.running()  # (other tests' stores of this process: not counted)
    SimStore(f"sqlite:///{path}").close()
    assert Checkpointer.running() == running
    before = _checkpoint_threads()
    store = SimStore(f"sqlite:///{path}")
    try:
        assert Checkpointer.running() == running + 1
        assert len([t for t in _checkpoint_threads() if t not in before]) == 1
        size = path.stat().st_size
        _burst(store, 0, 300)  # past the thread's threshold: the new thread copies the log
        _wait_until_the_file_grows(path, size, "the file opened again was never checkpointed")
    finally:
        store.close()
    assert Checkpointer.running() == running


def test_only_files_of_simstores_own_engines_get_a_thread(tmp_path: Path) -> None:
    # in memory there is no log to checkpoint; a SQLite URI names no plain path; a caller's
    # engine keeps SQLite's own checkpoints
    running = Checkpointer.running()
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'callers.db'}")
    stores = []
    try:
        for bind in ("sqlite://", "sqlite:///:memory:", engine):
            stores.append(SimStore(bind))
        stores.append(SimStore(f"sqlite:///file:{tmp_path / 'uri.db'}?uri=true"))
        assert Checkpointer.running() == running
    finally:
        for store in stores:
            store.close()
        engine.dispose()


def _in_forked_child(url: str, sender: Connection) -> None:
    try:
        with SimStore(url) as store:
            store.add("a text the forked child keeps", key="child")
            sender.send(("ok", len(_checkpoint_threads()), Checkpointer.running()))
    except Exception as error:  # the parent shows it
        sender.send(("error", repr(error), 0))


def test_a_forked_child_checkpoints_with_a_thread_of_its_own(tmp_path: Path) -> None:
    # a child forked while the parent's store is open (a pre-forking server) has none of the
    # parent's threads: a store it opens on the same file must start one, not count on the
    # parent's
    url = f"sqlite:///{tmp_path / 'forked.db'}"
    context = multiprocessing.get_context("fork")
    with SimStore(url) as store:
        store.add("a text the parent keeps", key="parent")
        receiver, sender = context.Pipe(duplex=False)
        child = context.Process(target=_in_forked_child, args=(url, sender))
        child.start()
        try:
            assert receiver.poll(DEADLINE), "the forked child never answered"
            assert receiver.recv() == ("ok", 1, 1)
        finally:
            child.join(DEADLINE)
            receiver.close()
            sender.close()
        assert child.exitcode == 0
        assert store.stats().kept == 2


def test_a_program_that_never_closes_its_store_still_exits(tmp_path: Path) -> None:
    # the thread must not keep the interpreter alive at exit
    script = (
        "import sys\n"
        "from simstore import SimStore\n"
        "store = SimStore(sys.argv[1])\n"
        "store.add('a text kept by a store that is never closed', key='a')\n"
        "print('added', flush=True)\n"
    )
    url = f"sqlite:///{tmp_path / 'open.db'}"
    with subprocess.Popen(
        [sys.executable, "-c", script, url], stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "added"
        try:
            code = child.wait(timeout=DEADLINE)  # a hang waits forever; exiting takes ~0.1 s
        except subprocess.TimeoutExpired:
            child.kill()
            raise AssertionError("the program did not exit with its store still open") from None
    assert code == 0
    with SimStore(url) as store:
        assert store.stats().kept == 1


@pytest.mark.slow
@pytest.mark.soak
def test_under_sustained_writes_the_commits_keep_the_log_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the commits checkpoint past SAFETY_PAGES; the log file keeps its largest size, which may
    # pass SAFETY_PAGES by what is written while a checkpoint cannot finish (the thread's own
    # holds the checkpoint lock): three times SAFETY_PAGES holds that, and the writes below
    # would take an unchecked log to five times it
    monkeypatch.setattr(Checkpointer, "LOG_BYTES", 256 << 10)
    monkeypatch.setattr(Checkpointer, "SAFETY_PAGES", 1_000)
    path = tmp_path / "wal.db"
    store = SimStore(f"sqlite:///{path}")
    try:
        assert _pragma(store, "wal_autocheckpoint") == 1_000
        bound = 3 * Checkpointer.SAFETY_PAGES * _pragma(store, "page_size")
        size = path.stat().st_size
        _burst(store, 0, 1_000)
        _wait_until_the_file_grows(path, size, "the checkpoint thread never ran")
        # ~3.2 KiB of log an add (measured with both checkpoints off): 5 x the bound in all
        adds = 5 * bound // 3_200
        _burst(store, 1_000, adds)
        assert Path(f"{path}-wal").stat().st_size < bound
        assert store.stats().kept == 1_000 + adds
    finally:
        store.close()
