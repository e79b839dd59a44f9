"""The store's input made into items: an ``add``'s or ``query``'s arguments, ``add_many``'s
items read in batches (``read_batches``) and planned (``plan_batch``), the next batches planned
ahead in worker processes while the store decides and writes the current one
(``planned_ahead``).

Planning (``simstore.policy.batch.plan_items``: fingerprint, the policy's preparation, signature)
is pure computation on the batch's own items and is most of an ``add_many``'s time with text in;
deciding and writing needs the batches in order and the database. With ``workers`` processes (0:
none) the two overlap. On Linux the workers are forked: they never touch the inherited database
connections (a worker ends with ``os._exit``, which closes nothing of them), and unlike ``spawn``
a fork needs no importable ``__main__`` guard in the caller's script. Elsewhere they are spawned
(macOS's system libraries are not fork-safe).

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
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from simstore.errors import BatchFailed, InvalidInput, InvalidType, SimstoreError
from simstore.policy.batch import plan_items
from simstore.policy.policies import Item, Policy
from simstore.text.presets import Preset
from simstore.validate import MAX_TEXT_LENGTH, check_radius

Batch = TypeVar("Batch")
Planned = TypeVar("Planned")


def planned_ahead(
    batches: Iterator[Batch | Exception],
    plan: Callable[[Batch], Planned],
    workers: int,
) -> Generator[tuple[Batch | Exception, Callable[[], Planned]], None, None]:
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
    owner = threading.get_ident()
    try:
        for batch in batches:
            job = None if isinstance(batch, Exception) else pool.submit(plan, batch)
            pending.append((batch, job))
            if len(pending) > workers:
                yield _handed_out(*pending.popleft())
        while pending:
            yield _handed_out(*pending.popleft())
    finally:  # the caller stopped or failed: plans not handed out are not needed
        # joined only by the thread that made the pool: a generator dropped without close() is
        # finished by the garbage collector in whatever thread allocates, one being started
        # among them, and joining there can deadlock
        pool.shutdown(wait=threading.get_ident() == owner, cancel_futures=True)


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


RawItem = tuple[Any, Any, Any, Any]
"""An ``add_many`` item unpacked: key, text, fingerprint, at."""


def unpack(raw: object) -> RawItem:
    """An ``add_many`` item as (key, text, fingerprint, at)."""
    if isinstance(raw, Mapping):
        unknown = set(raw) - {"key", "text", "fingerprint", "at"}
        if unknown:
            raise InvalidInput(f"unknown item fields {sorted(unknown)}")
        return raw.get("key"), raw.get("text"), raw.get("fingerprint"), raw.get("at")
    if isinstance(raw, tuple) and len(raw) == 2:
        return raw[0], raw[1], None, None
    raise InvalidInput("add_many items are (key, text) pairs or mappings with a key")


def read_batches(items: object, size: int) -> Iterator[list[RawItem] | BatchFailed]:
    """``add_many``'s items in batches of ``size``; a malformed item ends them with its
    BatchFailed (raised in its turn, after the batches before it are written)."""
    if isinstance(items, (str, bytes, Mapping)):
        raise InvalidType("add_many takes an iterable of items, not a single item")
    try:
        iterator = iter(items)  # type: ignore[call-overload]
    except TypeError:
        raise InvalidType(f"add_many takes an iterable, not {type(items).__name__}") from None
    return _batches(iterator, size)


def _batches(items: Iterator[object], size: int) -> Iterator[list[RawItem] | BatchFailed]:
    committed = 0
    batch: list[RawItem] = []
    for raw in items:
        try:
            batch.append(unpack(raw))
        except SimstoreError as error:
            failure = BatchFailed(
                f"item {committed + len(batch)} is malformed ({error}); its batch was not "
                f"written ({committed} items before it are committed)",
                committed,
            )
            failure.__cause__ = error
            yield failure
            return
        if len(batch) >= size:
            yield batch
            committed += len(batch)
            batch = []
    if batch:
        yield batch


def query_triples(queries: Iterable[object]) -> list[tuple[Any, Any, Any]]:
    """``query_many``'s texts (str) and fingerprints (int) as (key, text, fingerprint)."""
    if isinstance(queries, (str, bytes, Mapping)):
        raise InvalidType("query_many takes an iterable of texts or fingerprints, not one")
    raw: list[tuple[Any, Any, Any]] = []
    for query in queries:
        if isinstance(query, str):
            raw.append(("query", query, None))
        elif isinstance(query, int) and not isinstance(query, bool):
            raw.append(("query", None, query))
        else:
            kind = type(query).__name__
            raise InvalidType(f"query_many takes texts (str) or fingerprints (int), not {kind}")
    return raw


def keyed_triples(
    raw: Sequence[tuple[Any, Any, Any]], keys: Sequence[str] | None, *, in_order: bool
) -> list[tuple[Any, Any, Any]]:
    """``query_triples`` named by ``keys`` (unique; default the positions, ``"0"``, ``"1"``...):
    ``query_many(in_order=True)`` names a match among its queries by their key."""
    if keys is None:
        names = [str(position) for position in range(len(raw))]
    elif isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence):
        raise InvalidType("keys must be a sequence of strings, one per query")
    else:
        names = list(keys)
    if not in_order:
        raise InvalidInput("keys name the queries for in_order=True: give in_order=True too")
    if len(names) != len(raw):
        raise InvalidInput(f"{len(names)} keys for {len(raw)} queries")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InvalidInput(f"keys must be unique: {name!r} is given more than once")
        seen.add(name)
    return [(name, text, value) for name, (_key, text, value) in zip(names, raw, strict=True)]


@dataclass(frozen=True)
class Planner:
    """How one store makes its input into items: its preset, policy, radius and text limit.

    ``plan_items`` refuses a text with no features (empty, white space, only symbols) and a
    text longer than ``max_text_length``."""

    preset: Preset
    policy: Policy
    store_radius: int
    max_text_length: int = MAX_TEXT_LENGTH

    def items(self, raw: Sequence[tuple[Any, Any, Any]], max_distance: int | None) -> list[Item]:
        """The items of (key, text, fingerprint) triples (``max_distance``: the caller's)."""
        return plan_items(
            raw,
            preset=self.preset,
            policy=self.policy,
            max_distance=self.store_radius,
            explicit=None if max_distance is None else check_radius(max_distance),
            max_text_length=self.max_text_length,
        )

    def batches(self, max_distance: int | None) -> Callable[[Sequence[RawItem]], list[Item]]:
        """``plan_batch`` for ``add_many``'s batches (a picklable function: a worker runs it)."""
        return functools.partial(plan_batch, planner=self, max_distance=max_distance)


def plan_batch(raw: Sequence[RawItem], *, planner: Planner, max_distance: int | None) -> list[Item]:
    """The items of an ``add_many`` batch (module level: a worker process runs it)."""
    items = planner.items([(key, text, value) for key, text, value, _at in raw], max_distance)
    for item in items:  # signed: not needed again, and not worth a trip back from a worker
        item.normalised = None
    return items
