"""The store's memory of boilerplate: lines that many texts carry (a mail disclaimer, a forum
signature, a "related reading" block, a cookie notice) are set aside before a short text is
signed and compared.

Every short text of several lines counts its lines (``simstore.text.edges.segments``) when it is
added, kept or not, so the count a text sees depends on the texts before it alone, not on what
was decided for them: a store, ``simstore.batch`` and Spark (a window over the input order) count
alike. A line that at least ``least`` earlier texts carried (``boilerplate_texts``, in the
store's keep window) is boilerplate for the text: the text is compared and signed without it
(``Policy.set_aside``), and each kept text it is compared with loses the same lines. A copy of a
message re-sent under a recurring footer then finds the message, and two messages under one
footer are compared by what they say.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from simstore.policy._base import Item, Policy
from simstore.text import minhash
from simstore.text.edges import MARK, flat, marked, segments, unmarked


class LineCounts:
    """How many texts carried each line (by ``segment_key``), seen in input order: the counts
    found before (a store's window) and those of the texts seen since."""

    def __init__(self, least: int, before: Mapping[int, int] | None = None) -> None:
        self.least = least
        self.counts: dict[int, int] = dict(before or {})
        self.added: Counter[tuple[int, int]] = Counter()  # (partition, key): texts seen now

    def see(self, keys: Sequence[int], partition: int = 0) -> frozenset[int]:
        """The lines of a text (its ``keys``) that at least ``least`` earlier texts carried;
        the text is counted for each of them then."""
        common = frozenset(key for key in keys if self.counts.get(key, 0) >= self.least)
        for key in keys:
            self.counts[key] = self.counts.get(key, 0) + 1
            self.added[partition, key] += 1
        return common

    def common(self, keys: Sequence[int]) -> frozenset[int]:
        """``see`` without counting the text (a query: it adds nothing)."""
        return frozenset(key for key in keys if self.counts.get(key, 0) >= self.least)


def stored_text(item: Item) -> str | None:
    """What a kept item's row stores as its text: its whole text with the lines set aside
    marked (``simstore.text.edges.marked``), or its comparison text."""
    if item.whole is None:
        return item.text
    return marked(item.whole.text, item.boilerplate)


def line_keys(item: Item) -> tuple[int, ...]:
    """The keys of an item's lines (``segments`` of its whole comparison text, before any was set
    aside): what it counts, and what a hand-over row of it carries (``LoadRow.segments``)."""
    return segments(item.text if item.whole is None else item.whole.text)


def whole_band_keys(stored: str | None, layout: str) -> tuple[int, ...]:
    """The band keys of a stored text's whole text (``stored_text``: lines marked as set aside),
    which its row holds beside its signature's (``Policy.sign``); none for a text without."""
    if stored is None or MARK not in stored:
        return ()
    _compared, whole, _keys = unmarked(stored)
    values, _sizes = minhash.sketches([flat(whole or "")])
    return tuple(minhash.distinct_band_keys(values, layout)[0])


def segments_of(items: Sequence[Item], skip: Collection[int] = ()) -> set[int]:
    """The line keys of the items (those at a position in ``skip`` left out): what to read the
    counts of."""
    return {key for position, item in enumerate(items) if position not in skip
            for key in line_keys(item)}  # fmt: skip


def set_aside(
    policy: Policy,
    items: Sequence[Item],
    counts: LineCounts,
    *,
    partitions: Sequence[int] | None = None,
    skip: Collection[int] = (),
    count: bool = True,
) -> None:
    """Each item's boilerplate, in input order, set aside by ``policy`` (the items changed are
    signed again); each item is counted (unless ``count`` is False: a query), those at a
    position in ``skip`` (a key added again: its decision is replayed) neither."""
    changed: list[Item] = []
    for position, item in enumerate(items):
        if position in skip:
            continue
        keys = line_keys(item)
        if not keys:
            continue
        if count:
            common = counts.see(keys, 0 if partitions is None else partitions[position])
        else:
            common = counts.common(keys)
        # (an item set aside before, in a transaction tried again, is made whole first)
        if (common or item.whole is not None) and policy.set_aside(item, common):
            changed.append(item)
    if changed:
        policy.sign(changed)
