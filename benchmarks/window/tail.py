"""The query tail of two simstore checkouts on one filled window file, each query's best of N.

    python -m benchmarks window --policy default --rows 10000000 --no-purge   # fills the file
    git worktree add /tmp/before <commit>
    python -m benchmarks tail --rows 10000000 --before /tmp/before

The file is ``window --policy default``'s (``benchmarks/data/window/``), left as its last run left
it. Each checkout in turn (this one, then ``--before``, ``--alternations`` times), in a child
process with that checkout's simstore (``common.checkouts``): ``SimStore(url, keep="2d")``, the file read into the OS page cache,
20 queries to prepare the statements, then the window benchmark's 1,000 warm queries (half new
texts, half near-duplicates) ``--rounds`` times. A query's latency is its best of the rounds, so the
machine's noise is taken out of each query rather than averaged in; the queries only read, so both
checkouts see the same file. Prints p50 / p99 / the sum of the ten slowest per run and the ratios of
the medians over runs. Both checkouts must read the file's schema revision. ``--cpu`` times each
query by this process's CPU time instead of the wall clock (SQLite works in the process, so this
is the query's whole cost but waits): steadier when the machine's other tenants are busy.

``--lookalikes`` times the shape of the 10M file's slowest short queries without the 10M file (an
hour to fill): a small file of template clusters, each ``--cluster-size`` texts that share one long
clause of the pool (the template) and differ in a short one, added through ``SimStore.add_many``
by this checkout (``lookalikes-*.db`` in ``--data-dir``, reused), and as queries five new members
of each cluster. Every kept member is a candidate of a query (their signatures pass the policy's
bar), most reach the Jaccard threshold, and the look-alike check refuses them: hundreds of
candidates confirmed for few matches, as the 10M file's slowest 1% (519 band-key rows, 102
candidates, 1 match).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from pathlib import Path

from ..common import cli
from ..common.checkouts import run_in
from ..common.corpus import DATA, PAIRS, ROOT, load_pool
from ..common.databases import remove_database
from ..common.steps import LOOKALIKE_SEED, lookalike_texts


def lookalike_file(data_dir: Path, clusters: int, size: int) -> Path:
    return data_dir / f"lookalikes-c{clusters}-m{size}-s{LOOKALIKE_SEED}.db"


def build_lookalikes(data_dir: Path, clusters: int, size: int) -> None:
    """The template clusters' file, added through this checkout's ``SimStore.add_many``."""
    from simstore.store import SimStore

    path = lookalike_file(data_dir, clusters, size)
    if path.exists():
        return
    load_pool(PAIRS)
    kept, _queries = lookalike_texts(clusters, size)
    data_dir.mkdir(parents=True, exist_ok=True)
    building = path.with_suffix(".building")
    remove_database(building)
    with SimStore(f"sqlite:///{building}") as store:
        decisions = list(store.add_many((f"k{i}", text) for i, text in enumerate(kept)))
    building.rename(path)
    print(f"  {path.name}: {sum(d.inserted for d in decisions):,} of {len(kept):,} kept")


def window_file(data_dir: Path, rows: int) -> Path:
    return data_dir / f"window-default-n{rows}-s1.db"


def run(checkout: Path, args: argparse.Namespace) -> dict[str, float]:
    """The warm queries timed by ``common.steps.tail`` with ``checkout``'s simstore."""
    if args.lookalikes:
        path = lookalike_file(args.data_dir, args.clusters, args.cluster_size)
        clusters = [str(args.clusters), str(args.cluster_size)]
    else:
        path, clusters = window_file(args.data_dir, args.rows), []
    cpu = "cpu" if args.cpu else "wall"
    return run_in(
        checkout, "benchmarks.common.steps", "tail", str(path), str(args.rows),
        str(args.rounds), cpu, *clusters,
    )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser("tail", __doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--before", type=Path, help="the other checkout (a git worktree)")
    parser.add_argument("--rounds", type=int, default=3, help="each query's best of this many")
    parser.add_argument(
        "--cpu", action="store_true", help="this process's CPU time (SQLite's work is in it)"
    )
    parser.add_argument("--alternations", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=DATA / "window")
    parser.add_argument(
        "--lookalikes", action="store_true", help="template clusters, not the window file"
    )
    parser.add_argument("--clusters", type=int, default=10, help="--lookalikes: per language")
    parser.add_argument("--cluster-size", type=int, default=300, help="--lookalikes: members")
    args = parser.parse_args(argv)
    lookalikes = (args.clusters, args.cluster_size) if args.lookalikes else None
    if lookalikes is not None:
        build_lookalikes(args.data_dir, *lookalikes)
    elif not window_file(args.data_dir, args.rows).exists():
        raise SystemExit(
            f"no filled file for {args.rows:,} rows: run `window --policy default` first"
        )
    checkouts = {"this": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    for _turn in range(args.alternations):
        for name, checkout in checkouts.items():
            runs[name].append(run(checkout, args))
            print(f"  {name:6} {runs[name][-1]}", flush=True)
    for figure in ("p50_us", "p99_us", "slowest_ten_ms"):
        medians = {name: statistics.median(r[figure] for r in runs[name]) for name in runs}
        line = f"{figure}: " + ", ".join(f"{name} {value:,.1f}" for name, value in medians.items())
        if "before" in medians and medians["this"]:
            line += f"; this is {medians['before'] / medians['this']:.2f}x faster"
        print(line)


if __name__ == "__main__":
    main()
