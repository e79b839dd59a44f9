"""Should folding traditional Chinese be the default? Held-out Chinese pairs, as they are and
with their second text in traditional characters, under the default policy and with
``fold_traditional=True``.

    python -m benchmarks traditional [--split test] [--json FILE]

Every Chinese pair of the chosen half (duplicates and every hard negative) is decided twice by a
real ``SimStore`` on an SQLite file (``evaluate_policy.decide_pairs``: the pair's first text kept,
the second added one second later): once as built, once with the second text converted to
traditional characters by OpenCC's ``s2t`` (a copy published in Taiwan or Hong Kong, or a
different text that happens to be written in the other script). The first table says what
folding finds (recall of the converted duplicates) and what it costs (precision on the pairs as
built and on the converted negatives); a last line times ``add_many`` with folding on and off.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.quality import build_dataset
from benchmarks.quality.build_dataset import Pair
from benchmarks.quality.evaluate_policy import Counts, decide_pairs, load_pairs, prf_dict
from simstore.policy.policies import MinHashVerification
from simstore.store import SimStore

POLICIES = {
    "default": MinHashVerification(),
    "fold_traditional=True": MinHashVerification(fold_traditional=True),
}


def converted(pairs: Sequence[Pair]) -> list[Pair]:
    """The pairs with their second text in traditional characters (OpenCC s2t)."""
    import opencc

    to_traditional = opencc.OpenCC("s2t")
    return [dataclasses.replace(pair, b=to_traditional.convert(pair.b)) for pair in pairs]


def score(pairs: Sequence[Pair], predicted: Sequence[bool]) -> dict[str, Any]:
    counts = Counts()
    for pair, yes in zip(pairs, predicted, strict=True):
        counts.tally(pair.label, yes)
    return prf_dict(counts)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("tune", "test"), default="test")
    parser.add_argument("--data", type=Path, default=build_dataset.DEFAULT_OUT)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(None if argv is None else list(argv))
    chinese = [pair for pair in load_pairs(args.data, args.split) if pair.lang == "zh"]
    sets = {"as built": chinese, "second text traditional": converted(chinese)}
    changed = sum(a.b != b.b for a, b in zip(chinese, sets["second text traditional"], strict=True))
    print(f"{len(chinese)} Chinese pairs of the {args.split} half "
          f"({sum(p.label for p in chinese)} duplicates); s2t changed {changed} second texts")  # fmt: skip
    results: dict[str, dict[str, Any]] = {}
    for label, policy in POLICIES.items():
        for name, pairs in sets.items():
            started = time.perf_counter()
            with tempfile.TemporaryDirectory() as folder:
                predicted, _redone = decide_pairs(pairs, policy, Path(folder))
            results.setdefault(label, {})[name] = {
                **score(pairs, predicted),
                "seconds": round(time.perf_counter() - started, 1),
            }
    print("\n| policy | pairs | precision | recall | F1 | false merges |")
    print("|---|---|---:|---:|---:|---:|")
    for label, by_set in results.items():
        for name, figures in by_set.items():
            print(f"| {label} | {name} | {figures['precision']:.3f} | {figures['recall']:.3f} | "
                  f"{figures['f1']:.3f} | {figures['fp']} |")  # fmt: skip
    speed = adds_per_second([text for pair in chinese for text in (pair.a, pair.b)])
    print("\nadd_many of the pairs' texts as built, one SQLite file, best of 3 alternating "
          "rounds: " + ", ".join(f"{label} {rate:,.0f} texts/s" for label, rate in speed.items()))  # fmt: skip
    if args.json:
        figures = {"split": args.split, "results": results, "texts_per_second": speed}
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


def adds_per_second(texts: Sequence[str], rounds: int = 3) -> dict[str, float]:
    """Texts a second through ``add_many`` under each policy (the best of ``rounds``)."""
    best: dict[str, float] = {}
    for _round in range(rounds):
        for label, policy in POLICIES.items():
            with (
                tempfile.TemporaryDirectory() as folder,
                SimStore(f"sqlite:///{folder}/speed.db", policy=policy) as store,
            ):
                started = time.perf_counter()
                for _decision in store.add_many((f"k{i}", t) for i, t in enumerate(texts)):
                    pass
                rate = len(texts) / (time.perf_counter() - started)
            best[label] = max(best.get(label, 0.0), rate)
    return best


if __name__ == "__main__":
    raise SystemExit(main())
