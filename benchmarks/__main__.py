"""One entry point for every benchmark: ``python -m benchmarks NAME [options]``.

``python -m benchmarks --help`` lists them by topic; ``python -m benchmarks NAME --help`` shows a
benchmark's own options. Several names run one module with options of their own (``window-default``
is ``window --policy default``), so that every command written in the docs and in
``results/INDEX.md`` runs as it did. Run from the repository root in an environment with
``pip install -e '.[test,bench]'``; the window and quality benchmarks need the dataset first
(``python -m benchmarks dataset``). What the benchmarks share is in ``benchmarks/common/``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

# topic -> name -> (module under benchmarks/, arguments put first, what it measures)
SUITES: dict[str, dict[str, tuple[str, tuple[str, ...], str]]] = {
    "fingerprints": {
        "fingerprint": ("fingerprint", (), "fingerprints a second, every preset against PyPI simhash"),
    },
    "the store against its peers": {
        "peers": ("peers", (), "query latency at k = 3 against N kept, beside faiss and SQL peers"),
        "store": ("store", ("latency",), "add and query latency at N kept on any database URL"),
        "add-many": ("store", ("add-many",), "add_many, text in, against datasketch's MinHashLSH"),
        "versions": ("store", ("versions",), "query and add latency of two checkouts, alternating"),
        "open": ("footprint", ("open",), "what opening a store on an existing file costs"),
        "planner": ("costs", ("planner",), "where the pair plan overtakes the band plan"),
        "verification": ("costs", ("verification",), "what each policy costs a query and an add"),
        "expiry": ("costs", ("expiry",), "adds of duplicates with expire_by_last_seen on against off"),
        "boilerplate": ("costs", ("boilerplate",), "adds and queries with the memory of boilerplate on against off"),
    },
    "the default pipeline at scale": {
        "window": ("window", (), "the seeds' two-day window: bare, --policy default, --url SERVER"),
        "window-default": ("window.default", (), "= window --policy default"),
        "window-server": ("window.server", (), "= window --url SERVER_URL"),
        "tail": ("window.tail", (), "the slowest queries of two checkouts on one filled window"),
        "planted": ("window.planted", (), "the window's planted near-duplicates decided pair by pair: why each is missed"),
        "writers": ("writers", (), "adds/s with 1-8 writer processes on each database"),
        "footprint": ("footprint", ("bytes",), "bytes a kept text, by table and index, any database"),
        "purge": ("purge", (), "dropping a PostgreSQL partition against batched deletes"),
        "soak-stores": ("footprint", ("soak",), "10,000 stores opened, used, dropped: threads, files, RSS"),
    },
    "detection quality": {
        "dataset": ("quality.dataset", (), "build the labelled pairs from Debian and PyPI text"),
        "quality": ("quality.evaluate_policy", (), "one policy: cold pairs, a stream, the sample corpus"),
        "presets": ("quality.evaluate", (), "every preset's precision and recall by group"),
        "candidates": ("quality.candidates", (), "candidate sources and their cost at 1M kept texts"),
        "layouts": ("quality.layouts", (), "MinHash band layouts: the duplicates each would find"),
        "traditional": ("quality.traditional", (), "Chinese pairs with a traditional second text: folding on and off"),
    },
    "Spark": {
        "spark": ("spark", (), "simstore.spark against add_many: time, stages, agreement"),
    },
}  # fmt: skip

BENCHMARKS = {name: entry for suite in SUITES.values() for name, entry in suite.items()}


def listing() -> str:
    lines = ["usage: python -m benchmarks NAME [options]   (NAME --help for its options)", ""]
    for topic, entries in SUITES.items():
        lines.append(f"{topic}:")
        lines += [f"  {name:<15} {what}" for name, (_m, _a, what) in entries.items()]
    return "\n".join(lines)


def run(name: str, argv: Sequence[str]) -> int:
    """Run benchmark ``name`` with ``argv`` as its options; its exit status."""
    module_name, first, _ = BENCHMARKS[name]
    module = importlib.import_module(f"{__package__ or 'benchmarks'}.{module_name}")
    sys.argv = [f"python -m benchmarks {name}", *argv]
    status = module.main([*first, *argv])
    return status if isinstance(status, int) else 0


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help", "list"):
        print(listing())
        return 0
    name = sys.argv[1]
    if name not in BENCHMARKS:
        print(f"unknown benchmark {name!r}\n\n{listing()}", file=sys.stderr)
        return 2
    return run(name, sys.argv[2:])


if __name__ == "__main__":
    raise SystemExit(main())
