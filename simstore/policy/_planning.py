"""``add_many``'s batches planned ahead: fingerprints, normalised texts and signatures of the next
batches are computed in worker processes while the store decides and writes the current one.

Planning (``simstore.policy.batch.plan_items``) is pure computation on the batch's own items and is
most
of an ``add_many``'s time with text in; deciding and writing needs the batches in order and the
database. With ``workers`` processes (0: none) the two overlap. On Linux the workers are forked:
they never touch the inherited database connections (a worker ends with ``os._exit``, which closes
nothing of them), and unlike ``spawn`` a fork needs no importable ``__main__`` guard in the
caller's script. Elsewhere they are spawned (macOS's system libraries are not fork-safe).
"""

from __future__ import annotations

import functools
import multiprocessing
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
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_ignore_interrupts)
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


def _ignore_interrupts() -> None:
    """Workers leave Ctrl-C to the caller's process, which stops reading and shuts them down
    (a terminal sends SIGINT to the whole process group)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _handed_out(
    batch: Batch | Exception, job: Future[Planned] | None
) -> tuple[Batch | Exception, Callable[[], Planned]]:
    return batch, _refused if job is None else job.result


def _refused() -> Any:
    raise AssertionError("a malformed batch has no plan")  # pragma: no cover - never asked
