"""Group commit: the adds of concurrent callers decided and committed in one transaction.

No thread of its own. The first caller to arrive while no group is being written leads: it takes
every add queued so far (its own first), writes them as one batch (``add_many``'s path: in
arrival order, near-duplicates within the group resolved in that order) and commits. Callers that
arrive meanwhile queue and wait; when the leader's commit is done it hands the lead to the
oldest of them, which takes the whole queue. So a group is whatever arrived during the previous
commit, nobody waits for a timer, and each caller returns its own decision only after the commit
that wrote it.

A group whose transaction fails is written again one add at a time, so that each caller gets its
own decision or its own error (a key added twice with different texts fails only its add).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from simstore.errors import DatabaseUnavailable, NamespaceDropped, SimstoreError
from simstore.policy.policies import Item
from simstore.results import Decision

GROUP_LIMIT = 256  # adds a transaction at most (the rest wait for the next one)


@dataclass(eq=False)
class _Waiting:
    """One caller's add, waiting for its group's commit (or for the lead)."""

    item: Item
    moment: datetime
    woken: threading.Event = field(default_factory=threading.Event)
    leads: bool = False
    decision: Decision | None = None
    error: BaseException | None = None


class GroupCommit:
    """Concurrent adds through ``write_group`` (one transaction for many adds) and, when a group
    fails, ``write_one`` (one add, its own transaction)."""

    def __init__(
        self,
        write_group: Callable[[Sequence[Item], Sequence[datetime]], list[Decision]],
        write_one: Callable[[Item, datetime], Decision],
        limit: int = GROUP_LIMIT,
    ) -> None:
        self._write_group = write_group
        self._write_one = write_one
        self._limit = limit
        self._mutex = threading.Lock()
        self._queue: list[_Waiting] = []
        self._leading = False

    def write(self, item: Item, moment: datetime) -> Decision:
        """Decide ``item`` with whatever else is queued; its decision once committed."""
        mine = _Waiting(item, moment)
        with self._mutex:
            self._queue.append(mine)
            if not self._leading:
                self._leading = mine.leads = True
        if not mine.leads:
            mine.woken.wait()
        if mine.leads:
            self._lead()
        if mine.error is not None:
            raise mine.error
        assert mine.decision is not None  # noqa: S101 - a woken add without a lead is decided
        return mine.decision

    def _lead(self) -> None:
        """Write the queue's head (this caller's add first) and pass the lead on."""
        with self._mutex:
            group, self._queue = self._queue[: self._limit], self._queue[self._limit :]
        try:
            self._write(group)
        finally:
            with self._mutex:
                if self._queue:
                    follower = self._queue[0]
                    follower.leads = True
                    follower.woken.set()
                else:
                    self._leading = False
            for waiting in group[1:]:
                waiting.woken.set()

    def _write(self, group: list[_Waiting]) -> None:
        try:
            decisions = self._write_group(
                [waiting.item for waiting in group], [waiting.moment for waiting in group]
            )
        except (NamespaceDropped, DatabaseUnavailable) as error:
            for waiting in group:  # no add of the group can be written now
                waiting.error = error
            return
        except Exception:
            for waiting in group:
                try:
                    waiting.decision = self._write_one(waiting.item, waiting.moment)
                except Exception as error:
                    waiting.error = error
            return
        except BaseException as error:  # KeyboardInterrupt in the leader: nobody was written
            for waiting in group[1:]:
                waiting.error = SimstoreError(
                    f"key {waiting.item.key!r} was not added: the thread writing its group "
                    f"stopped ({type(error).__name__})"
                )
            raise
        for waiting, decision in zip(group, decisions, strict=True):
            waiting.decision = decision
