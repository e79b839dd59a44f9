"""Single ``query(text)`` and ``add(text)`` latency of two simstore checkouts, alternating.

    git worktree add /tmp/before <commit>
    python benchmarks/bench_versions.py --before /tmp/before [--url URL] [--texts 20000]

Fills a new namespace with the quality dataset's texts through this checkout's ``add_many`` (in
a fresh SQLite file by default, or in the server database given by ``--url``), then runs, in turn and ``--rounds`` times, a child process of
each checkout (``PYTHONPATH`` set to it): ``--queries`` text queries (half near-duplicates: a kept
text with two words appended) against the filled namespace and, on SQLite, ``--adds`` single adds
of new dataset texts into a copy of the file. Prints p50 / p99 in microseconds per checkout and
round, and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_add_many import documents

from simstore.store import SimStore

HERE = Path(__file__).resolve().parents[1]


def child(mode: str, url: str, namespace: str, texts_file: str, count: int) -> dict[str, float]:
    """Runs in the checkout under test: p50 / p99 of ``count`` queries or adds."""
    texts = json.loads(Path(texts_file).read_text(encoding="utf-8"))
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
        for n, text in enumerate(texts[:count]):
            started = time.perf_counter()
            store.add(text, key=f"new{n}")
            samples.append((time.perf_counter() - started) * 1e6)
    store.close()
    samples.sort()
    return {"p50": samples[len(samples) // 2], "p99": samples[int(len(samples) * 0.99)]}


def run(checkout: Path, *arguments: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    command = [sys.executable, __file__, "--child", *arguments]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="the other checkout (a git worktree)")
    parser.add_argument("--url", help="a server database (default: a SQLite file)")
    parser.add_argument("--texts", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=1_500)
    parser.add_argument("--adds", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", nargs=5, metavar=("MODE", "URL", "NAMESPACE", "TEXTS", "COUNT"))
    args = parser.parse_args()
    if args.child:
        mode, url, namespace, texts_file, count = args.child
        print(json.dumps(child(mode, url, namespace, texts_file, int(count))))
        return
    if args.before is None:
        parser.error("--before is required")
    corpus = documents(args.texts + args.adds)
    kept, new = corpus[: args.texts], corpus[args.texts :]
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        url = args.url or f"sqlite:///{folder / 'base.db'}"
        namespace = f"versions-{uuid.uuid4().hex[:8]}"
        with SimStore(url, namespace=namespace, auto_upgrade=True) as store:
            for _decision in store.add_many((f"t{n}", text) for n, text in enumerate(kept)):
                pass
        (folder / "kept.json").write_text(json.dumps(kept), encoding="utf-8")
        (folder / "new.json").write_text(json.dumps(new), encoding="utf-8")
        results: dict[tuple[str, str], list[dict[str, float]]] = {}
        for _round in range(args.rounds):
            for name, checkout in (("before", args.before), ("after", HERE)):
                key = ("query", name)
                queried = run(
                    checkout, "query", url, namespace, str(folder / "kept.json"), str(args.queries)
                )
                results.setdefault(key, []).append(queried)
                if not args.url:  # adds write: each run on its own copy of the file
                    copy = folder / f"{name}.db"
                    shutil.copy(folder / "base.db", copy)
                    added = run(checkout, "add", f"sqlite:///{copy}", namespace,
                                str(folder / "new.json"), str(args.adds))  # fmt: skip
                    results.setdefault(("add", name), []).append(added)
    print(f"{url.split(':')[0]}: p50 / p99 us per round")
    for mode in ("query", "add"):
        if (mode, "after") not in results:
            continue
        medians = {}
        for name in ("before", "after"):
            rounds = results[(mode, name)]
            shown = ", ".join(f"{r['p50']:,.0f} / {r['p99']:,.0f}" for r in rounds)
            medians[name] = statistics.median(r["p50"] for r in rounds)
            print(f"  {mode:<5} {name:<6} {shown}")
        print(f"  {mode:<5} after is {medians['before'] / medians['after']:.2f}x faster (p50)")


if __name__ == "__main__":
    main()
