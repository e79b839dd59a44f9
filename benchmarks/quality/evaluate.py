"""Detection quality of every preset, alone and with short-text verification, on real text.

Run from the repository root (builds the dataset first when it is missing; see
``build_dataset.py``)::

    python -m benchmarks presets [--data benchmarks/data/quality] [--rebuild]

Prints, for the labelled pairs of ``build_dataset.py`` (groups zh/en x short/long; mid-length pairs,
140..500 characters, in their own columns):

1. For every preset in ``simstore.presets()``, precision, recall and F1 per group when a pair is
   called a duplicate at Hamming distance <= k, for k = 0..16, on the held-out ``test`` half; then
   the best single k per preset, chosen on the ``tune`` half (highest mean F1 over the four
   groups) and reported on ``test``.
2. The store's two-step decision: SimHash candidates within a radius K, then an exact measure
   from ``simstore.text.similarity`` (``jaccard`` over character 3-grams, ``cosine`` over words or
   characters, ``edit_ratio``) at a threshold t, with K, measure and t chosen per length class
   (short < 140 <= mid <= 500 < long characters) on ``tune`` to maximise the smaller F1 of the two
   languages, and reported on ``test``. For the default preset, the table over K (best t per K).
3. The cost per decision: microseconds to fingerprint one text (``fingerprint_many``, this
   process's CPU time) and to verify one pair, per length class.

Nothing is tuned on the half it is reported on. ``--json PATH`` also writes every number.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

import simstore
from benchmarks.quality import build_dataset, dataset
from benchmarks.quality.build_dataset import Pair
from simstore.policy.policies import MinHashVerification, SimHashVerification
from simstore.text import similarity

Verification = SimHashVerification

GROUPS = ("zh-short", "zh-long", "en-short", "en-long")  # the four the targets are about
EXTRA = ("zh-mid", "en-mid")
CLASSES = {
    "short": ("zh-short", "en-short"),
    "mid": ("zh-mid", "en-mid"),
    "long": ("zh-long", "en-long"),
}
KS = range(17)
RADII = (*range(3, 17), 24, 64)  # candidate radii for verification; 64 = verify every pair
THRESHOLDS = np.round(np.arange(0.20, 0.951, 0.025), 3)

TARGET = 0.95  # smallest F1 a policy must reach in every group (issue 6)
SHORT_LENGTHS = (140, 200, 300)  # candidate split points, in normalised characters
MEASURES: dict[str, Callable[[str, str], float]] = {
    "jaccard3": lambda a, b: similarity.jaccard(a, b, n=3),
    "cosine-char": lambda a, b: similarity.cosine(a, b, unit="char"),
    "cosine-word": lambda a, b: similarity.cosine(a, b, unit="word"),
    "edit_ratio": similarity.edit_ratio,
}

Bools = npt.NDArray[np.bool_]
Ints = npt.NDArray[np.int64]
Scores = dict[str, npt.NDArray[np.float64]]


@dataclass
class Data:
    pairs: list[Pair]
    labels: Bools
    groups: npt.NDArray[np.str_]
    test: Bools
    texts: list[str]  # unique texts
    a_index: npt.NDArray[np.int64]
    b_index: npt.NDArray[np.int64]


def load_data(directory: Path, rebuild: bool) -> Data:
    if rebuild or not (directory / "pairs.jsonl").exists():
        pairs = dataset.build_all(directory)
    else:
        pairs = build_dataset.load(directory)
    position: dict[str, int] = {}
    for pair in pairs:
        position.setdefault(pair.a, len(position))
        position.setdefault(pair.b, len(position))
    return Data(
        pairs,
        np.array([p.label == 1 for p in pairs]),
        np.array([p.group for p in pairs]),
        np.array([p.split == "test" for p in pairs]),
        list(position),
        np.array([position[p.a] for p in pairs]),
        np.array([position[p.b] for p in pairs]),
    )


def prf(predicted: Bools, truth: Bools) -> tuple[float, float, float]:
    tp = int(np.count_nonzero(predicted & truth))
    fp = int(np.count_nonzero(predicted & ~truth))
    fn = int(np.count_nonzero(~predicted & truth))
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def group_scores(
    data: Data, predicted: Bools, mask: Bools, groups: Sequence[str]
) -> dict[str, tuple[float, float, float]]:
    return {
        g: prf(predicted[mask & (data.groups == g)], data.labels[mask & (data.groups == g)])
        for g in groups
    }


# --- the store's own decision ------------------------------------------------------------------

STORE_POLICIES: dict[str, dict[str, object]] = {
    "default (MinHashVerification())": {},
    "MinHashVerification(strip_social=True, fold_traditional=True)": {
        "policy": MinHashVerification(strip_social=True, fold_traditional=True)
    },
    "MinHashVerification(threshold=0.8, long_threshold=0.8)": {
        "policy": MinHashVerification(threshold=0.8, long_threshold=0.8)
    },
    "SimHashVerification()": {"policy": Verification()},
    "SimHashOnly() (plain k = 3)": {"policy": "simhash-only"},
}


def store_decisions(data: Data, mask: Bools, **options: object) -> tuple[Bools, float]:
    """Whether a real SimStore (SQLite file) calls each pair of ``mask`` a duplicate: text a is
    added, text b queried, a removed again. Also the mean milliseconds per pair (add+query+remove).
    """
    predicted = np.zeros(len(data.pairs), dtype=bool)
    with tempfile.TemporaryDirectory() as folder:
        store = simstore.SimStore(f"sqlite:///{folder}/quality.db", **options)  # type: ignore[arg-type]
        started = time.perf_counter()
        for i in np.flatnonzero(mask).tolist():
            key = f"a{i}"
            store.add(data.pairs[i].a, key=key)
            predicted[i] = any(match.key == key for match in store.query(data.pairs[i].b))
            store.remove(key)
        elapsed = time.perf_counter() - started
        store.close()
    return predicted, elapsed * 1000 / max(1, int(mask.sum()))


def store_section(data: Data) -> dict[str, object]:
    """Section 0: the store's full decision (candidates + verification) with its defaults."""
    print("\n## The store's own decision (SimStore on SQLite; a added, b queried; test half)")
    print(header("policy"))
    results: dict[str, object] = {}
    for label, options in STORE_POLICIES.items():
        predicted, millis = store_decisions(data, data.test, **options)
        line, _mean = row("", data, predicted, data.test)
        print(f"{label}  ({millis:.2f} ms per add+query+remove)\n{line}")
        results[label] = group_scores(data, predicted, data.test, GROUPS + EXTRA)
    return results


# --- fingerprints ------------------------------------------------------------------------------


def distances(
    data: Data, preset: str | simstore.Preset
) -> tuple[npt.NDArray[np.int64], dict[str, float]]:
    """Hamming distance of every pair under ``preset``, and microseconds per text by length."""
    simstore.fingerprint_many(["warm up 预热"], preset=preset)  # loads jieba's dictionary once
    fingerprints = np.zeros(len(data.texts), dtype=np.uint64)
    cost: dict[str, float] = {}
    lengths = np.array([len(t) for t in data.texts])
    classes = {
        "short": lengths < 140,
        "mid": (lengths >= 140) & (lengths <= 500),
        "long": lengths > 500,
    }
    for name, mask in classes.items():
        chosen = np.flatnonzero(mask)
        texts = [data.texts[i] for i in chosen]
        started = time.process_time()
        values = simstore.fingerprint_many(texts, preset=preset)
        cost[name] = (time.process_time() - started) / max(1, len(texts)) * 1e6
        fingerprints[chosen] = np.array(values, dtype=np.uint64)
    xor = fingerprints[data.a_index] ^ fingerprints[data.b_index]
    return np.bitwise_count(xor).astype(np.int64), cost


# --- exact measures ----------------------------------------------------------------------------


def measure_scores(
    data: Data,
) -> tuple[dict[str, npt.NDArray[np.float64]], dict[str, dict[str, float]]]:
    """Every measure on every pair, and its cost (microseconds per pair) by length class."""
    scores: dict[str, npt.NDArray[np.float64]] = {}
    cost: dict[str, dict[str, float]] = {}
    size = np.array([p.size for p in data.pairs])
    for name, measure in MEASURES.items():
        values = np.zeros(len(data.pairs))
        cost[name] = {}
        for cls in CLASSES:
            chosen = np.flatnonzero(size == cls)
            started = time.process_time()
            for i in chosen:
                values[i] = measure(data.pairs[i].a, data.pairs[i].b)
            cost[name][cls] = (time.process_time() - started) / max(1, len(chosen)) * 1e6
        scores[name] = values
    return scores, cost


# --- printing ----------------------------------------------------------------------------------


def fmt(score: tuple[float, float, float]) -> str:
    return f"{score[0]:.2f} {score[1]:.2f} {score[2]:.3f}"


def header(first: str) -> str:
    columns = "".join(f" | {g:^16}" for g in GROUPS)
    extra = "".join(f" | {g + ' F1':>9}" for g in EXTRA)
    return f"{first:>10}{columns} | {'mean F1':>7}{extra}\n{'':>10}" + " | P    R    F1   " * len(
        GROUPS
    )


def row(first: str, data: Data, predicted: Bools, mask: Bools) -> tuple[str, float]:
    main = group_scores(data, predicted, mask, GROUPS)
    extra = group_scores(data, predicted, mask, EXTRA)
    mean = float(np.mean([s[2] for s in main.values()]))
    cells = "".join(f" | {fmt(main[g])}" for g in GROUPS)
    extras = "".join(f" | {extra[g][2]:>9.3f}" for g in EXTRA)
    return f"{first:>10}{cells} | {mean:>7.3f}{extras}", mean


def mean_f1(data: Data, predicted: Bools, mask: Bools) -> float:
    return float(np.mean([s[2] for s in group_scores(data, predicted, mask, GROUPS).values()]))


# --- store policies ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """Duplicate when distance <= radius and (measure is None or score >= threshold)."""

    radius: int
    measure: str | None = None
    threshold: float = 0.0

    def __str__(self) -> str:
        if self.measure is None:
            return f"k <= {self.radius}"
        radius = "any k" if self.radius >= 64 else f"k <= {self.radius}"
        return f"{radius} + {self.measure} >= {self.threshold:g}"

    def predict(
        self, dist: npt.NDArray[np.int64], scores: dict[str, npt.NDArray[np.float64]]
    ) -> Bools:
        predicted = dist <= self.radius
        if self.measure is not None:
            predicted &= scores[self.measure] >= self.threshold
        return predicted


@dataclass(frozen=True)
class Policy:
    """The store's decision: texts whose normalised length is under ``short_length`` use
    ``short``, the others ``long`` (the shape of ``simstore.policy.policies.Verification``)."""

    short_length: int
    short: Rule
    long: Rule

    def __str__(self) -> str:
        return f"normalised length < {self.short_length}: {self.short}; else: {self.long}"


def all_rules(max_radius: int) -> list[Rule]:
    rules = [Rule(k) for k in KS if k <= max_radius]
    for radius in RADII:
        if radius <= max_radius:
            for measure in MEASURES:
                rules += [Rule(radius, measure, float(t)) for t in THRESHOLDS]
    return rules


def rule_counts(
    rules: list[Rule],
    dist: npt.NDArray[np.int64],
    scores: dict[str, npt.NDArray[np.float64]],
    labels: Bools,
    group_ids: npt.NDArray[np.int64],
    mask: Bools,
    groups: int,
) -> npt.NDArray[np.int64]:
    """(rules, groups, 2) counts of predicted duplicates that are true and false, within ``mask``."""
    out = np.zeros((len(rules), groups, 2), dtype=np.int64)
    ids = group_ids[mask]
    truth = labels[mask]
    d = dist[mask]
    masked = {name: values[mask] for name, values in scores.items()}
    for r, rule in enumerate(rules):
        predicted = rule.predict(d, masked)
        out[r, :, 0] = np.bincount(ids[predicted & truth], minlength=groups)
        out[r, :, 1] = np.bincount(ids[predicted & ~truth], minlength=groups)
    return out


def search_policy(
    data: Data,
    dist: Ints,
    scores: Scores,
    qlen: Ints,
    max_radius: int = 64,
    target: float | None = TARGET,
) -> tuple[Policy, float]:
    """A policy chosen on the ``tune`` half, and its smallest F1 over the six groups there.

    With a ``target``: the cheapest policy whose smallest F1 reaches it (smallest radii, a plain
    long side before a verified one), ties to the higher mean F1; when none does, the highest
    smallest F1. Without a target: the highest smallest F1, then mean F1, then the cheapest.
    """
    names = GROUPS + EXTRA
    group_ids = np.array([names.index(g) for g in data.groups])
    tune = ~data.test
    positives = np.bincount(group_ids[tune & data.labels], minlength=len(names))
    short_rules = all_rules(max_radius)
    long_rules = all_rules(max_radius)
    long_cost = np.array([r.radius + (0.5 if r.measure else 0.0) for r in long_rules])
    best: tuple[float, float, float] | None = None
    chosen = (Policy(0, Rule(0), Rule(0)), 0.0)
    for length in SHORT_LENGTHS:
        in_short = qlen < length
        s = rule_counts(
            short_rules, dist, scores, data.labels, group_ids, tune & in_short, len(names)
        )
        lo = rule_counts(
            long_rules, dist, scores, data.labels, group_ids, tune & ~in_short, len(names)
        )
        for i, rule in enumerate(short_rules):
            tp = s[i, :, 0] + lo[:, :, 0]
            fp = s[i, :, 1] + lo[:, :, 1]
            precision = np.where(tp + fp > 0, tp / np.maximum(1, tp + fp), 1.0)
            recall = np.where(positives > 0, tp / np.maximum(1, positives), 1.0)
            f1 = 2 * precision * recall / np.maximum(1e-12, precision + recall)
            worst, mean = f1.min(axis=1).round(4), f1.mean(axis=1).round(4)
            cost = rule.radius + (0.5 if rule.measure else 0.0) + long_cost
            if target is not None:
                reached = worst >= target
                primary = np.where(reached, 1.0, 0.0)
                secondary = np.where(reached, -cost, worst)
                tertiary = mean
            else:  # the best smallest F1, then the best mean, then the cheapest
                primary, secondary, tertiary = worst, mean, -cost
            j = int(np.lexsort((-tertiary, -secondary, -primary))[0])
            key = (float(primary[j]), float(secondary[j]), float(tertiary[j]))
            if best is None or key > best:
                best = key
                chosen = (Policy(length, rule, long_rules[j]), float(worst[j]))
    return chosen


def apply(policy: Policy, dist: Ints, scores: Scores, qlen: Ints) -> Bools:
    """The policy's decision on every pair (the short or long rule by normalised length)."""
    short = qlen < policy.short_length
    predicted = short & policy.short.predict(dist, scores)
    predicted |= ~short & policy.long.predict(dist, scores)
    return predicted


# --- a store full of other texts ---------------------------------------------------------------


def population(
    data: Data, preset: str, policy: Policy, verify_cost: dict[str, dict[str, float]]
) -> list[str]:
    """What a store of 1M unrelated texts adds: false candidates and false positives per query.

    Random pairs of the texts the pairs were made from (one per family, so no labelled duplicate
    among them) stand in for a store's other contents; their distance distribution, scaled to 1M
    stored texts, gives the candidates a query must verify at each radius.
    """
    lines = []
    first: dict[str, str] = {}
    for pair in data.pairs:
        first.setdefault(pair.family, pair.a)
    for size, rule in (("short", policy.short), ("long", policy.long)):
        texts = sorted({t for t in first.values() if (len(t) < 140) == (size == "short")})
        rng = np.random.default_rng(6)
        texts = [texts[i] for i in rng.permutation(len(texts))[:5000]]
        fps = np.array(simstore.fingerprint_many(texts, preset=preset), dtype=np.uint64)
        counts = np.zeros(65, dtype=np.int64)
        close: list[tuple[int, int, int]] = []
        for i in range(len(fps) - 1):
            d = np.bitwise_count(fps[i + 1 :] ^ fps[i])
            counts += np.bincount(d, minlength=65)
            for j in np.flatnonzero(d <= min(16, rule.radius)):
                close.append((int(d[j]), i, i + 1 + int(j)))
        total = len(fps) * (len(fps) - 1) // 2
        cumulative = np.cumsum(counts) / max(1, total) * 1e6
        cells = " ".join(f"k{k}={cumulative[k]:.3g}" for k in (3, 5, 7, 10, 12, 16))
        lines.append(
            f"{size:<5} ({len(texts)} texts, {total:,} random pairs) candidates per query per 1M stored: {cells}"
        )
        if rule.measure is not None and rule.radius < 64:
            verified = close if len(close) <= 2000 else random.Random(6).sample(close, 2000)
            passed = sum(
                MEASURES[rule.measure](texts[i], texts[j]) >= rule.threshold for _, i, j in verified
            )
            per_query = cumulative[rule.radius]
            cls = "short" if size == "short" else "long"
            lines.append(
                f"      at {rule}: {per_query:.3g} candidates to verify per query per 1M stored "
                f"(~{per_query * verify_cost[rule.measure][cls]:.0f} us of {rule.measure}); "
                f"{passed} of {len(verified)} sampled random candidates pass the threshold"
            )
    return lines


# --- the report --------------------------------------------------------------------------------


def normalised_lengths(data: Data) -> npt.NDArray[np.int64]:
    """The normalised length of each pair's second text, the one a store would be asked about."""
    try:
        from simstore.text._algorithms import default_normalise
    except ImportError:  # pragma: no cover - the layout of simstore changed
        return np.array([len(p.b) for p in data.pairs])
    return np.array([len(default_normalise(p.b)) for p in data.pairs])


def preset_variants() -> dict[str, simstore.Preset]:
    """Every built-in preset, plus the default with other n-gram widths (candidates to succeed it)."""
    chosen = {name: simstore.get_preset(name) for name in simstore.presets()}
    default = simstore.get_preset("default")
    if "ngram" in default.params:
        for width in (2, 3):
            if width != default.params["ngram"]:
                chosen[f"{default.name}[ngram={width}]"] = default.with_params(ngram=width)
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=build_dataset.DEFAULT_OUT)
    parser.add_argument("--rebuild", action="store_true", help="rebuild the dataset first")
    parser.add_argument("--presets", default="", help="comma-separated presets (default: all)")
    parser.add_argument("--json", type=Path, help="also write every number to this file")
    parser.add_argument(
        "--store-only", action="store_true", help="only the store's own decisions (section 0)"
    )
    args = parser.parse_args(argv)

    data = load_data(args.data, args.rebuild)
    test = data.test
    variants = preset_variants()
    wanted = [p for p in args.presets.split(",") if p]
    presets = {n: p for n, p in variants.items() if not wanted or n in wanted}
    default = simstore.get_preset("default").name
    presets.setdefault(default, simstore.get_preset(default))
    names = list(presets)
    print(
        f"{len(data.pairs)} pairs ({int(test.sum())} test), {len(data.texts)} texts; simstore {simstore.__version__}"
    )
    build_dataset.print_summary(data.pairs)

    report: dict[str, dict[str, object]] = {name: {} for name in names}
    report["store"] = store_section(data)
    if args.store_only:
        if args.json:
            args.json.write_text(json.dumps(report, indent=1, default=str) + "\n")
        return 0
    dists: dict[str, npt.NDArray[np.int64]] = {}
    fp_cost: dict[str, dict[str, float]] = {}
    for name in names:
        dist, cost = distances(data, presets[name])
        dists[name], fp_cost[name] = dist, cost
        print(f"\n## {name}: duplicate when Hamming distance <= k (test half; P R F1 per group)")
        print(header("k"))
        for k in KS:
            print(row(str(k), data, dist <= k, test)[0])
        report[name]["sweep"] = {k: group_scores(data, dist <= k, test, GROUPS + EXTRA) for k in KS}
        report[name]["fingerprint_us"] = cost

    print("\n## Best single k per preset (chosen on tune by mean F1 of the four groups; test half)")
    print(header("preset/k"))
    for name in names:
        k = max(KS, key=lambda k: (round(mean_f1(data, dists[name] <= k, ~test), 4), -k))
        print(f"{name}\n{row(f'k={k}', data, dists[name] <= k, test)[0]}")
        report[name]["best_k"] = k

    started = time.process_time()
    scores, verify_cost = measure_scores(data)
    qlen = normalised_lengths(data)
    print(
        f"\n(exact measures on {len(data.pairs)} pairs: {time.process_time() - started:.1f} s CPU)"
    )

    print("\n## SimHash candidates + exact verification, split by normalised length (tune -> test)")
    print("[target] the cheapest policy (smallest radii) whose smallest F1 over the six groups on")
    print(f"tune reaches {TARGET}; [radii <= 7] the best smallest F1 with every radius <= 7.")
    print(header("policy"))
    policies: dict[str, dict[str, Policy]] = {}
    for name in names:
        policies[name] = {}
        for label, (policy, worst) in (
            ("target", search_policy(data, dists[name], scores, qlen)),
            (
                "radii <= 7",
                search_policy(data, dists[name], scores, qlen, max_radius=7, target=None),
            ),
        ):
            policies[name][label] = policy
            predicted = apply(policy, dists[name], scores, qlen)
            print(
                f"{name} [{label}] {policy} (tune min F1 {worst:.3f})\n{row('', data, predicted, test)[0]}"
            )
            report[name][f"policy {label}"] = {
                "rule": str(policy),
                "test": group_scores(data, predicted, test, GROUPS + EXTRA),
            }

    print(
        f"\n## {default}: every radius <= K, best policy for that K (tune by smallest F1) -> test"
    )
    print(header("K"))
    for radius in (3, 5, 7, 10, 12, 14, 16):
        policy, _ = search_policy(
            data, dists[default], scores, qlen, max_radius=radius, target=None
        )
        predicted = apply(policy, dists[default], scores, qlen)
        print(f"{row(str(radius), data, predicted, test)[0]}   {policy}")

    print("\n## Cost (microseconds of CPU): fingerprint one text; verify one pair (by raw length)")
    print(f"{'':<34}" + "".join(f"{cls:>10}" for cls in CLASSES))
    for name in names:
        print(
            f"{'fingerprint ' + name:<34}"
            + "".join(f"{fp_cost[name][cls]:>10.1f}" for cls in CLASSES)
        )
    for measure in MEASURES:
        print(
            f"{'verify ' + measure:<34}"
            + "".join(f"{verify_cost[measure][cls]:>10.1f}" for cls in CLASSES)
        )
    best_variant = min(
        (n for n in names if n.startswith(default)),
        key=lambda n: policies[n]["target"].short.radius + policies[n]["target"].long.radius,
    )
    for name in dict.fromkeys([default, best_variant]):
        policy = policies[name]["target"]
        print(f"\n{name} [target] {policy}\nin a store of 1M unrelated texts of the same kind:")
        for line in population(data, presets[name], policy, verify_cost):
            print(f"  {line}")

    if args.json:
        report["verify_us"] = verify_cost  # type: ignore[assignment]
        args.json.write_text(json.dumps(report, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
