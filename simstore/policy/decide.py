"""The in-order decision, written once: which new item is kept and which is a duplicate of what.

Every door calls it: the store's writer (with the matches storage found for each item among the
kept rows), the batch API (``simstore.policy.batch``, no database) and Spark's executors
(``simstore.spark``, with a component's confirmed edges). The rule: items are decided in input
order; an item is compared only with the items kept before it (a duplicate is never a reference)
and with what storage found; it is a duplicate of its best confirmed match (``preference``:
nearest, then earliest, then smallest key), else it is kept.

``CandidateIndex`` is the one in-memory candidate index: the earlier items of a batch, found by
SimHash band and MinHash band key and admitted by ``Policy.is_candidate``, as the database finds
kept rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple, Protocol

from simstore.policy.policies import Item, Kept, Policy
from simstore.policy.probes import band_values
from simstore.results import Match, sort_matches
from simstore.text.encoding import BAND_COUNT

__all__ = [
    "BandIndex",
    "CandidateIndex",
    "Edge",
    "Rule",
    "as_kept",
    "confirm_candidates",
    "confirm_pairs",
    "decide_in_order",
    "keeps_base_candidate_rule",
    "replay_edges",
]


class Rule(NamedTuple):
    """What decides: the policy and the store's SimHash radius."""

    policy: Policy
    max_distance: int


@dataclass(frozen=True)
class Edge:
    """A confirmed pair: item ``new`` is a near-duplicate of the earlier item ``old``."""

    new: int
    old: int
    distance: int
    measure: str | None
    score: float | None


def as_kept(item: Item, added_at: datetime) -> Kept:
    """What confirming against an earlier ``item`` needs of it, as if kept at ``added_at``."""
    whole = None if item.whole is None else item.whole.text
    return Kept(item.key, item.fingerprint, added_at, item.text, item.signature, whole)


def keeps_base_candidate_rule(policy: Policy) -> bool:
    """Whether ``policy`` keeps ``Policy.is_candidate`` and ``Policy.by_radius``: two signed
    texts are candidates by their band keys only (at least ``min_shared``), and only an item
    without a signature is found by SimHash radius."""
    rule = type(policy)
    return rule.is_candidate is Policy.is_candidate and rule.by_radius is Policy.by_radius


class BandIndex:
    """In-memory SimHash band value -> positions, for probing many values at once."""

    def __init__(self) -> None:
        self._bands: list[dict[int, list[int]]] = [{} for _ in range(BAND_COUNT)]

    def __bool__(self) -> bool:
        return bool(self._bands[0])

    def add(self, position: int, own_bands: Sequence[int]) -> None:
        for band, value in enumerate(own_bands):
            self._bands[band].setdefault(value, []).append(position)

    def lookup(self, probe: Mapping[int, Iterable[int]]) -> set[int]:
        """The positions whose band ``b`` holds one of ``probe[b]``."""
        found: set[int] = set()
        for band, values in probe.items():
            table = self._bands[band]
            for value in values:
                found.update(table.get(value, ()))
        return found


class CandidateIndex:
    """Earlier items, indexed to find a new item's candidates among them.

    A batch adds only the items it keeps: thousands of copies of one text then hold one entry
    per band and key, and every lookup stays small. Under the base candidate rule only items
    without a signature go into the SimHash bands (a signed item is found by its band keys
    alone), and while the bands are empty nothing is probed: for a signed corpus the probes
    would be most of the work.
    """

    def __init__(self, policy: Policy) -> None:
        self._policy = policy
        self._every_by_radius = not keeps_base_candidate_rule(policy)
        self._bands = BandIndex()
        self._keys: dict[int, list[int]] = {}
        self._items: dict[int, Item] = {}

    def add(self, position: int, item: Item) -> None:
        self._items[position] = item
        for key in item.band_keys:
            self._keys.setdefault(key, []).append(position)
        if self._every_by_radius or item.signature is None:
            self._bands.add(position, item.own_bands)

    def candidates(self, item: Item) -> list[int]:
        """Positions of the indexed items that ``item`` must be confirmed against, in order."""
        keys = self._keys
        shared = Counter([j for key in item.band_keys if key in keys for j in keys[key]])
        near: set[int] = set()
        if self._bands:
            near = self._bands.lookup(band_values(item.fingerprint, item.radius, item.own_bands))
        is_candidate = self._policy.is_candidate
        return sorted(
            j for j in near.union(shared) if is_candidate(item, self._items[j], shared.get(j, 0))
        )


class _Earlier(Protocol):
    """Where an item's matches among the batch's earlier kept items come from."""

    def matches(self, position: int) -> list[Match]: ...

    def kept(self, position: int) -> None: ...


def _in_order(
    count: int, found: Sequence[Sequence[Match]], earlier: _Earlier, skip: Collection[int]
) -> list[list[Match] | None]:
    """The decision loop: each position's matches, best first (empty: kept); None if skipped."""
    decided: list[list[Match] | None] = []
    for position in range(count):
        if position in skip:
            decided.append(None)
            continue
        matches = sort_matches([*found[position], *earlier.matches(position)])
        if not matches:
            earlier.kept(position)
        decided.append(matches)
    return decided


class _Confirming:
    """Earlier kept items found by a ``CandidateIndex`` and confirmed by the policy."""

    def __init__(
        self,
        items: Sequence[Item],
        moments: Sequence[datetime],
        rule: Rule,
        window_starts: Sequence[datetime | None] | None,
    ) -> None:
        self._items = items
        self._moments = moments
        self._rule = rule
        self._starts = window_starts
        self._index = CandidateIndex(rule.policy)

    def matches(self, position: int) -> list[Match]:
        start = None if self._starts is None else self._starts[position]
        olds = [
            j
            for j in self._index.candidates(self._items[position])
            if start is None or self._moments[j] >= start
        ]
        if not olds:
            return []
        item = self._items[position]
        kept = [as_kept(self._items[j], self._moments[j]) for j in olds]
        confirmed = self._rule.policy.confirm_many(
            [item] * len(olds), kept, self._rule.max_distance
        )
        return [match for match in confirmed if match is not None]

    def kept(self, position: int) -> None:
        self._index.add(position, self._items[position])


def decide_in_order(
    items: Sequence[Item],
    moments: Sequence[datetime],
    rule: Rule,
    *,
    found: Sequence[Sequence[Match]] | None = None,
    window_starts: Sequence[datetime | None] | None = None,
    skip: Collection[int] = (),
) -> list[list[Match] | None]:
    """Decide ``items`` in input order: for each, its confirmed matches best first (an empty
    list: it is kept), or None for a position in ``skip``.

    :param items: the new items, planned by the policy (``batch.plan_items``).
    :param moments: when each item arrives (a kept item's ``added_at``; it breaks ties).
    :param rule: the policy and the store's SimHash radius.
    :param found: per item, the matches storage confirmed among rows kept before the batch.
    :param window_starts: per item, the earliest moment still inside the retention window (an
        earlier item kept before it is no reference); None: no window.
    :param skip: positions decided elsewhere (a key seen before replays its decision): neither
        decided nor a reference for a later item.
    """
    none: list[Match] = []
    return _in_order(
        len(items),
        [none] * len(items) if found is None else found,
        _Confirming(items, moments, rule, window_starts),
        skip,
    )


class _Given:
    """Earlier kept items from confirmed edges (a batch engine confirmed them apart)."""

    def __init__(
        self, keys: Sequence[str], edges: Iterable[Edge], moments: Sequence[datetime]
    ) -> None:
        self._keys = keys
        self._moments = moments
        self._kept: set[int] = set()
        self._edges: dict[int, list[Edge]] = {}
        for edge in edges:
            self._edges.setdefault(edge.new, []).append(edge)

    def matches(self, position: int) -> list[Match]:
        return [
            Match(self._keys[e.old], 0, e.distance, self._moments[e.old], e.measure, e.score)
            for e in self._edges.get(position, ())
            if e.old in self._kept
        ]

    def kept(self, position: int) -> None:
        self._kept.add(position)


def replay_edges(
    keys: Sequence[str], edges: Iterable[Edge], moments: Sequence[datetime]
) -> list[list[Match]]:
    """``decide_in_order`` over confirmed ``edges`` (new -> old, old < new): each position's
    matches best first (an empty list: kept). The matches carry no fingerprint (0)."""
    none: list[Match] = []
    decided = _in_order(len(keys), [none] * len(keys), _Given(keys, edges, moments), ())
    return [matches or [] for matches in decided]


def confirm_candidates(
    news: Sequence[Item], olds: Sequence[Item], shared: Sequence[int], rule: Rule
) -> list[Match | None]:
    """For aligned pairs (``news[i]`` after ``olds[i]``, sharing ``shared[i]`` band keys), the
    Match where the policy admits the pair as a candidate and confirms it; None elsewhere."""
    policy, max_distance = rule
    admitted = [
        i
        for i, (new, old, count) in enumerate(zip(news, olds, shared, strict=True))
        if policy.is_candidate(new, old, count)
    ]
    confirmed = policy.confirm_many(
        [news[i] for i in admitted], [as_kept(olds[i], _EPOCH) for i in admitted], max_distance
    )
    out: list[Match | None] = [None] * len(news)
    for i, match in zip(admitted, confirmed, strict=True):
        out[i] = match
    return out


def confirm_pairs(
    items: Sequence[Item], pairs: Iterable[tuple[int, int]], rule: Rule
) -> list[Edge]:
    """The candidate pairs (new, old) that the policy confirms, as edges (signature estimates
    in one numpy pass)."""
    wanted = list(pairs)
    news = [items[new] for new, _old in wanted]
    olds = [as_kept(items[old], _EPOCH) for _new, old in wanted]
    matches = rule.policy.confirm_many(news, olds, rule.max_distance)
    return [
        Edge(new, old, match.distance, match.measure, match.score)
        for (new, old), match in zip(wanted, matches, strict=True)
        if match is not None
    ]


_EPOCH = datetime(1970, 1, 1)
