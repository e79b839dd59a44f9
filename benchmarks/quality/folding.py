"""What folding traditional Chinese costs, and the libraries that could fold it.

    python -m benchmarks.quality.folding [--data DIR] [--texts N] [--rounds R] [--path DIR ...]

Reads the Chinese texts of the quality dataset (``pairs.jsonl``: both texts of every Chinese
pair), converts them to traditional characters with OpenCC's ``s2t`` (the input a Taiwanese or
Hong Kong copy would be), and times, from one run, best of ``--rounds``:

1. the default policy planning them (``plan_many``: strip, fold, normalise, sign) with
   ``fold_traditional`` on and off, and the ratio;
2. each folding library alone over the same texts, and whether its output equals OpenCC's ``t2s``
   (the share of texts folded to exactly the same string). Libraries other than OpenCC are
   looked for in ``--path`` folders (``pip install --target DIR zhconv hanziconv``: they are no
   dependency of simstore; ``opencc-python-reimplemented`` installs under OpenCC's own import
   name, ``opencc``, so it cannot sit beside it and is left out).

The machine may be shared: the numbers are indicative; the ratios are from one run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from simstore.policy.policies import Item, MinHashVerification
from simstore.text.fingerprint import analyze_many

DATA = Path(__file__).resolve().parents[1] / "data" / "quality"


def chinese_texts(data: Path, limit: int) -> list[str]:
    texts: list[str] = []
    with (data / "pairs.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            pair = json.loads(line)
            if pair.get("lang") == "zh":
                texts.extend((pair["a"], pair["b"]))
            if len(texts) >= limit:
                break
    return texts[:limit]


def best(rounds: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def plan(policy: MinHashVerification, texts: Sequence[str]) -> None:
    analysed = analyze_many(texts)
    items = [Item(str(i), a.fingerprint, a.features, 3) for i, a in enumerate(analysed)]
    policy.plan_many(items, texts, 3)


def libraries(paths: Sequence[str]) -> dict[str, Callable[[str], str]]:
    """The folding function of each library found (OpenCC always: simstore depends on it)."""
    import opencc

    found: dict[str, Callable[[str], str]] = {"opencc (t2s)": opencc.OpenCC("t2s").convert}
    sys.path.extend(paths)  # the alternatives installed with pip --target, this process only
    try:
        zhconv = importlib.import_module("zhconv")
        found["zhconv (zh-cn)"] = lambda text: zhconv.convert(text, "zh-cn")
    except ImportError:
        pass
    try:
        hanziconv = importlib.import_module("hanziconv")
        found["hanziconv"] = hanziconv.HanziConv.toSimplified
    except ImportError:
        pass
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--path", action="append", default=[], help="folders of alternatives")
    args = parser.parse_args(argv)

    import opencc

    simplified = chinese_texts(args.data, args.texts)
    traditional = [opencc.OpenCC("s2t").convert(text) for text in simplified]
    chars = sum(map(len, traditional))
    print(f"{len(traditional)} Chinese texts ({chars:,} characters) in traditional script; ")
    print(f"python {platform.python_version()}, {platform.machine()}; best of {args.rounds}")

    off = MinHashVerification(fold_traditional=False)
    on = MinHashVerification(fold_traditional=True)
    plan(on, traditional[:10])  # load OpenCC's dictionaries before timing
    plan_off = best(args.rounds, lambda: plan(off, traditional))
    plan_on = best(args.rounds, lambda: plan(on, traditional))
    print("\nplan_many (strip, fold, normalise, sign) of every text")
    print(f"  fold_traditional=False  {plan_off * 1000:8.1f} ms")
    print(f"  fold_traditional=True   {plan_on * 1000:8.1f} ms   ratio {plan_on / plan_off:.2f}")

    print("\nfolding alone                    ms   chars/us   same as OpenCC t2s")
    found = libraries(args.path)
    reference = [found["opencc (t2s)"](text) for text in traditional]
    for name, fold in found.items():
        fold(traditional[0])  # load its tables
        took = best(args.rounds, lambda fold=fold: [fold(text) for text in traditional])
        same = sum(fold(t) == r for t, r in zip(traditional, reference, strict=True))
        share = same / len(traditional)
        print(f"  {name:24s} {took * 1000:8.1f}   {chars / took / 1e6:8.2f}   {share:6.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
