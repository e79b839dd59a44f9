"""A store dropped without ``close()`` releases everything; an idle one costs nothing.

Counts, not clocks: threads (``threading.active_count``), open file descriptors
(``/proc/self/fd``) and the checkpoint thread's context switches (``/proc/self/task``).
"""

from __future__ import annotations

import gc
import linecache
import os
import sys
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from simstore.errors import PresetMismatch
from simstore.store import SimStore

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux /proc")

TEXT = "the quarterly report shows revenue growth in every region except the north east {}"


def open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def use(store: SimStore, n: int) -> None:
    """An add and a query in this thread, and another add from a short-lived thread."""
    store.add(TEXT.format(n), key=f"main-{n}")
    store.query(TEXT.format(n))
    worker = threading.Thread(target=lambda: store.add(TEXT.format(-n), key=f"thread-{n}"))
    worker.start()
    worker.join()


@pytest.fixture
def no_collector() -> Iterator[None]:
    """Reference counting alone must free a dropped store (no cycle may keep it alive)."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_stores_dropped_without_close_leave_no_thread_and_no_file_open(
    tmp_path: Path, no_collector: None
) -> None:
    shared = f"sqlite:///{tmp_path / 'shared.db'}"
    SimStore(shared).close()  # imports and one-time caches before the baseline
    threads, files = threading.active_count(), open_files()
    for n in range(60):
        url = shared if n % 3 else f"sqlite:///{tmp_path / f'own-{n}.db'}"
        store = SimStore(url)
        use(store, n)
        alive = weakref.ref(store)
        del store
        assert alive() is None, "a reference cycle keeps a dropped store alive"
        assert (threading.active_count(), open_files()) == (threads, files), f"store {n}"
    kept = SimStore(shared)
    assert kept.stats().decisions == 40 * 2  # every add of the dropped stores is there
    kept.close()


def test_stores_of_one_file_share_one_checkpoint_thread(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'one.db'}"
    threads = threading.active_count()
    stores = [SimStore(url) for _ in range(20)]
    for n, store in enumerate(stores):
        store.add(TEXT.format(n), key=str(n))
    assert threading.active_count() == threads + 1
    for store in stores[:-1]:
        store.close()
    assert threading.active_count() == threads + 1  # the last store still uses it
    stores[-1].close()
    assert threading.active_count() == threads


def test_a_store_whose_open_fails_releases_what_it_took(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'mismatch.db'}"
    SimStore(url, preset="pypi-simhash").close()
    threads, files = threading.active_count(), open_files()
    for _ in range(5):
        with pytest.raises(PresetMismatch):
            SimStore(url, preset="default")
    assert (threading.active_count(), open_files()) == (threads, files)


def _switches(native_id: int) -> int:
    status = Path(f"/proc/self/task/{native_id}/status").read_text()
    return sum(int(line.split()[1]) for line in status.splitlines() if "ctxt_switches" in line)


def _waiting_for_a_commit(thread: threading.Thread) -> bool:
    """Whether the checkpoint thread is blocked in the wait that only a commit ends (not its
    pause between two looks at the log): read off its stack, not guessed from a clock."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None and frame.f_code.co_name != "_run":
        frame = frame.f_back
    if frame is None:
        return False
    return "_wake.wait()" in linecache.getline(frame.f_code.co_filename, frame.f_lineno)


def _until(condition: Callable[[], bool], what: str, deadline: float = 60.0) -> None:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < deadline, what
        time.sleep(0.01)


def test_an_idle_store_wakes_no_thread(tmp_path: Path) -> None:
    before_open = set(threading.enumerate())
    store = SimStore(f"sqlite:///{tmp_path / 'idle.db'}")
    store.add(TEXT.format(1), key="1")
    (checkpointer,) = set(threading.enumerate()) - before_open
    native = checkpointer.native_id
    assert native is not None
    _until(lambda: _waiting_for_a_commit(checkpointer), "the thread never went back to sleep")
    before = _switches(native)
    time.sleep(0.5)  # a window to be seen in: a thread polling every 100 ms would run ~5 times
    assert _switches(native) == before
    store.add(TEXT.format(2), key="2")  # a commit wakes it again
    _until(lambda: _switches(native) != before, "a commit did not wake it")
    store.close()


def test_server_stores_dropped_without_close_leave_no_connection_open(
    server_url: str, no_collector: None
) -> None:
    # a namespace of its own: the server's test database is shared by this worker's tests
    namespace = f"release-{uuid.uuid4().hex[:8]}"
    SimStore(server_url, namespace=namespace).close()  # imports, caches and the namespace first
    threads, files = threading.active_count(), open_files()
    for n in range(15):
        store = SimStore(server_url, namespace=namespace)
        use(store, n)  # its writer engine and its autocommit reader each hold a connection
        alive = weakref.ref(store)
        del store
        assert alive() is None, "a reference cycle keeps a dropped store alive"
        assert (threading.active_count(), open_files()) == (threads, files), f"store {n}"
