"""One policy through a real SimStore: cold pairs, a three-day stream, the sample corpus (issue 14).

Run from the repository root (builds the dataset first when it is missing; see
``build_dataset.py`` and ``hard.py``)::

    python -m benchmarks quality [--policy default|min_bands=1|...]
        [--split tune|test] [--classes all|old|new] [--json out.json] [--diagnose] [--save]
    python -m benchmarks quality --candidates [--split tune|test] [--save]

``--policy`` is ``default`` (``MinHashVerification()``), ``simhash`` (``Verification()``),
``plain`` (no verification, SimHash k <= 3) or comma-separated ``MinHashVerification`` keywords
(``min_bands=1``, ``min_bands=1,threshold=0.6``). Every number is a decision of a real
``simstore.store.SimStore`` on an SQLite file in a temporary folder:

1. **Cold pairs** (the chosen half, hard cases included): pairs are shuffled (seeded) and taken 50
   at a time into a fresh namespace, as ``a1, b1, a2, b2, ...`` through one ``add_many`` (each b
   added one second after its a); a pair is called a duplicate when b's decision is "duplicate of
   a". A pair whose a was not kept, or whose b matched anything but its own a, is redone alone in a
   namespace of its own, so every number is the decision of a store that holds the pair's a and at
   most 49 unrelated texts. Precision, recall and F1 per group (zh/en x short/mid/long), then per
   kind (the share called duplicate).
2. **The stream**: every text of the half's pairs arrives once over three days through ONE store
   with ``keep="2d"`` (``add_many(..., at=...)`` in time order). Texts are labelled by cluster (the
   connected components of the half's duplicate pairs); a cluster's later members arrive within a
   day of its first or 49..70 hours after it. A "duplicate" decision is correct when it points into
   the text's own cluster at a text inside the window; a text should be a duplicate when the store
   holds a kept member of its cluster inside the window at that moment. A decision that points into
   another cluster with which the text shares a source family, or of which it is a run (a text and
   a wrapped copy of it, made for two different pairs), but no label is counted apart as
   unlabelled, not scored; every other one is a false duplicate. A negative pair's second text is
   of its own source text's family too (``Pair.b_from``: the other text of a nearest, adjacent or
   random pair, and the text under a template's wrapping, an inserted phrase or a shared footer).
3. **The sample corpus** (``examples/corpus.jsonl``, written by ``examples/make_corpus.py``, whose
   ``group`` field names the original a record was made from): all records in file order through
   one store; the share of reported duplicates that point into another group, and the share of
   in-group duplicates (records whose group has an earlier record; 1,886) that are found.

``--classes old`` keeps only the pairs of the kinds made before ``differences.py`` (the same pairs,
in the same order, so those figures are reproducible); ``new`` only its kinds (words replaced,
identity swaps, version bumps, symbols, recurring footers: marked ``+`` in the kind table). Texts
identical after the benchmark's normalisation (``differences.same_normalised``) count as
duplicates whatever their labels say: a non-duplicate pair of such texts is scored as a duplicate,
and in the stream such texts are one cluster. Pairs of one recurring footer (``Pair.burst``) are
sent within one day of the stream.

``--candidates`` prints instead the candidate recall at the confirm rule
(``candidate_recall.py``). ``--save`` also writes what is printed to ``benchmarks/results/``
under a name made of the command's options and the date.

``--diagnose`` adds, for the false merges of the cold pairs, their kinds and the median exact
Jaccard of character 5-grams of the normalised texts, and for the misses, whether the pair ever
became a MinHash-LSH candidate (shares ``min_bands`` band keys; computed offline with
``simstore.text.minhash`` over ``simstore.text._algorithms.default_normalise``, read-only use of internals
for diagnosis only).
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import io
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import simstore
from benchmarks.common.results import result_path
from benchmarks.quality import build_dataset, dataset, differences
from benchmarks.quality.build_dataset import Pair
from benchmarks.quality.differences import NEW_KINDS, same_normalised
from simstore.policy.policies import MinHashVerification
from simstore.store import SimStore

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "corpus.jsonl"
GROUPS = ("zh-short", "zh-mid", "zh-long", "en-short", "en-mid", "en-long")
BATCH = 50
START = datetime(2026, 1, 5)
WINDOW = timedelta(days=2)
SEED = 14


# --- the policy ---------------------------------------------------------------------------------


def make_policy(spec: str) -> tuple[str, Any]:
    """(label, policy object or None) for a ``--policy`` value."""
    if spec == "default":
        return "MinHashVerification()", MinHashVerification()
    if spec == "plain":
        return "no verification (SimHash k <= 3)", None
    if spec == "simhash":  # SimHashVerification, or its older name Verification
        from simstore.policy.policies import SimHashVerification as simhash

        return f"{simhash.__name__}()", simhash()
    options: dict[str, Any] = {}
    for part in spec.split(","):
        name, _, raw = part.partition("=")
        value: Any = raw
        for kind in (int, float):
            try:
                value = kind(raw)
                break
            except ValueError:
                continue
        if raw in ("True", "False", "true", "false"):
            value = raw.lower() == "true"
        if raw in ("None", "none"):
            value = None
        options[name.strip()] = value
    policy = MinHashVerification(**options)
    label = ", ".join(f"{k}={v!r}" for k, v in options.items())
    return f"MinHashVerification({label})", policy


def open_store(url: str, policy: Any, **options: Any) -> SimStore:
    """A store with ``policy``, by whichever keyword this simstore takes it (``policy`` or
    ``verification``), so that the benchmark follows the public API as it moves."""
    parameters = inspect.signature(SimStore).parameters
    keyword = "policy" if "policy" in parameters else "verification"
    return SimStore(url, **{keyword: policy}, **options)


# --- scores -------------------------------------------------------------------------------------


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def prf(self) -> tuple[float, float, float]:
        precision = self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0
        recall = self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return precision, recall, f1

    def tally(self, label: int, yes: bool) -> None:
        """Count one pair: its label (1: a duplicate) and whether it was called one."""
        if yes and label:
            self.tp += 1
        elif yes:
            self.fp += 1
        elif label:
            self.fn += 1

    def cells(self) -> str:
        p, r, f = self.prf()
        return f"{p:.3f} {r:.3f} {f:.3f}"


def prf_dict(counts: Counts) -> dict[str, float | int]:
    p, r, f = counts.prf()
    return {"precision": p, "recall": r, "f1": f, "tp": counts.tp, "fp": counts.fp, "fn": counts.fn}


# --- 1. cold pairs ------------------------------------------------------------------------------


def decide_pairs(pairs: Sequence[Pair], policy: Any, folder: Path) -> tuple[list[bool], int]:
    """Whether the store calls each pair a duplicate, and how many pairs were redone alone."""
    url = f"sqlite:///{folder}/pairs.db"
    order = list(range(len(pairs)))
    random.Random(SEED).shuffle(order)
    predicted = [False] * len(pairs)
    redo: list[int] = []
    for start in range(0, len(order), BATCH):
        chosen = order[start : start + BATCH]
        store = open_store(url, policy, namespace=f"batch{start}")
        items = []
        for n, i in enumerate(chosen):
            moment = START + timedelta(seconds=10 * n)
            items.append({"key": f"a{i}", "text": pairs[i].a, "at": moment})
            items.append({"key": f"b{i}", "text": pairs[i].b, "at": moment + timedelta(seconds=1)})
        decisions = list(store.add_many(items))
        for n, i in enumerate(chosen):
            first, second = decisions[2 * n], decisions[2 * n + 1]
            others = [m for m in second.matches if m.key != f"a{i}"]
            if not first.inserted or others:
                redo.append(i)
                continue
            predicted[i] = not second.inserted and second.duplicate_of is not None
        store.close()
    for i in redo:
        store = open_store(url, policy, namespace=f"alone{i}")
        store.add(pairs[i].a, key="a", at=START)
        decision = store.add(pairs[i].b, key="b", at=START + timedelta(seconds=1))
        predicted[i] = decision.duplicate_of is not None and decision.duplicate_of.key == "a"
        store.close()
    return predicted, len(redo)


def kind_of(pair: Pair) -> str:
    """The kind a pair is reported under: its kind, edits grouped by their first edit."""
    if pair.label:
        head, _, edit = pair.kind.partition(":")
        return f"{head}:edit" if edit else pair.kind.split("+")[0]
    return pair.kind


HARD_KINDS = frozenset(
    {
        "copyright",
        "man_family",
        "man_roff",
        "package_siblings",
        "shared_footer",
        "table_frame",
        "lookalike",
        "table_box_ascii",
        "man_reflow",
        "copyright:edit",
        "man:edit",
        "package:edit",
    }
)


def label_of(pair: Pair) -> int:
    """The label a pair is scored by: texts identical after the benchmark's normalisation are
    duplicates whatever their source (``DESIGN.md``), nothing looser."""
    return 1 if pair.label or same_normalised(pair.a, pair.b) else 0


def is_new(pair: Pair) -> bool:
    """Whether a pair is of a kind of ``differences.py``."""
    return kind_of(pair) in NEW_KINDS


def pair_tables(pairs: Sequence[Pair], predicted: Sequence[bool]) -> dict[str, Any]:
    by_group: dict[str, Counts] = defaultdict(Counts)
    old: dict[str, Counts] = defaultdict(Counts)
    base: dict[str, Counts] = defaultdict(Counts)
    by_kind: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
    by_group_kind: dict[tuple[str, int, str], list[int]] = defaultdict(lambda: [0, 0])
    relabelled = 0
    for pair, yes in zip(pairs, predicted, strict=True):
        label = label_of(pair)
        relabelled += label != pair.label
        uses = (
            (by_group, True),
            (old, not is_new(pair)),
            (base, kind_of(pair) not in HARD_KINDS and not is_new(pair)),
        )
        for table, use in uses:
            if not use:
                continue
            table[pair.group].tally(label, yes)
        place = by_group_kind[(kind_of(pair), label, pair.group)]
        place[0] += 1
        place[1] += int(yes)
        cell = by_kind[(kind_of(pair), label)]
        cell[0] += 1
        cell[1] += int(yes)
    return {
        "groups": by_group,
        "old": old,
        "base": base,
        "kinds": by_kind,
        "group_kinds": by_group_kind,
        "relabelled": relabelled,
    }


def print_pairs(tables: dict[str, Any], split: str, redone: int, total: int) -> None:
    print(f"\n## 1. Cold pairs ({split} half; {total} pairs, {redone} redone alone)")
    print(
        f"{'group':<9} | {'every class: P  R     F1':<24} {'':<20} | {'old classes: P R F1':<19}"
        f" | {'base benchmark only: P R F1':<27}"
    )
    pooled, pooled_old = Counts(), Counts()
    for group in GROUPS:
        counts = tables["groups"].get(group, Counts())
        old = tables["old"].get(group, Counts())
        for total_, part in ((pooled, counts), (pooled_old, old)):
            total_.tp, total_.fp, total_.fn = (
                total_.tp + part.tp,
                total_.fp + part.fp,
                total_.fn + part.fn,
            )
        base = tables["base"].get(group, Counts())
        n = counts.tp + counts.fn
        print(
            f"{group:<9} | {counts.cells()}  ({n:>4} dups, {counts.fp:>3} FP) | {old.cells()}"
            f"   | {base.cells()}"
        )
    print(f"{'all':<9} | {pooled.cells()}  {'':<20} | {pooled_old.cells()}")
    print(
        f"(non-duplicate pairs scored as duplicates, identical after normalisation: "
        f"{tables['relabelled']})"
    )
    print(
        "\nper kind: label, pairs, share called duplicate (recall for dups, false-merge rate else)"
    )
    rows = sorted(tables["kinds"].items(), key=lambda kv: (-kv[0][1], kv[0][0]))
    for (kind, label), (n, yes) in rows:
        mark = "*" if kind in HARD_KINDS else "+" if kind in NEW_KINDS else " "
        print(f"  {mark}{kind:<22} {'dup' if label else 'not':<4} {n:>5}  {yes / n:.3f}")
    print("  (* = hard cases of hard.py, + = differences.py)")
    print("\nper kind and group: share called duplicate (pairs)")
    print(f"  {'kind':<23} {'':<4}" + "".join(f" {g:>14}" for g in GROUPS))
    for (kind, label), _cell in rows:
        cells = ""
        for group in GROUPS:
            n, yes = tables["group_kinds"].get((kind, label, group), (0, 0))
            cells += f" {yes / n:>7.3f} ({n:>4})" if n else f" {'':>14}"
        mark = "*" if kind in HARD_KINDS else "+" if kind in NEW_KINDS else " "
        print(f"  {mark}{kind:<22} {'dup' if label else 'not':<4}{cells}")


# --- diagnosis ----------------------------------------------------------------------------------


def diagnose(pairs: Sequence[Pair], predicted: Sequence[bool], policy: Any) -> dict[str, Any]:
    """False merges by kind with their median 5-gram Jaccard; misses by candidate status."""
    from simstore.text import minhash
    from simstore.text._algorithms import default_normalise

    prepare = getattr(policy, "prepare", lambda text: text)
    min_bands = getattr(policy, "min_bands", 2)

    def normal(text: str) -> str:
        return default_normalise(prepare(text))

    def grams(text: str, n: int = 5) -> set[str]:
        return {text[i : i + n] for i in range(max(1, len(text) - n + 1))}

    def jaccard5(a: str, b: str) -> float:
        left, right = grams(a), grams(b)
        return len(left & right) / len(left | right) if left | right else 1.0

    false_merges = [p for p, yes in zip(pairs, predicted, strict=True) if yes and not p.label]
    misses = [p for p, yes in zip(pairs, predicted, strict=True) if not yes and p.label]
    report: dict[str, Any] = {"false_merges": {}, "misses": {}}
    by_kind: dict[str, list[float]] = defaultdict(list)
    for pair in false_merges:
        by_kind[f"{pair.group} {kind_of(pair)}"].append(jaccard5(normal(pair.a), normal(pair.b)))
    every = [j for values in by_kind.values() for j in values]
    print(
        f"\n## Diagnosis: {len(false_merges)} false merges, median 5-gram Jaccard "
        f"{statistics.median(every) if every else float('nan'):.3f}"
    )
    for name, values in sorted(by_kind.items(), key=lambda kv: -len(kv[1])):
        print(f"  {name:<32} {len(values):>4}  median J5 {statistics.median(values):.3f}")
        report["false_merges"][name] = {
            "count": len(values),
            "median_j5": statistics.median(values),
        }
    report["false_merges_median_j5"] = statistics.median(every) if every else None
    texts = [normal(t) for pair in misses for t in (pair.a, pair.b)]
    layout = getattr(policy, "minhash_bands", minhash.LAYOUT)  # the keys the policy stores
    keys = minhash.band_keys(minhash.signatures(texts), layout) if texts else []
    never: Counter[str] = Counter()
    total: Counter[str] = Counter()
    j5_never: list[float] = []
    for n, pair in enumerate(misses):
        shared = len(set(keys[2 * n].tolist()) & set(keys[2 * n + 1].tolist()))
        total[pair.group] += 1
        if shared < min_bands:
            never[pair.group] += 1
            j5_never.append(jaccard5(texts[2 * n], texts[2 * n + 1]))
    count = sum(total.values())
    print(
        f"  misses: {count}; never candidates (< {min_bands} shared band keys): "
        f"{sum(never.values())} ({sum(never.values()) / max(1, count):.0%}); their median J5 "
        f"{statistics.median(j5_never) if j5_never else float('nan'):.3f}"
    )
    for group in GROUPS:
        if total[group]:
            print(f"    {group:<9} {total[group]:>4} misses, {never[group]:>4} never candidates")
    report["misses"] = {
        "count": count,
        "never_candidates": sum(never.values()),
        "by_group": {g: [total[g], never[g]] for g in GROUPS if total[g]},
        "median_j5_never": statistics.median(j5_never) if j5_never else None,
    }
    return report


# --- 2. the stream ------------------------------------------------------------------------------


class Clusters:
    """Union-find over texts, joined by the duplicate pairs."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, text: str) -> str:
        self.parent.setdefault(text, text)
        while self.parent[text] != text:
            self.parent[text] = self.parent[self.parent[text]]
            text = self.parent[text]
        return text

    def join(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)


def stream_items(pairs: Sequence[Pair]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The stream (one item per distinct text, in time order) and what scoring needs."""
    clusters = Clusters()
    families: dict[str, set[str]] = defaultdict(set)
    groups: dict[str, str] = {}
    bursts: dict[str, str] = {}
    for pair in pairs:
        for text in (pair.a, pair.b):
            if pair.burst:
                bursts.setdefault(text, pair.burst)
        for text in (pair.a, pair.b):
            clusters.find(text)
            families[text].add(build_dataset.split_key(pair.family))
            groups.setdefault(text, pair.group)
        if pair.b_from:  # b is another text's, with something added: related to that one too
            families[pair.b].add(build_dataset.split_key(pair.b_from))
        if pair.label:
            clusters.join(pair.a, pair.b)
    # texts identical after normalisation are duplicates whatever their source: joined after the
    # labels, so that clusters the labels make alone keep their roots (and the stream its draws)
    by_normal: dict[str, str] = {}
    joined = 0
    for text in list(clusters.parent):
        first = by_normal.setdefault(differences.normalised(text), text)
        if clusters.find(text) != clusters.find(first):
            clusters.join(text, first)
            joined += 1
    negatives = {frozenset((p.a, p.b)): kind_of(p) for p in pairs if not label_of(p)}
    kinds: dict[str, set[str]] = defaultdict(set)
    for pair in pairs:
        kinds[pair.a].add(kind_of(pair))
        kinds[pair.b].add(kind_of(pair))
    members: dict[str, list[str]] = defaultdict(list)
    for text in clusters.parent:
        members[clusters.find(text)].append(text)
    rng = random.Random(SEED)
    items = []
    horizon = 72 * 3600
    # one recurring footer's texts arrive within one day (their own draws: the other clusters'
    # times are those of a stream without bursts)
    days = random.Random(f"{SEED}:bursts")
    burst_start = {name: days.uniform(0, 48 * 3600) for name in sorted(set(bursts.values()))}
    for root in sorted(members, key=lambda t: hashlib.sha256(t.encode()).hexdigest()):
        texts = sorted(members[root])
        rng.shuffle(texts)
        delays = [0.0] + [
            rng.uniform(0, 24 * 3600) if rng.random() < 0.8 else rng.uniform(49 * 3600, 70 * 3600)
            for _ in texts[1:]
        ]
        start = rng.uniform(0, horizon - max(delays))
        burst = next((bursts[t] for t in texts if t in bursts), None)
        if burst is not None:
            start = min(burst_start[burst] + days.uniform(0, 20 * 3600), horizon - max(delays))
        for text, delay in zip(texts, delays, strict=True):
            items.append({"text": text, "seconds": start + delay, "cluster": root})
    items.sort(key=lambda item: item["seconds"])
    for n, item in enumerate(items):
        item["key"] = f"s{n}"
        item["at"] = START + timedelta(seconds=item["seconds"])
    facts = {
        "negatives": negatives,
        "families": families,
        "groups": groups,
        "kinds": kinds,
        "joined": joined,
        "bursts": len(burst_start),
    }
    return items, facts


def run_stream(pairs: Sequence[Pair], policy: Any, folder: Path) -> dict[str, Any]:
    items, facts = stream_items(pairs)
    store = open_store(f"sqlite:///{folder}/stream.db", policy, namespace="stream", keep="2d")
    started = time.perf_counter()
    decisions = []
    for start in range(0, len(items), 200):
        chunk = items[start : start + 200]
        decisions += list(
            store.add_many({"key": i["key"], "text": i["text"], "at": i["at"]} for i in chunk)
        )
    elapsed = time.perf_counter() - started
    store.close()
    targets = [None if d.duplicate_of is None else d.duplicate_of.key for d in decisions]
    scored = score_stream(items, targets, facts)
    return {
        "items": len(items),
        "clusters": len({i["cluster"] for i in items}),
        **scored,
        "seconds": elapsed,
        "joined_as_identical": facts["joined"],
        "bursts": facts["bursts"],
    }


def _content(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def inside(a: str, b: str) -> bool:
    """One text's letters and digits, in order, are a run of the other's (a text and a copy of
    it wrapped in something else): an unlabelled relation, not a known non-duplicate."""
    left, right = sorted((_content(a), _content(b)), key=len)
    return bool(left) and left in right


def score_stream(
    items: Sequence[dict[str, Any]], targets: Sequence[str | None], facts: dict[str, Any]
) -> dict[str, Any]:
    """Counts of the stream's decisions; ``targets[i]`` is the key item i was called a duplicate
    of (None: kept). See the module docstring for what is correct."""
    by_key = {item["key"]: item for item in items}
    kept: dict[str, list[datetime]] = defaultdict(list)  # cluster -> times of kept members
    total = Counts()
    groups: dict[str, Counts] = defaultdict(Counts)
    unlabelled = late = 0
    reasons: Counter[str] = Counter()
    for item, target_key in zip(items, targets, strict=True):
        cluster, moment = item["cluster"], item["at"]
        should = any(t > moment - WINDOW for t in kept[cluster])
        counts = groups[facts["groups"][item["text"]]]
        if target_key is None:
            kept[cluster].append(moment)
            if should:
                total.fn += 1
                counts.fn += 1
            continue
        target = by_key[target_key]
        if target["at"] <= moment - WINDOW:
            late += 1  # the store matched a text past its window: always wrong
        if target["cluster"] == cluster and target["at"] > moment - WINDOW:
            total.tp += 1
            counts.tp += 1
            continue
        pair = frozenset((item["text"], target["text"]))
        related = facts["families"][item["text"]] & facts["families"][target["text"]]
        other = target["cluster"] != cluster and pair not in facts["negatives"]
        if other and (related or inside(item["text"], target["text"])):
            unlabelled += 1
        else:
            total.fp += 1
            counts.fp += 1
            if pair in facts["negatives"]:
                negatives = facts["negatives"]  # the pair's kind, when a mapping holds it
                kind = negatives.get(pair) if isinstance(negatives, dict) else None
                reasons["labelled non-duplicate pair" + (f": {kind}" if kind else "")] += 1
            else:  # two texts never paired: name them by the kinds of pairs they come from
                names = [
                    "/".join(sorted(facts.get("kinds", {}).get(t, {"?"})))[:40]
                    for t in (item["text"], target["text"])
                ]
                reasons[" x ".join(sorted(names))] += 1
        if should:
            total.fn += 1
            counts.fn += 1
    return {
        "total": total,
        "groups": groups,
        "unlabelled": unlabelled,
        "past_window": late,
        "false_by_kind": dict(reasons.most_common()),
    }


def print_stream(result: dict[str, Any]) -> None:
    total: Counts = result["total"]
    print(
        f"\n## 2. Stream: {result['items']} texts in {result['clusters']} clusters over three "
        f"days, one store, keep=2d ({result['seconds']:.0f} s)"
    )
    print(f"{'':<9}   P     R     F1     (dups found / should be, false)")
    for group in GROUPS:
        counts = result["groups"].get(group)
        if counts:
            print(
                f"{group:<9} {counts.cells()}  ({counts.tp}/{counts.tp + counts.fn}, {counts.fp})"
            )
    print(f"{'all':<9} {total.cells()}  ({total.tp}/{total.tp + total.fn}, {total.fp})")
    print(
        f"unlabelled cross-cluster decisions (same source family, no label; not scored): "
        f"{result['unlabelled']}; matches past the window: {result['past_window']}"
    )
    print(
        f"clusters joined as identical after normalisation: {result['joined_as_identical']}; "
        f"recurring-footer bursts (one day each): {result['bursts']}"
    )
    print("false duplicates by where the two texts come from (kinds of their pairs):")
    for reason, count in list(result["false_by_kind"].items())[:16]:
        print(f"  {count:>4}  {reason}")


# --- 3. the sample corpus -----------------------------------------------------------------------


def run_corpus(policy: Any, folder: Path, corpus: Path = CORPUS) -> dict[str, Any]:
    records = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    store = open_store(f"sqlite:///{folder}/corpus.db", policy, namespace="corpus")
    decisions = list(store.add_many((r["id"], r["text"]) for r in records))
    store.close()
    group = {r["id"]: r["group"] for r in records}
    seen: set[str] = set()
    in_group = found = reported = crossing = 0
    crossing_edits: Counter[str] = Counter()
    for record, decision in zip(records, decisions, strict=True):
        if record["group"] in seen:
            in_group += 1
        seen.add(record["group"])
        if decision.duplicate_of is None:
            continue
        reported += 1
        if group[decision.duplicate_of.key] == record["group"]:
            found += 1
        else:
            crossing += 1
            crossing_edits[
                f"{record['lang']}-{'long' if len(record['text']) > 500 else 'short'}"
            ] += 1
    return {
        "records": len(records),
        "groups": len(seen),
        "in_group_duplicates": in_group,
        "reported": reported,
        "crossing": crossing,
        "found": found,
        "crossing_share": crossing / reported if reported else 0.0,
        "in_group_recall": found / in_group if in_group else 1.0,
        "crossing_by_group": dict(sorted(crossing_edits.items())),
    }


def print_corpus(result: dict[str, Any]) -> None:
    print(
        f"\n## 3. Sample corpus ({result['records']} records, {result['groups']} groups, "
        f"{result['in_group_duplicates']} in-group duplicates)"
    )
    print(
        f"reported duplicates {result['reported']}; crossing groups {result['crossing']} "
        f"({result['crossing_share']:.1%}); in-group found {result['found']} "
        f"({result['in_group_recall']:.1%}); crossing by lang-size {result['crossing_by_group']}"
    )


# --- main ---------------------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    if isinstance(value, Counts):
        return prf_dict(value)
    if isinstance(value, dict):
        return {
            (k if isinstance(k, str) else "|".join(map(str, k))): jsonable(v)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def load_pairs(data: Path, split: str, classes: str = "all") -> list[Pair]:
    """The pairs of one half: every class, the old ones (made before ``differences.py``) or the
    new ones, in the file's order."""
    if not (data / "pairs.jsonl").exists():
        dataset.build_all(data)
    wanted = {"all": lambda p: True, "old": lambda p: not is_new(p), "new": is_new}[classes]
    return [p for p in build_dataset.load(data) if p.split == split and wanted(p)]


def result_name(args: argparse.Namespace) -> Path:
    """The file ``--save`` writes (``benchmarks.common.results.result_path``): what was run, its
    options and the date."""
    policy = "default" if args.policy == "default" else args.policy.replace("=", "-")
    policy = policy.replace(",", "+")
    if args.candidates:
        return result_path("candidate-recall", args.split, policy, ext="txt")
    return result_path("quality", args.split, f"{args.classes}-classes", policy, ext="txt")


class Tee(io.TextIOBase):
    """Standard output copied to a file (``--save``)."""

    def __init__(self, path: Path) -> None:
        self.file = path.open("w", encoding="utf-8")
        self.stdout = sys.stdout

    def write(self, text: str) -> int:
        self.file.write(text)
        return self.stdout.write(text)

    def flush(self) -> None:
        self.file.flush()
        self.stdout.flush()

    def close(self) -> None:
        sys.stdout = self.stdout
        self.file.close()


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", default="default")
    parser.add_argument("--split", choices=("tune", "test"), default="tune")
    parser.add_argument("--data", type=Path, default=build_dataset.DEFAULT_OUT)
    parser.add_argument("--json", type=Path, help="also write every number to this file")
    parser.add_argument("--diagnose", action="store_true", help="false merges and misses")
    parser.add_argument(
        "--skip", default="", help="comma-separated sections to skip: pairs,stream,corpus"
    )
    parser.add_argument(
        "--classes",
        choices=("all", "old", "new"),
        default="all",
        help="every class, those made before differences.py, or only its new ones",
    )
    parser.add_argument(
        "--candidates",
        action="store_true",
        help="only the candidate recall at the confirm rule (candidate_recall.py)",
    )
    parser.add_argument(
        "--save", action="store_true", help="also write the output to benchmarks/results/"
    )
    args = parser.parse_args(None if argv is None else list(argv))
    tee = None
    if args.save:
        path = result_name(args)
        tee = Tee(path)
        sys.stdout = tee
    try:
        return run(args)
    finally:
        if tee is not None:
            tee.close()
            print(f"(written to {path})")


def run(args: argparse.Namespace) -> int:
    label, policy = make_policy(args.policy)
    skip = set(filter(None, args.skip.split(",")))
    pairs = load_pairs(args.data, args.split, args.classes)
    print(
        f"policy {label}; simstore {simstore.__version__} from {Path(simstore.__file__).parent}; "
        f"{args.split} half: {len(pairs)} pairs ({args.classes} classes)"
    )
    if args.candidates:
        from benchmarks.quality import candidate_recall

        recall = candidate_recall.measure(pairs, policy)
        candidate_recall.print_report(recall)
        if args.json:
            args.json.write_text(json.dumps(jsonable(recall), indent=1, default=str) + "\n")
        return 0
    report: dict[str, Any] = {
        "policy": label,
        "split": args.split,
        "simstore": simstore.__version__,
    }
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        if "pairs" not in skip:
            started = time.perf_counter()
            predicted, redone = decide_pairs(pairs, policy, folder)
            tables = pair_tables(pairs, predicted)
            print_pairs(tables, args.split, redone, len(pairs))
            print(f"({time.perf_counter() - started:.0f} s)")
            report["pairs"] = {**tables, "redone": redone}
            if args.diagnose:
                report["diagnosis"] = diagnose(pairs, predicted, policy)
        if "stream" not in skip:
            report["stream"] = run_stream(pairs, policy, folder)
            print_stream(report["stream"])
        if "corpus" not in skip:
            report["corpus"] = run_corpus(policy, folder)
            print_corpus(report["corpus"])
    if args.json:
        args.json.write_text(json.dumps(jsonable(report), indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
