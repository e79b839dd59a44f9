"""Text in, decisions out: ``SimStore.add_many`` (default policy, SQLite file) against datasketch's
in-memory ``MinHashLSH`` on the same documents in the same run (issue 15).

    python -m benchmarks add-many [--texts 20000] [--rounds 2] [--batch 1000]

Documents: the ``a`` and ``b`` texts of the quality dataset (``benchmarks/data/quality``, built
first when missing; Chinese and English, a few characters to 35 kB, many near-duplicate pairs), in
a fixed shuffled order. Each round runs, in turn:

- ``simstore workers=0``: ``add_many`` into a fresh SQLite file, everything in this process;
- ``simstore workers=1``: the same with one worker process planning (fingerprint, normalise,
  sign) the next batches while this process decides and writes (``add_many(workers=1)``: on two
  cores, one for each);
- ``datasketch``: for each document a ``MinHash`` of its character 5-grams (lower-cased,
  whitespace collapsed; 96 permutations, ``update_batch``) and ``MinHashLSH(num_perm=96,
  params=(16, 4))``, simstore's band scheme (16 bands of 4 of the 96 values): ``query``, then ``insert`` when nothing is found.
  It keeps nothing on disk, decides by LSH collision alone (no similarity check, no SimHash, no
  transaction) and so does less than the store: it is the peer the issue names, not an equal.

Prints documents per second for each and the ratios to datasketch, per round and the median.
Run it alone: the systems share the machine's cores.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from datasketch import MinHash, MinHashLSH

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "quality"))
import build_dataset
from bench_footprint import PAIRS, texts

from simstore.store import SimStore
from simstore.text import minhash


def documents(count: int) -> list[str]:
    """``count`` distinct texts of the quality dataset (built first when missing), shuffled."""
    if not PAIRS.exists():
        build_dataset.main([])
    return texts(count, PAIRS)


def simstore_run(texts: Sequence[str], workers: int, batch: int) -> tuple[float, int]:
    """Seconds for ``add_many`` of every text into a fresh SQLite file, and the texts kept."""
    with tempfile.TemporaryDirectory() as folder:
        store = SimStore(f"sqlite:///{folder}/bench.db")
        started = time.perf_counter()
        kept = sum(
            decision.inserted
            for decision in store.add_many(
                ((f"d{n}", text) for n, text in enumerate(texts)), batch_size=batch, workers=workers
            )
        )
        elapsed = time.perf_counter() - started
        store.close()
    return elapsed, kept


def datasketch_run(texts: Sequence[str]) -> tuple[float, int]:
    """Seconds for query-then-insert of every text into an in-memory MinHashLSH, and the kept."""
    started = time.perf_counter()
    lsh = MinHashLSH(num_perm=96, params=(minhash.BANDS, minhash.ROWS))
    kept = 0
    for n, text in enumerate(texts):
        shingled = " ".join(text.lower().split())
        grams = {shingled[i : i + 5].encode() for i in range(max(1, len(shingled) - 4))}
        signature = MinHash(num_perm=96)
        signature.update_batch(list(grams))
        if not lsh.query(signature):
            lsh.insert(f"d{n}", signature)
            kept += 1
    return time.perf_counter() - started, kept


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args(argv)
    corpus = documents(args.texts)
    volume = sum(map(len, corpus))
    print(f"{len(corpus)} documents, {volume / len(corpus):,.0f} characters on average")
    systems: dict[str, Callable[[], tuple[float, int]]] = {
        "simstore workers=0": lambda: simstore_run(corpus, 0, args.batch),
        "simstore workers=1": lambda: simstore_run(corpus, 1, args.batch),
        "simstore workers=2": lambda: simstore_run(corpus, 2, args.batch),
        "datasketch MinHashLSH": lambda: datasketch_run(corpus),
    }
    rates: dict[str, list[float]] = {name: [] for name in systems}
    for round_number in range(1, args.rounds + 1):
        for name, run in systems.items():
            seconds, kept = run()
            rates[name].append(len(corpus) / seconds)
            rate = len(corpus) / seconds
            print(f"round {round_number}  {name:<22} {rate:8,.0f} docs/s  ({kept} kept)")
    peer = statistics.median(rates["datasketch MinHashLSH"])
    print("\nmedian docs/s and ratio to datasketch:")
    for name, values in rates.items():
        rate = statistics.median(values)
        print(f"  {name:<22} {rate:8,.0f}  {rate / peer:5.2f}x")


if __name__ == "__main__":
    main()
