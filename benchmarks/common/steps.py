"""The steps a child process runs against another checkout's simstore (``common.checkouts``).

They import nothing of simstore but ``simstore.store.SimStore`` (and ``simstore``'s version), so
that a checkout from before a module moved still runs them. Each prints its figures as JSON on
its last line:

    python -m benchmarks.common.steps versions MODE URL NAMESPACE TEXTS_FILE COUNT
    python -m benchmarks.common.steps tail FILE ROUNDS CPU [LOOKALIKES_CLUSTERS LOOKALIKES_SIZE]
"""

from __future__ import annotations

import json
import random
import sys
import time
import uuid
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from . import corpus
from .corpus import END_OF_DAY2, PAIRS, load_pool, workload
from .databases import cache_file
from .measure import percentile

WARM_QUERIES_SALT = 2  # the window benchmark's query_warm phase
LOOKALIKE_SEED = 5
TEMPLATE_LENGTHS = {"en": (80, 120), "zh": (50, 80)}  # the long clause, characters
FILLER_LENGTHS = (15, 40)  # the short clause that tells cluster members apart


def versions(mode: str, url: str, namespace: str, texts_file: str, count: int) -> dict[str, float]:
    """Fill (``add_many`` of the texts), or p50 / p99 of ``count`` text queries or adds."""
    from simstore.store import SimStore

    texts = json.loads(Path(texts_file).read_text(encoding="utf-8"))
    if mode == "fill":
        with SimStore(url, namespace=namespace, auto_upgrade=True) as filling:
            for _decision in filling.add_many((f"t{n}", text) for n, text in enumerate(texts)):
                pass
        return {}
    store = SimStore(url, namespace=namespace)
    samples = []
    if mode == "query":
        rng = random.Random(7)
        chosen = [rng.choice(texts) for _ in range(count)]
        asked = [t + " extra words" if n % 2 else t for n, t in enumerate(chosen)]
        for text in asked[:50]:
            store.query(text)
        for text in asked:
            started = time.perf_counter()
            store.query(text)
            samples.append((time.perf_counter() - started) * 1e6)
    else:
        tag = uuid.uuid4().hex[:6]
        for n, text in enumerate(texts[:count]):
            started = time.perf_counter()
            store.add(text, key=f"new{n}-{tag}")
            samples.append((time.perf_counter() - started) * 1e6)
    store.close()
    samples.sort()
    return {"p50": samples[len(samples) // 2], "p99": samples[int(len(samples) * 0.99)]}


def lookalike_texts(clusters: int, size: int) -> tuple[list[str], list[str]]:
    """(texts to keep, queries): ``clusters`` templates per language, ``size`` members each, and
    five new members of each as queries (``load_pool`` must have run)."""
    rng = random.Random(LOOKALIKE_SEED)
    kept: list[str] = []
    queries: list[str] = []
    for lang, (low, high) in TEMPLATE_LENGTHS.items():
        pool = corpus.SENTENCES[lang]
        templates = [s for s in pool if low <= len(s) <= high]
        fillers = [s for s in pool if FILLER_LENGTHS[0] <= len(s) <= FILLER_LENGTHS[1]]
        joiner = "" if lang == "zh" else " "
        for _cluster in range(clusters):
            template = rng.choice(templates)
            members = [template + joiner + rng.choice(fillers) for _ in range(size + 5)]
            kept += members[:size]
            queries += members[size:]
    return kept, queries


def tail(
    path: Path, rows: int, rounds: int, cpu: bool, lookalikes: tuple[int, int] | None
) -> dict[str, Any]:
    """Each warm query's best of ``rounds`` on the filled file at ``path`` (the window file of
    ``rows`` texts, or a look-alike clusters' file)."""
    import simstore
    from simstore.store import SimStore

    load_pool(PAIRS)
    keep: str | None = "2d"
    now: datetime | None = END_OF_DAY2  # the window file's end of day 2
    if lookalikes is None:
        texts = [text for text, _planted in workload(rows, 1000, WARM_QUERIES_SALT)]
        warm_ups = [text for text, _planted in workload(rows, 20, 4)]
    else:
        kept, texts = lookalike_texts(*lookalikes)
        warm_ups = kept[:: max(1, len(kept) // 20)][:20]  # found rows, but none of the queries'
        keep, now = None, None  # added at the time of building: no window
    store = SimStore(f"sqlite:///{path}", keep=keep)
    cache_file(path)
    for warm_up in warm_ups:  # statements prepared, not the cache
        store.query(warm_up, now=now)
    clock = time.process_time if cpu else time.perf_counter
    best = [float("inf")] * len(texts)
    for _round in range(rounds):
        for j, text in enumerate(texts):
            start = clock()
            store.query(text, now=now)
            best[j] = min(best[j], (clock() - start) * 1e6)
    store.close()
    slowest = sorted(best)[-10:]
    return {
        "simstore": str(Path(simstore.__file__).parent),
        "p50_us": round(percentile(best, 0.5)),
        "p99_us": round(percentile(best, 0.99)),
        "slowest_ten_ms": round(sum(slowest) / 1000, 1),
    }


def main(argv: Sequence[str]) -> None:
    step, *rest = argv
    if step == "versions":
        mode, url, namespace, texts_file, count = rest
        print(json.dumps(versions(mode, url, namespace, texts_file, int(count))))
    elif step == "tail":
        path, rows, rounds, cpu, *clusters = rest
        lookalikes = (int(clusters[0]), int(clusters[1])) if clusters else None
        print(json.dumps(tail(Path(path), int(rows), int(rounds), cpu == "cpu", lookalikes)))
    else:
        raise SystemExit(f"unknown step {step!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
