"""``add_many``'s batches planned ahead: fingerprints, normalised texts and signatures of the next
batches are computed in worker processes while the store decides and writes the current one.

Planning (``simstore.policy.batch.plan_items``) is pure computation on the batch's own items and is
most
of an ``add_many``'s time with text in; deciding and writing needs the batches in order and the
database. With ``workers`` processes (0: none) the two overlap. On Linux the workers are forked:
they never touch the inherited database connections (a worker ends with ``os._exit``, which closes
nothing of them), and unlike ``spawn`` a fork needs no importable ``__main__`` guard in the
caller's script. Elsewhere they are spawned (macOS's system libraries are not fork-safe).

Workers die with the process that started them: on Linux each asks the kernel for SIGKILL when
its parent ends (``prctl(PR_SET_PDEATHSIG)``), so a parent killed with -9 leaves no worker
blocked forever on the pool's pipe (the parent is the thread that forked them: iterate
``add_many`` from one thread, or from the thread that outlives the run).
"""

from __future__ import annotations

import ctypes
import functools
import multiprocessing
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

Batch = TypeVar("Batch")
Planned = TypeVar("Planned")


def planned_ahead(
    batches: Iterator[Batch | Exception],
    plan: Callable[[Batch], Planned],
    workers: int,
) -> Iterator[tuple[Batch | Exception, Callable[[], Planned]]]:
    """Each batch with a function that returns its plan (or raises what planning raised), in
    order. An ``Exception`` in ``batches`` (a malformed item) passes through in its turn, after
    the batches before it; nothing after it is read. ``workers == 0``: planned in this process,
    when asked. Otherwise up to ``workers`` batches are planned ahead of the one handed out."""
    if workers == 0:
        for batch in batches:
            yield (
                batch,
                _refused if isinstance(batch, Exception) else functools.partial(plan, batch),
            )
        return
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    context = multiprocessing.get_context(method)
    pool = ProcessPoolExecutor(
        workers, mp_context=context, initializer=_worker_started, initargs=(os.getpid(),)
    )
    pending: deque[tuple[Batch | Exception, Future[Planned] | None]] = deque()
    try:
        for batch in batches:
            job = None if isinstance(batch, Exception) else pool.submit(plan, batch)
            pending.append((batch, job))
            if len(pending) > workers:
                yield _handed_out(*pending.popleft())
        while pending:
            yield _handed_out(*pending.popleft())
    finally:  # the caller stopped or failed: plans not handed out are not needed
        pool.shutdown(wait=True, cancel_futures=True)


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _worker_started(parent: int) -> None:
    """Workers leave Ctrl-C (and, where they die with their parent, SIGTERM) to the caller's
    process, which stops reading and shuts them down (a terminal sends SIGINT to the whole
    process group, a service manager SIGTERM to the whole group)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if _die_with_parent():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.getppid() != parent:  # the parent ended before the request above was made
        os._exit(1)


def _die_with_parent() -> bool:
    """Ask Linux to SIGKILL this process when its parent ends; False where that is not known."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)) == 0
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return False


def _handed_out(
    batch: Batch | Exception, job: Future[Planned] | None
) -> tuple[Batch | Exception, Callable[[], Planned]]:
    return batch, _refused if job is None else job.result


def _refused() -> Any:
    raise AssertionError("a malformed batch has no plan")  # pragma: no cover - never asked
