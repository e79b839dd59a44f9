"""An in-memory SQLite store (``sqlite://``) shared by threads: every add is whole.

Its one connection is shared by every thread; without simstore taking turns on it, two adds'
transactions interleaved (an add reported kept but never stored, near-duplicates both kept, a raw
``SystemError`` from pysqlite's commit).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import StaticPool

from simstore.results import Decision
from simstore.store import SimStore

THREADS = 8
GROUPS = 150
VOCABULARY = [f"w{n:04d}" for n in range(5_000)]
VARIANTS = ("amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heath")


def group_text(group: int, variant: int) -> str:
    """Texts of one group are near-duplicates (one word differs); other groups share nothing."""
    # over 1,000 characters: a long text, decided by the estimate (a short one with a numbered
    # word replaced would be a look-alike, not a duplicate)
    words = random.Random(group).sample(VOCABULARY, 200)
    words[100] = VARIANTS[variant]  # (a word, not a number: a number swapped is identity)
    return " ".join(words)


def _url() -> SimStore:
    return SimStore("sqlite://")


def _callers_engine() -> SimStore:
    engine = sa.create_engine(
        "sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False}
    )
    return SimStore(engine)


@pytest.mark.parametrize("open_store", [_url, _callers_engine], ids=["url", "callers-engine"])
def test_threads_sharing_an_in_memory_store_keep_exactly_one_per_group(
    open_store: Callable[[], SimStore],
) -> None:
    store = open_store()
    store.add(group_text(GROUPS, 0), key="warm")  # the schema and namespace exist before the race
    start = threading.Barrier(THREADS)
    decided: list[tuple[int, Decision]] = []
    failures: list[BaseException] = []

    def work(thread: int) -> None:
        order = list(range(GROUPS))
        random.Random(thread).shuffle(order)
        start.wait()
        for group in order:
            try:
                decision = store.add(group_text(group, thread), key=f"{group}/{thread}")
                store.query(group_text(group, thread))
            except BaseException as error:  # every one is a failure to report
                failures.append(error)
            else:
                decided.append((group, decision))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    assert len(decided) == THREADS * GROUPS
    kept: dict[int, list[str]] = {}
    for group, decision in decided:
        if decision.inserted:
            kept.setdefault(group, []).append(decision.key)
            assert store.get(decision.key) is not None, f"{decision.key} said kept, not stored"
        else:
            assert decision.duplicate_of is not None
            assert decision.duplicate_of.key.split("/")[0] == str(group)
    assert {group: len(keys) for group, keys in kept.items()} == dict.fromkeys(range(GROUPS), 1)
    stats = store.stats()
    assert (stats.kept, stats.decisions) == (GROUPS + 1, THREADS * GROUPS + 1)
    store.close()
