"""Single ``query(text)`` and ``add(text)`` latency of two simstore checkouts, alternating.

    git worktree add /tmp/before <commit>
    python -m benchmarks versions --before /tmp/before [--url URL] [--texts 20000]

Each checkout fills a database of its own (a fresh SQLite file by default, or a new database on
the server given by ``--url``) with the quality dataset's texts through its own ``add_many``, so
two checkouts of different schema revisions compare too. Then, in turn and ``--rounds`` times, a
child process of each checkout (``PYTHONPATH`` set to it) runs ``--queries`` text queries (half
near-duplicates: a kept text with two words appended) against its filled namespace and ``--adds``
single adds of new dataset texts (on SQLite into a copy of the file, on a server into the
database itself under keys of that round). Prints p50 / p99 in microseconds per checkout and
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
import sqlalchemy as sa
from bench_add_many import documents
from sqlalchemy.engine import make_url

from simstore.store import SimStore

HERE = Path(__file__).resolve().parents[1]


def child(mode: str, url: str, namespace: str, texts_file: str, count: int) -> dict[str, float]:
    """Runs in the checkout under test: p50 / p99 of ``count`` queries or adds."""
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


def _database(admin: sa.Engine | None, folder: Path, name: str) -> str:
    """A new empty database: a SQLite file in ``folder``, or one made on the server."""
    if admin is None:
        return f"sqlite:///{folder / (name + '.db')}"
    database = name.replace("-", "_")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {database}")
    return admin.url.set(database=database).render_as_string(hide_password=False)


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
    sides = (("before", args.before), ("after", HERE))
    namespace = f"versions-{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(args.url, isolation_level="AUTOCOMMIT") if args.url else None
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "kept.json").write_text(json.dumps(kept), encoding="utf-8")
        (folder / "new.json").write_text(json.dumps(new), encoding="utf-8")
        urls = {name: _database(admin, folder, f"{namespace}-{name}") for name, _c in sides}
        results: dict[tuple[str, str], list[dict[str, float]]] = {}
        try:
            for name, checkout in sides:
                run(checkout, "fill", urls[name], namespace, str(folder / "kept.json"), "0")
            for _round in range(args.rounds):
                for name, checkout in sides:
                    url = urls[name]
                    queried = run(
                        checkout, "query", url, namespace, str(folder / "kept.json"),
                        str(args.queries),
                    )  # fmt: skip
                    results.setdefault(("query", name), []).append(queried)
                    if admin is None:  # adds write: each round on a copy of the file
                        copy = folder / f"{name}-copy.db"
                        shutil.copy(make_url(url).database or "", copy)
                        url = f"sqlite:///{copy}"
                    added = run(checkout, "add", url, namespace, str(folder / "new.json"),
                                str(args.adds))  # fmt: skip
                    results.setdefault(("add", name), []).append(added)
        finally:
            if admin is not None:
                with admin.connect() as conn:
                    for url in urls.values():
                        database = make_url(url).database
                        if conn.dialect.name == "postgresql":
                            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
                        else:
                            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {database}")
                admin.dispose()
    print(f"{urls['after'].split(':')[0]}: p50 / p99 us per round")
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
