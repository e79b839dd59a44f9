"""The store's decisions without a database: sign many texts, find and confirm candidate pairs,
and replay confirmed pairs in input order into keep / duplicate-of verdicts.

A batch engine (``simstore.spark``, or a plain loop) reproduces ``SimStore.add_many`` with these
functions, which are the ones the store itself runs: ``plan_items`` makes the store's items,
``remember_boilerplate`` sets aside the lines earlier texts made boilerplate (in input order:
between ``sign`` and ``candidates``) and ``simstore.policy.decide`` decides them in input order.
The rule: a text is compared only with texts kept before it (a duplicate is never a
reference), and it is a duplicate of its best confirmed earlier kept text (smallest SimHash
distance, then earliest, then smallest key); else it is kept.

Retention is not modelled: every earlier text counts as inside the window.

>>> from simstore import batch
>>> verdicts = batch.dedup(["the same text", "the same text!", "another one"])
>>> [(v.kept, v.duplicate_of) for v in verdicts]
[(True, None), (False, '0'), (True, None)]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from simstore.errors import InvalidInput, InvalidType
from simstore.policy.boilerplate import LineCounts, set_aside
from simstore.policy.decide import (
    CandidateIndex,
    Edge,
    Rule,
    confirm_pairs,
    decide_in_order,
    replay_edges,
)
from simstore.policy.policies import DEFAULT_POLICY, Item, Policy, check_policy
from simstore.results import Match
from simstore.text.encoding import check_fingerprint
from simstore.text.fingerprint import analyze_many
from simstore.text.normalise import is_blank
from simstore.text.presets import Preset, get_preset
from simstore.validate import (
    DEFAULT_MAX_DISTANCE,
    MAX_TEXT_LENGTH,
    check_key,
    check_radius,
    check_text_length,
)

__all__ = [
    "Edge",
    "Item",
    "Verdict",
    "candidates",
    "confirm",
    "dedup",
    "plan_items",
    "remember_boilerplate",
    "replay",
    "sign",
]

_SAME_MOMENT = datetime(1970, 1, 1, tzinfo=timezone.utc)
NOTHING_TO_COMPARE = (
    "has no words or characters simstore can compare (it is empty, white space, or only "
    "punctuation, symbols, emoji or invisible characters)"
)


@dataclass(frozen=True)
class Verdict:
    """The decision for one input: kept, or a duplicate of an earlier kept key."""

    key: str
    kept: bool
    duplicate_of: str | None = None
    distance: int | None = None
    measure: str | None = None
    score: float | None = None


def plan_items(
    raw: Sequence[tuple[Any, Any, Any]],
    *,
    preset: Preset,
    policy: Policy,
    max_distance: int,
    explicit: int | None = None,
    max_text_length: int = MAX_TEXT_LENGTH,
) -> list[Item]:
    """Validate (key, text, fingerprint) triples and make the items the store decides.

    A text from which the preset makes no feature (empty, white space, or only emoji,
    punctuation, symbols or invisible characters under the default preset) is refused with
    InvalidInput: all such texts share one fingerprint, so storing them would make each a
    duplicate of the first. This is the one place every entry point (add, add_many, query,
    batch, ingest, Spark, Flask, Django) checks it, and that a text has at most
    ``max_text_length`` characters (``simstore.validate.MAX_TEXT_LENGTH`` by default):
    planning costs memory and time in proportion, so one huge text could stop a whole run.

    Texts are fingerprinted together and planned by ``policy`` (signed in one pass); a bare
    fingerprint, or any item when ``explicit`` (a radius given to ``add`` or ``query``) is set,
    is decided by SimHash distance alone at that radius. A radius given with a text is refused
    under a policy that decides texts by similarity.
    """
    for key, text, value in raw:
        checked = check_key(key)
        if (text is None) == (value is None):
            raise InvalidInput(f"give exactly one of text and fingerprint (key {checked!r})")
        if value is not None:
            check_fingerprint(value)
        check_text_length(checked, text, max_text_length)
    texts = [text for _key, text, value in raw if value is None]
    if explicit is not None and texts and not policy.decides_texts_by_distance:
        raise InvalidInput(
            f"max_distance has no meaning for a text under the {policy.name} policy, which "
            "decides texts by similarity (its threshold); it applies to fingerprints, or open "
            "the store with policy=SimHashOnly() to decide texts by distance"
        )
    analysed = iter(analyze_many(texts, preset=preset))
    radius = max_distance if explicit is None else explicit
    items: list[Item] = []
    to_plan: list[tuple[Item, str]] = []
    for key, text, value in raw:
        if value is not None:
            items.append(Item(key, value, None, radius))
            continue
        result = next(analysed)
        if result.features == 0 or is_blank(text):  # (invisible fillers: no text)
            raise InvalidInput(f"the text of key {key!r} {NOTHING_TO_COMPARE}")
        item = Item(key, result.fingerprint, result.features, radius)
        items.append(item)
        if explicit is None:
            to_plan.append((item, text))
    if to_plan:
        policy.plan_many([i for i, _t in to_plan], [t for _i, t in to_plan], max_distance)
    return items


def sign(
    texts: Sequence[str],
    *,
    keys: Sequence[str] | None = None,
    preset: str | Preset = "default",
    policy: Policy = DEFAULT_POLICY,
    max_distance: int = DEFAULT_MAX_DISTANCE,
) -> list[Item]:
    """Fingerprint and plan texts as a store with this preset and policy would: each Item holds
    its fingerprint, comparison text, MinHash signature and band keys (keys default to "0"...)."""
    if isinstance(texts, (str, bytes)):
        raise InvalidType("sign takes a sequence of texts, not a single text")
    names = [str(i) for i in range(len(texts))] if keys is None else list(keys)
    if len(names) != len(texts):
        raise InvalidInput(f"{len(names)} keys for {len(texts)} texts")
    if len(set(names)) != len(names):
        raise InvalidInput("keys must be unique")
    raw = [(key, text, None) for key, text in zip(names, texts, strict=True)]
    return plan_items(
        raw,
        preset=get_preset(preset),
        policy=check_policy(policy),
        max_distance=check_radius(max_distance),
    )


def remember_boilerplate(items: Sequence[Item], *, policy: Policy = DEFAULT_POLICY) -> None:
    """The store's memory of boilerplate over signed items, in input order
    (``simstore.policy.boilerplate``): each item's lines that enough earlier items carried are
    set aside and it is signed again. Nothing when the policy keeps no such memory."""
    least = check_policy(policy).boilerplate_least
    if least is not None:
        set_aside(policy, items, LineCounts(least))


def candidates(items: Sequence[Item], *, policy: Policy = DEFAULT_POLICY) -> list[tuple[int, int]]:
    """Every pair (new, old), old < new, that the store would confirm: shared band keys or the
    SimHash radius, as ``policy.is_candidate`` says. In memory; a big corpus wants a join."""
    index = CandidateIndex(check_policy(policy))
    pairs: list[tuple[int, int]] = []
    for new, item in enumerate(items):
        pairs.extend((new, old) for old in index.candidates(item))
        index.add(new, item)
    return pairs


def confirm(
    items: Sequence[Item],
    pairs: Iterable[tuple[int, int]],
    *,
    policy: Policy = DEFAULT_POLICY,
    max_distance: int = DEFAULT_MAX_DISTANCE,
) -> list[Edge]:
    """The candidate pairs (new, old) that ``policy`` confirms, with distance, measure, score
    (signature estimates in one numpy pass)."""
    return confirm_pairs(items, pairs, Rule(check_policy(policy), check_radius(max_distance)))


def _verdict(key: str, matches: Sequence[Match]) -> Verdict:
    if not matches:
        return Verdict(key, True)
    best = matches[0]
    return Verdict(key, False, best.key, best.distance, best.measure, best.score)


def replay(
    keys: Sequence[str], edges: Iterable[Edge], *, moments: Sequence[datetime] | None = None
) -> list[Verdict]:
    """Keep / duplicate-of verdicts in input order from confirmed edges, by the store's rule
    (``simstore.policy.decide``).

    ``moments`` (when each input arrived) break ties between equally near kept texts as the
    store's ``added_at`` does; by default every input shares one moment (``add_many(at=...)``).
    """
    if moments is not None and len(moments) != len(keys):
        raise InvalidInput(f"{len(moments)} moments for {len(keys)} keys")
    given = list(edges)
    for edge in given:
        if not 0 <= edge.old < edge.new < len(keys):
            raise InvalidInput(f"edge {edge.new} -> {edge.old} does not point to an earlier input")
    at = [_SAME_MOMENT] * len(keys) if moments is None else moments
    decided = replay_edges(keys, given, at)
    return [_verdict(key, matches) for key, matches in zip(keys, decided, strict=True)]


def dedup(
    texts: Sequence[str],
    *,
    keys: Sequence[str] | None = None,
    preset: str | Preset = "default",
    policy: Policy = DEFAULT_POLICY,
    max_distance: int = DEFAULT_MAX_DISTANCE,
) -> list[Verdict]:
    """``sign`` and the store's in-order decision (``simstore.policy.decide``), all in memory:
    what ``candidates``, ``confirm`` and ``replay`` give together."""
    items = sign(texts, keys=keys, preset=preset, policy=policy, max_distance=max_distance)
    remember_boilerplate(items, policy=policy)
    rule = Rule(check_policy(policy), check_radius(max_distance))
    decided = decide_in_order(items, [_SAME_MOMENT] * len(items), rule)
    return [_verdict(item.key, matches or ()) for item, matches in zip(items, decided, strict=True)]
