"""Why the window benchmarks' planted near-duplicates are found or missed, pair by pair.

    python -m benchmarks planted [--rows 1000000] [--salt 2] [--count 1000]

The window benchmarks time ``query`` and ``add`` on a workload (``common.corpus.workload``) whose
half are planted near-duplicates: a filled text made again from its number, with one word
replaced, one deleted and one inserted. Here each planted pair (the filled text, its
near-duplicate) is decided alone: the filled text added to an empty SQLite store, the
near-duplicate added after it, and when it is kept, its candidates as the policy judged them
(``SimStore.near_misses``) say why. Prints the pairs found and the refusals by reason, the
look-alikes by what the rule saw swapped (a name, a phrase, a number ...), with two examples of
each. ``--rows`` and ``--salt`` name the workload as the window run drew it (salt 2: the warm
queries of ``window-default``).
"""

from __future__ import annotations

import collections
import random
import re
import tempfile
from collections.abc import Sequence

from simstore import SimStore

from ..common import cli, corpus

_SWAPPED = re.compile(r"\((\w+)\)")


def planted_pairs(rows: int, count: int, salt: int) -> list[tuple[str, str]]:
    """The (filled text, near-duplicate) pairs of ``workload(rows, count, salt)``, in its order
    of drawing (the same random draws as ``corpus.workload``)."""
    rng = random.Random(f"{corpus.SEED}:work:{salt}")
    pairs = []
    for _ in range(count - count // 2):
        original = corpus.compose(rng.randrange(rows))
        pairs.append((original, corpus.near_duplicate(original, rng)))
    return pairs


def outcome(store: SimStore, number: int, original: str, near: str) -> tuple[str, str]:
    """How one pair is decided in ``store``: its class, and the policy's reason in full."""
    store.add(original, key=f"filled-{number}")
    decision = store.add(near, key=f"near-{number}")
    if not decision.inserted:
        found = (
            decision.duplicate_of is not None and decision.duplicate_of.key == f"filled-{number}"
        )
        return ("found" if found else "a duplicate of another text"), "duplicate"
    judged = [
        j for j in store.near_misses(f"near-{number}", limit=50) if j.key == f"filled-{number}"
    ]
    if not judged:
        return "not a candidate (no shared band key)", ""
    reason = judged[0].reason
    if reason.startswith("look-alike"):
        return f"look-alike ({', '.join(sorted(set(_SWAPPED.findall(reason))))})", reason
    return reason, reason


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser("planted", __doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--count", type=int, default=1000, help="the workload's size (half planted)"
    )
    parser.add_argument("--salt", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    corpus.SEED = args.seed
    corpus.load_pool(corpus.PAIRS)
    pairs = planted_pairs(args.rows, args.count, args.salt)
    classes: collections.Counter[str] = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp, SimStore(f"sqlite:///{tmp}/planted.db") as store:
        for number, (original, near) in enumerate(pairs):
            kind, reason = outcome(store, number, original, near)
            classes[kind] += 1
            if reason and kind != "found" and len(examples[kind]) < 2:
                examples[kind].append(f"{len(original)} characters: {reason[:150]}")
    print(f"{len(pairs)} planted pairs of workload(rows={args.rows:,}, salt={args.salt}), each "
          "decided alone (the filled text, then its near-duplicate):")  # fmt: skip
    for kind, count in classes.most_common():
        print(f"  {count:5d}  {kind}")
    for kind, shown in examples.items():
        for example in shown:
            print(f"  e.g. {kind}: {example}")
