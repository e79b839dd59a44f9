"""Adding a stream of records so that a bad one costs only itself: ``ingest(store, records)``.

``SimStore.add_many`` writes a batch in one transaction, so one bad record (an empty text, a key
already stored with another text) fails its whole batch and nothing of it is written. ``ingest``
then adds that batch's records one at a time, so that only the bad ones are lost, and goes on with
the next batch. It yields one outcome per record, in input order: the record's ``Decision``, or a
``Rejected`` saying which record and why.

A record is a ``(key, text)`` pair or an object with ``key`` and ``text`` attributes (and, for
messages, ``source`` and ``line``, as ``simstore.io.records.Record`` has). A ``Rejected`` in the
input (a reader's record that could not be parsed, see ``simstore.io.records``) is passed through in
its place. With ``strict`` the run stops at the first rejected record; the records before it are
committed. A database that fails (``DatabaseUnavailable``, ``SchemaOutOfDate``) is raised, never
counted as a bad record. An error raised while reading ``records`` stops the run too: the records
read before it are added and their outcomes yielded first, then the error is raised.

``ingest`` uses only SimStore's public API (``add_many`` and ``add``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from simstore.errors import (
    BatchFailed,
    DatabaseUnavailable,
    InvalidInput,
    KeyConflict,
    SchemaOutOfDate,
)
from simstore.validate import check_int

if TYPE_CHECKING:
    from simstore.results import Decision


class KeyedText(Protocol):
    """A record: an object with a key and a text (``source`` and ``line`` optional)."""

    @property
    def key(self) -> str: ...

    @property
    def text(self) -> str: ...


class Adder(Protocol):
    """What ingest needs of a store: its ``add`` and ``add_many`` (``SimStore`` has both)."""

    def add(self, text: str | None = None, *, key: str) -> Decision: ...

    def add_many(
        self, items: Iterable[Any], *, batch_size: int = ..., workers: int = ...
    ) -> Iterator[Decision]: ...


@dataclass(frozen=True)
class Rejected:
    """A record that was not added: which one (key, or where it was read) and why."""

    key: str | None
    reason: str
    source: str | None = None
    line: int | None = None

    @property
    def where(self) -> str:
        """``source:line`` when the record was read from a file, else its key."""
        if self.source is not None:
            return f"{self.source}:{self.line}" if self.line is not None else self.source
        return "a record without a key" if self.key is None else repr(self.key)

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


def ingest(
    store: Adder,
    records: Iterable[tuple[str, str] | KeyedText | Rejected],
    *,
    batch_size: int = 1000,
    strict: bool = False,
    workers: int = 0,
) -> Iterator[Decision | Rejected]:
    """Add ``records`` a batch at a time; yield a Decision or a Rejected per record, in order
    (``workers``: processes that plan the next batches, as ``SimStore.add_many``'s)."""
    check_int("workers", workers, lowest=0)
    return _Ingest(store, iter(records), batch_size, strict, workers).run()


@dataclass
class _Pending:
    """A record fed to ``add_many`` and not yet decided (its key and text, and its identity)."""

    key: Any
    text: Any
    source: str | None
    line: int | None

    def rejected(self, reason: str) -> Rejected:
        key = self.key if isinstance(self.key, str) else None
        return Rejected(key, reason, self.source, self.line)


def _pending(record: object) -> _Pending | Rejected:
    """What ``record`` holds, or why it is not a record at all."""
    if isinstance(record, Rejected):
        return record
    if isinstance(record, tuple):
        if len(record) == 2:
            return _Pending(record[0], record[1], None, None)
    elif hasattr(record, "key") and hasattr(record, "text"):
        source, line = getattr(record, "source", None), getattr(record, "line", None)
        return _Pending(
            record.key,
            record.text,
            source if isinstance(source, str) else None,
            line if isinstance(line, int) else None,
        )
    kind = type(record).__name__
    return Rejected(None, f"a {kind}, not a (key, text) pair or a record with key and text")


class _Ingest:
    """One run: the records fed and not yet answered, in input order, and when to stop."""

    def __init__(
        self, store: Adder, source: Iterator[Any], batch_size: int, strict: bool, workers: int
    ):
        self.store = store
        self.workers = workers
        self.source = source
        self.batch_size = batch_size
        self.strict = strict
        self.waiting: deque[_Pending | Rejected] = deque()  # fed, in order, not yet yielded
        self.stopped = False  # strict, and a record was rejected
        self.read_error: Exception | None = None

    def _feed(self) -> Iterator[tuple[Any, Any]]:
        """The source's records for ``add_many``; rejected ones wait in line for their turn."""
        try:
            for record in self.source:
                item = _pending(record)
                self.waiting.append(item)
                if isinstance(item, Rejected):
                    if self.strict:
                        return  # add_many commits the records before it
                    continue
                yield item.key, item.text
        except Exception as error:  # reading failed: add what was read, then raise it
            self.read_error = error

    def _rejected_first(self) -> Iterator[Rejected]:
        """The rejected records waiting ahead of the next record to be decided."""
        while self.waiting and isinstance(rejected := self.waiting[0], Rejected):
            self.waiting.popleft()
            self.stopped = self.strict
            yield rejected
            if self.stopped:
                return

    def _one_by_one(self) -> Iterator[Decision | Rejected]:
        """After a failed batch: add its records singly, so that only the bad ones are lost."""
        while self.waiting and not self.stopped:
            item = self.waiting.popleft()
            if isinstance(item, Rejected):
                self.stopped = self.strict
                yield item
                continue
            try:
                yield self.store.add(item.text, key=item.key)
            except (InvalidInput, KeyConflict) as error:
                self.stopped = self.strict
                yield item.rejected(str(error))
        self.waiting.clear()

    def run(self) -> Iterator[Decision | Rejected]:
        while not self.stopped:
            try:
                for decision in self.store.add_many(
                    self._feed(), batch_size=self.batch_size, workers=self.workers
                ):
                    yield from self._rejected_first()
                    self.waiting.popleft()
                    yield decision
                yield from self._rejected_first()
                break
            except BatchFailed as failure:
                cause = failure.__cause__
                if isinstance(cause, (DatabaseUnavailable, SchemaOutOfDate)):
                    raise cause from cause.__cause__  # the database's own error, not a bad record
                yield from self._one_by_one()
                if self.read_error is not None:
                    break
        if self.read_error is not None:
            raise self.read_error
