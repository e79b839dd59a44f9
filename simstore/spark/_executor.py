"""The executor side of ``simstore.spark``: the batch API over Arrow batches.

Private to ``simstore.spark``. Every function Spark ships to an executor (``mapInArrow``,
``applyInArrow``) is a module-level function here or a closure over one, so executors import it
by name; this module imports PyArrow but never PySpark (executors only see Arrow batches).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa

from simstore.errors import InvalidInput, SimstoreError
from simstore.policy import batch
from simstore.policy._base import Whole
from simstore.policy.boilerplate import line_keys, stored_text
from simstore.policy.decide import Rule, confirm_candidates
from simstore.policy.policies import Item, Policy
from simstore.policy.probes import band_values
from simstore.storage.retention import EPOCH
from simstore.text.edges import MARK, unmarked
from simstore.text.encoding import from_signed, to_signed
from simstore.text.presets import Preset

__all__ = [
    "ITEM_FIELDS",
    "SIGN_CHUNK",
    "confirm_batches",
    "items_batch",
    "make_item",
    "micros",
    "probes",
    "replay",
    "self_batches",
    "set_aside_batches",
    "sign_batches",
]

SIGN_CHUNK = 2_000  # texts signed together (one numpy pass)

_ITEM_SCHEMA = pa.schema(  # the Arrow form of simstore.spark's _ITEM_DDL
    [
        ("order", pa.int64()),
        ("key", pa.string()),
        ("fp", pa.int64()),
        ("b0", pa.int32()),
        ("b1", pa.int32()),
        ("b2", pa.int32()),
        ("b3", pa.int32()),
        ("radius", pa.int32()),
        ("threshold", pa.float64()),
        ("text", pa.string()),
        ("signature", pa.binary()),
        ("band_keys", pa.list_(pa.int64())),
        ("planned", pa.bool_()),
        ("mostly_cjk", pa.bool_()),  # decides the long threshold of the new side (Item.mostly_cjk)
        ("prior", pa.bool_()),
        ("moment", pa.int64()),  # microseconds since the epoch: added_at of a store's kept row
        ("least", pa.int32()),  # Policy.min_shared: the band keys an earlier text must share
        # its line keys (``simstore.text.edges.segments`` of its whole comparison text), under
        # a policy with the memory of boilerplate (else none), and those set aside
        # (``Item.boilerplate``)
        ("segments", pa.list_(pa.int64())),
        ("boilerplate", pa.list_(pa.int64())),
    ]
)
ITEM_FIELDS = (
    "key", "fp", "radius", "threshold", "text", "signature", "band_keys", "planned", "mostly_cjk",
    "boilerplate",
)  # fmt: skip
_EDGE_SCHEMA = pa.schema(
    [
        ("new", pa.int64()),
        ("old", pa.int64()),
        ("distance", pa.int32()),
        ("measure", pa.string()),
        ("score", pa.float64()),
    ]
)
_VERDICT_SCHEMA = pa.schema(
    [
        ("order", pa.int64()),
        ("key", pa.string()),
        ("kept", pa.bool_()),
        ("duplicate_of", pa.string()),
        ("distance", pa.int32()),
        ("measure", pa.string()),
        ("score", pa.float64()),
    ]
)
_MICROSECOND = timedelta(microseconds=1)


def micros(moment: datetime) -> int:
    return (moment - EPOCH) // _MICROSECOND


def _moment(count: int) -> datetime:
    return EPOCH + count * _MICROSECOND


def items_batch(
    orders: Sequence[int],
    items: Sequence[Item],
    prior: bool,
    moments: Sequence[int],
    policy: Policy,
) -> pa.RecordBatch:
    """Items as an Arrow batch of ``_ITEM_SCHEMA`` (fingerprints signed, like the store's)."""
    remembers = policy.boilerplate_least is not None
    columns: list[Any] = [
        list(orders),
        [item.key for item in items],
        [to_signed(item.fingerprint) for item in items],
        *([item.own_bands[band] for item in items] for band in range(4)),
        [item.radius for item in items],
        [item.threshold for item in items],
        [stored_text(item) for item in items],  # (lines set aside marked: make_item reads them)
        [item.signature for item in items],
        [list(item.band_keys) for item in items],
        [item.planned for item in items],
        [item.mostly_cjk for item in items],
        [prior] * len(items),
        list(moments),
        [policy.min_shared(item) for item in items],
        [list(line_keys(item)) if remembers else [] for item in items],
        [sorted(item.boilerplate) for item in items],
    ]
    return pa.RecordBatch.from_arrays(
        [
            pa.array(values, type=field.type)
            for values, field in zip(columns, _ITEM_SCHEMA, strict=True)
        ],
        schema=_ITEM_SCHEMA,
    )


def _sign_chunk(
    keys: list[Any], texts: list[Any], preset: Preset, policy: Policy, max_distance: int
) -> list[Item]:
    """``batch.sign``; a bad text is reported with its key (the executor's error reaches the
    driver as text, and ``dedup`` turns it back into a simstore error)."""
    try:
        return batch.sign(texts, keys=keys, preset=preset, policy=policy, max_distance=max_distance)
    except SimstoreError:
        for key, text in zip(keys, texts, strict=True):
            try:
                batch.sign([text], keys=[key], preset=preset, policy=policy)
            except SimstoreError as error:
                raise InvalidInput(f"simstore.spark: key {key!r}: {error}") from None
        raise


def _sign(
    batches: Iterable[pa.RecordBatch],
    preset: Preset,
    policy: Policy,
    max_distance: int,
    moment: int,
) -> Iterator[pa.RecordBatch]:
    for record in batches:
        orders = record.column("order").to_pylist()
        keys = record.column("key").to_pylist()
        texts = record.column("text").to_pylist()
        for first in range(0, len(orders), SIGN_CHUNK):
            last = first + SIGN_CHUNK
            items = _sign_chunk(keys[first:last], texts[first:last], preset, policy, max_distance)
            yield items_batch(orders[first:last], items, False, [moment] * len(items), policy)


def make_item(
    key: str,
    fp: int,
    radius: int,
    threshold: float | None,
    text: str | None,
    signature: bytes | None,
    band_keys: Sequence[int] | None,
    planned: bool,
    mostly_cjk: bool,
    boilerplate: Sequence[int] | None = None,
) -> Item:
    """The Item a row stands for (as ``batch.sign`` made it, then ``set_aside`` when lines were
    set aside: ``boilerplate``, and its ``text`` is ``stored_text``, those lines marked; features
    are not needed any more)."""
    whole = None
    if text is not None and MARK in text:
        text, whole_text, _marked = unmarked(text)
        whole = Whole(whole_text or text, ())  # (its keys are in band_keys already)
    return Item(
        key,
        from_signed(fp),
        None,
        radius,
        text=text,
        threshold=threshold,
        signature=signature,
        band_keys=tuple(band_keys or ()),
        planned=planned,
        mostly_cjk=bool(mostly_cjk),
        boilerplate=frozenset(boilerplate or ()),
        whole=whole,
    )


def _set_aside(batches: Iterable[pa.RecordBatch], policy: Policy) -> Iterator[pa.RecordBatch]:
    """The memory of boilerplate over items in Arrow batches with a column ``common`` (the line
    keys that enough earlier items carried, null for none): each such item's lines set aside
    (``Policy.set_aside``) and the items changed signed again (``Policy.sign``), as
    ``simstore.policy.boilerplate.set_aside`` does in input order; the rest as they were."""
    changed_columns = ("text", "signature", "band_keys", "mostly_cjk", "least", "boilerplate")
    for record in batches:
        rows = record.to_pydict()
        changed: list[tuple[int, Item]] = []
        for i, common in enumerate(rows["common"]):
            if not common:
                continue
            item = make_item(*(rows[name][i] for name in ITEM_FIELDS))
            if policy.set_aside(item, frozenset(common)):
                changed.append((i, item))
        if changed:
            policy.sign([item for _i, item in changed])
        for i, item in changed:
            values = (stored_text(item), item.signature, list(item.band_keys), item.mostly_cjk,
                      policy.min_shared(item), sorted(item.boilerplate))  # fmt: skip
            for name, value in zip(changed_columns, values, strict=True):
                rows[name][i] = value
        yield pa.RecordBatch.from_pydict(
            {field.name: rows[field.name] for field in _ITEM_SCHEMA}, schema=_ITEM_SCHEMA
        )


def _self_confirm(
    batches: Iterable[pa.RecordBatch], policy: Policy, max_distance: int
) -> Iterator[pa.RecordBatch]:
    """Whether each class's item is a confirmed near-duplicate of itself (and how)."""
    for record in batches:
        rows = record.to_pydict()
        items = [
            make_item(*values) for values in zip(*(rows[name] for name in ITEM_FIELDS), strict=True)
        ]
        shared = [len(item.band_keys) for item in items]
        matches = confirm_candidates(items, items, shared, Rule(policy, max_distance))
        yield pa.RecordBatch.from_pydict(
            {
                "rep": rows["order"],
                "self_ok": [match is not None for match in matches],
                "self_distance": [None if m is None else m.distance for m in matches],
                "self_measure": [None if m is None else m.measure for m in matches],
                "self_score": [None if m is None else m.score for m in matches],
            },
            schema=pa.schema(
                [
                    ("rep", pa.int64()),
                    ("self_ok", pa.bool_()),
                    ("self_distance", pa.int32()),
                    ("self_measure", pa.string()),
                    ("self_score", pa.float64()),
                ]
            ),
        )


def probes(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(node, band, value) for every band value a node's SimHash lookup probes (its radius)."""
    for record in batches:
        nodes, probed, values = [], [], []
        for node, fp, radius in zip(
            record.column("order").to_pylist(),
            record.column("fp").to_pylist(),
            record.column("radius").to_pylist(),
            strict=True,
        ):
            for band, wanted in band_values(from_signed(fp), radius).items():
                for value in wanted:
                    nodes.append(node)
                    probed.append(band)
                    values.append(value)
        yield pa.RecordBatch.from_pydict(
            {"node": nodes, "band": probed, "value": values},
            schema=pa.schema([("node", pa.int64()), ("band", pa.int32()), ("value", pa.int32())]),
        )


def _confirm(
    batches: Iterable[pa.RecordBatch], policy: Policy, max_distance: int
) -> Iterator[pa.RecordBatch]:
    """The candidate pairs (new, old) that ``policy`` admits and confirms, as edges."""
    new_fields = [f"n_{name}" for name in ITEM_FIELDS]
    old_fields = [f"o_{name}" for name in ITEM_FIELDS]
    for record in batches:
        rows = record.to_pydict()
        cache: dict[int, Item] = {}  # a node's Item is built once per batch

        news: list[Item] = []
        olds: list[Item] = []
        for new, old, new_values, old_values in zip(
            rows["new"],
            rows["old"],
            zip(*(rows[name] for name in new_fields), strict=True),
            zip(*(rows[name] for name in old_fields), strict=True),
            strict=True,
        ):
            news.append(cache.get(new) or cache.setdefault(new, make_item(*new_values)))
            olds.append(cache.get(old) or cache.setdefault(old, make_item(*old_values)))
        matches = confirm_candidates(news, olds, rows["shared"], Rule(policy, max_distance))
        confirmed = [
            (new, old, m.distance, m.measure, m.score)
            for new, old, m in zip(rows["new"], rows["old"], matches, strict=True)
            if m is not None
        ]
        yield pa.RecordBatch.from_arrays(
            [
                pa.array([row[i] for row in confirmed], type=f.type)
                for i, f in enumerate(_EDGE_SCHEMA)
            ],
            schema=_EDGE_SCHEMA,
        )


def replay(nodes: pa.Table, edges: pa.Table) -> pa.Table:
    """One component in input order: ``batch.replay`` over its nodes, with each class's edges
    given to every member that comes after the other end (see the module docstring)."""
    rows = nodes.to_pydict()
    count = len(rows["order"])
    entries = sorted(range(count), key=rows["order"].__getitem__)
    position = {rows["order"][entry]: i for i, entry in enumerate(entries)}
    outgoing: dict[int, list[tuple[int, int, str | None, float | None]]] = {}
    for new, old, distance, measure, score in zip(
        *(
            edges.column(name).to_pylist()
            for name in ("new", "old", "distance", "measure", "score")
        ),
        strict=True,
    ):
        outgoing.setdefault(new, []).append((old, distance, measure, score))
    replay_edges: list[batch.Edge] = []
    for i, entry in enumerate(entries):
        node = rows["node"][entry]
        for old, distance, measure, score in outgoing.get(node, ()):
            j = position[old]
            if j < i:
                replay_edges.append(batch.Edge(i, j, distance, measure, score))
        if rows["follower"][entry]:
            replay_edges.append(
                batch.Edge(
                    i,
                    position[node],
                    rows["self_distance"][entry],
                    rows["self_measure"][entry],
                    rows["self_score"][entry],
                )
            )
    keys = [rows["key"][entry] for entry in entries]
    moments = [_moment(rows["moment"][entry]) for entry in entries]
    verdicts = batch.replay(keys, replay_edges, moments=moments)
    wanted = [i for i, entry in enumerate(entries) if not rows["prior"][entry]]
    columns: list[list[Any]] = [
        [rows["order"][entries[i]] for i in wanted],
        [verdicts[i].key for i in wanted],
        [verdicts[i].kept for i in wanted],
        [verdicts[i].duplicate_of for i in wanted],
        [verdicts[i].distance for i in wanted],
        [verdicts[i].measure for i in wanted],
        [verdicts[i].score for i in wanted],
    ]
    return pa.Table.from_arrays(
        [pa.array(values, type=f.type) for values, f in zip(columns, _VERDICT_SCHEMA, strict=True)],
        schema=_VERDICT_SCHEMA,
    )


def sign_batches(
    preset: Preset, policy: Policy, max_distance: int, moment: int
) -> Callable[[Iterable[pa.RecordBatch]], Iterable[pa.RecordBatch]]:
    def run(batches: Iterable[pa.RecordBatch]) -> Iterable[pa.RecordBatch]:
        return _sign(batches, preset, policy, max_distance, moment)

    return run


def set_aside_batches(
    policy: Policy,
) -> Callable[[Iterable[pa.RecordBatch]], Iterable[pa.RecordBatch]]:
    def run(batches: Iterable[pa.RecordBatch]) -> Iterable[pa.RecordBatch]:
        return _set_aside(batches, policy)

    return run


def self_batches(
    policy: Policy, max_distance: int
) -> Callable[[Iterable[pa.RecordBatch]], Iterable[pa.RecordBatch]]:
    def run(batches: Iterable[pa.RecordBatch]) -> Iterable[pa.RecordBatch]:
        return _self_confirm(batches, policy, max_distance)

    return run


def confirm_batches(
    policy: Policy, max_distance: int
) -> Callable[[Iterable[pa.RecordBatch]], Iterable[pa.RecordBatch]]:
    def run(batches: Iterable[pa.RecordBatch]) -> Iterable[pa.RecordBatch]:
        return _confirm(batches, policy, max_distance)

    return run
