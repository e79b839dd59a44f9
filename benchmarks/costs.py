"""What a lookup plan and a policy cost a query and an add, on one SQLite file.

    python -m benchmarks planner [--sizes 100000,300000,1000000,3000000]
    python -m benchmarks verification [--rows 1000000] [--queries 1000] [--adds 500] [--db FILE]
    python -m benchmarks expiry [--kept 2000] [--duplicates 2000] [--url URL]

``planner``: where the pair plan overtakes the band plan. One SQLite file grows through the
sizes, random 64-bit fingerprints loaded through ``SimStore.load`` (the chance of two within 3
bits among 10M is about 0.1, so ``add_many`` would keep every row too; the load writes 10M rows
in minutes). At each size three stores on the same file answer the same k = 3 queries (half
random, half 1-3 bits from a stored row), interleaved in rounds: ``lookup="bands"`` (4 x 16-bit
band equality), ``lookup="pairs"`` (the 32-bit halves at radius 1) and ``"auto"`` (the planner's
pick). All three must return the same matches. Prints p50/p99 in microseconds and candidates per
query.

``verification``: what each policy costs per query and per add at N kept texts. Kept texts are
composed from the real sentences of the quality dataset: half Chinese, half English, 60% short
(under 140 characters) and 40% long (500-1,500), so that shared phrases and boilerplate collide
as they do in real feeds. They are signed by ``simstore.policy.batch.sign`` (the store's own
path, for each policy in a namespace of its own: a namespace records its policy) and loaded,
every one kept, through ``SimStore.load``; then three stores on a copy of the file answer the
same texts in interleaved rounds:

- ``MinHashVerification()`` (the default): SimHash k <= 3 plus the band-key lookup, decided by
  similarity;
- ``SimHashVerification()``: the SimHash-only policy (short texts: k <= 7 and Jaccard >= 0.8);
- ``SimHashOnly()``: plain SimHash k <= 3, the reference for "under 2x".

Queries are texts (fingerprinting and signing included, as an application calls it): half new
compositions, half near-duplicates of kept texts (a repost prefix or one sentence replaced).
Adds are new texts of both kinds under each policy, one transaction each.
Prints p50 / p99 in microseconds and the ratios to the plain k = 3 query.

``expiry``: what expiry by last sighting costs an add that finds a duplicate (``EXPIRY_DOC``).
"""

from __future__ import annotations

import contextlib
import random
import re
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from simstore.io.handover import LoadRow
from simstore.policy import batch
from simstore.policy.policies import MinHashVerification, SimHashOnly, SimHashVerification
from simstore.policy.probes import prefers_pairs
from simstore.store import SimStore

from .common import cli
from .common.corpus import DATA, Values, dataset_languages, near
from .common.databases import dialect_label, scratch_database
from .common.fills import load_fingerprints
from .common.measure import percentile, timed, timed_calls

# --- planner ----------------------------------------------------------------------------------

LOOKUPS = ("bands", "pairs", "auto")


def grow(store: SimStore, start: int, stop: int, seed: int) -> list[int]:
    """Load rows start..stop-1 (fingerprints from a per-step seeded stream) and return them."""
    rng = random.Random(f"{seed}-{start}-{stop}")
    values = [rng.getrandbits(64) for _ in range(stop - start)]
    load_fingerprints(store, np.array(values, dtype=np.uint64), offset=start)
    return values


def measure(stores: dict[str, SimStore], queries: list[int], rounds: int) -> dict[str, list[float]]:
    """Per lookup, microseconds per query; rounds interleave the stores in rotating order."""
    samples: dict[str, list[float]] = {name: [] for name in stores}
    names = list(stores)
    per_round = max(1, len(queries) // rounds)
    for round_no in range(rounds):
        part = queries[round_no * per_round : (round_no + 1) * per_round]
        order = names[round_no % len(names) :] + names[: round_no % len(names)]
        for name in order:
            query = stores[name].query
            for value in part:
                start = time.perf_counter()
                query(fingerprint=value)
                samples[name].append((time.perf_counter() - start) * 1e6)
    return samples


def candidates_per_query(values: Values, queries: list[int], lookup: str) -> float:
    """Rows a lookup fetches per query, counted from the stored fingerprints (numpy, outside the
    timed runs): ``bands``, the rows with any of the four 16-bit bands equal to the query's;
    ``pairs``, the rows with either 32-bit half within one bit of the query's."""
    counts = []
    for value in queries:
        apart = values ^ np.uint64(value)
        if lookup == "bands":
            found = np.zeros(len(values), dtype=bool)
            for shift in (48, 32, 16, 0):
                found |= (apart >> np.uint64(shift)) & np.uint64(0xFFFF) == 0
        else:
            high = np.bitwise_count(apart >> np.uint64(32)) <= 1
            found = high | (np.bitwise_count(apart & np.uint64(0xFFFFFFFF)) <= 1)
        counts.append(int(found.sum()))
    return statistics.mean(counts)


def planner(argv: Sequence[str]) -> None:
    parser = cli.parser("planner", __doc__)
    parser.add_argument("--sizes", default="100000,300000,1000000,3000000")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    sizes = sorted(int(size) for size in args.sizes.split(","))

    folder = DATA / "planner"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"planner-s{args.seed}.db"
    for leftover in folder.glob(f"{path.name}*"):
        leftover.unlink()
    url = f"sqlite:///{path}"
    filling = SimStore(url, namespace="bench", policy=SimHashOnly())
    rng = random.Random(args.seed)
    stored: list[int] = []
    print(f"{'rows':>11} {'lookup':>6} {'p50 us':>8} {'p99 us':>8} {'cand/q':>8}  auto picks")
    for size in sizes:
        started = time.perf_counter()
        stored += grow(filling, len(stored), size, args.seed)
        load = time.perf_counter() - started
        half = args.queries // 2
        queries = [rng.getrandbits(64) for _ in range(half)]
        queries += [near(rng.choice(stored), rng, rng.randrange(1, 4)) for _ in range(half)]
        rng.shuffle(queries)
        stores = {
            name: SimStore(url, namespace="bench", policy=SimHashOnly(), lookup=name)
            for name in LOOKUPS
        }
        answers = {
            name: [[m.key for m in store.query(fingerprint=q)] for q in queries[:300]]
            for name, store in stores.items()
        }  # also the warm-up
        if not answers["bands"] == answers["pairs"] == answers["auto"]:
            raise SystemExit("the lookups disagree: a plan is not exact")
        samples = measure(stores, queries, args.rounds)
        pick = "pairs" if prefers_pairs(3, size) else "bands"
        for name in LOOKUPS:
            lookup = pick if name == "auto" else name
            cand = candidates_per_query(np.array(stored, dtype=np.uint64), queries[:200], lookup)
            print(
                f"{size:>11,} {name:>6} {percentile(samples[name], 0.5):>8.0f} "
                f"{percentile(samples[name], 0.99):>8.0f} {cand:>8.1f}"
                + (f"  {pick} (rows written in {load:.0f} s)" if name == "auto" else "")
            )
        ratio = percentile(samples["pairs"], 0.5) / percentile(samples["bands"], 0.5)
        print(f"{'':>11} pairs/bands p50 = {ratio:.2f}")
        for store in stores.values():
            store.close()
    filling.close()
    print(f"file: {path} ({path.stat().st_size / len(stored):.0f} bytes/row, no decisions rows)")


# --- verification -------------------------------------------------------------------------------

CHUNK = 50_000
POLICIES = {
    "default (MinHash)": MinHashVerification(),
    "SimHashVerification()": SimHashVerification(),
    "SimHashOnly (plain k=3)": SimHashOnly(),
}
POLICIES_REF = "SimHashOnly (plain k=3)"


_SENTENCE_END = re.compile(r"(?<=[。！？!?.;；\n])")


def sentence_pool() -> dict[str, list[str]]:
    """Real sentences of the quality dataset, by language."""
    pool: dict[str, set[str]] = {"zh": set(), "en": set()}
    for text, lang in dataset_languages().items():
        for sentence in _SENTENCE_END.split(text):
            if len(sentence.strip()) >= 8:
                pool[lang].add(sentence.strip())
    return {lang: sorted(sentences) for lang, sentences in pool.items()}


def compose(rng: random.Random, pool: dict[str, list[str]]) -> str:
    lang = rng.choice(("zh", "en"))
    low, high = (30, 139) if rng.random() < 0.6 else (500, 1500)
    target = rng.randint(low, high)
    joiner = "" if lang == "zh" else " "
    text = ""
    while len(text) < target:
        text += (joiner if text else "") + rng.choice(pool[lang])
    return text[:high] if high < 500 else text


def near_duplicate(rng: random.Random, text: str, pool: dict[str, list[str]]) -> str:
    if rng.random() < 0.5:
        return rng.choice(("转发：", "RT @desk: ", "via @feed ")) + text
    parts = _SENTENCE_END.split(text)
    lang = "zh" if re.search(r"[\u4e00-\u9fff]", text) else "en"
    parts[rng.randrange(len(parts))] = rng.choice(pool[lang])
    return "".join(parts)


def namespace(name: str) -> str:
    """The namespace of a policy's store (a namespace records the policy it was made with)."""
    return "verification-" + name.split()[0].strip("()").lower()


def fill(path: Path, texts: list[str]) -> None:
    """Every text kept (keys k0..) in each policy's namespace, signed by the store's own path for
    that policy (``batch.sign``) and loaded."""
    for name, policy in POLICIES.items():
        started = time.perf_counter()
        with SimStore(f"sqlite:///{path}", namespace=namespace(name), policy=policy) as store:
            for first in range(0, len(texts), CHUNK):
                chunk = texts[first : first + CHUNK]
                keys = [f"k{i}" for i in range(first, first + len(chunk))]
                rows = [
                    LoadRow(key=item.key, kept=True, fingerprint=item.fingerprint,
                            text=item.text, signature=item.signature)
                    for item in batch.sign(chunk, keys=keys, policy=policy)
                ]  # fmt: skip
                store.load(rows, batch_size=len(rows))
                done = first + len(rows)
                rate = done / (time.perf_counter() - started)
                print(f"  {name}: {done:,} of {len(texts):,} ({rate:,.0f} texts/s)", end="\r",
                      flush=True)  # fmt: skip
        print()


def report(label: str, samples: dict[str, list[float]], reference: str) -> None:
    base = percentile(samples[reference], 0.5)
    print(f"\n{label}: p50 / p99 us, p50 ratio to {reference}")
    for name, values in samples.items():
        p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
        print(f"  {name:<20} {p50:>8,.0f} / {p99:>8,.0f}   {p50 / base:>5.2f}x")


def verification(argv: Sequence[str]) -> None:
    parser = cli.parser("verification", __doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--adds", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--db", type=Path, help="reuse or build this SQLite file")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    pool = sentence_pool()
    print(f"sentence pool: {len(pool['zh']):,} zh, {len(pool['en']):,} en")
    kept = [compose(rng, pool) for _ in range(args.rows)]
    with tempfile.TemporaryDirectory() as folder:
        filled = args.db or Path(folder) / "verification.db"
        if not filled.exists():
            print(f"writing {args.rows:,} kept texts to {filled}")
            fill(filled, kept)
        size = filled.stat().st_size
        rows = args.rows * len(POLICIES)  # each policy's namespace holds every text
        print(f"{args.rows:,} kept texts a policy, {size / rows:,.0f} bytes per row on disk")
        # timed on a copy: the adds change the file, and a reused one stays as filled
        path = Path(folder) / "timed.db"
        shutil.copy(filled, path)
        url = f"sqlite:///{path}"
        stores = {
            name: SimStore(url, namespace=namespace(name), policy=policy)
            for name, policy in POLICIES.items()
        }
        texts = [
            near_duplicate(rng, rng.choice(kept), pool) if i % 2 else compose(rng, pool)
            for i in range(args.queries)
        ]
        for store in stores.values():  # warm the page cache and the statement caches
            for text in texts[:50]:
                store.query(text)
        query_us: dict[str, list[float]] = {name: [] for name in stores}
        found = dict.fromkeys(stores, 0)
        for i, text in enumerate(texts):
            order = list(stores)[i % 3 :] + list(stores)[: i % 3]
            for name in order:
                result: list[object] = []
                query_us[name] += timed_calls(
                    [lambda s=stores[name], t=text, r=result: r.extend(s.query(t))]
                )
                found[name] += bool(result) and i % 2 == 1
        report(f"query(text), {args.queries} texts (half near-duplicates)", query_us, POLICIES_REF)
        for name, count in found.items():
            print(f"  {name:<20} found {count} of {args.queries // 2} near-duplicates")

        add_us: dict[str, list[float]] = {name: [] for name in stores}
        new = [
            near_duplicate(rng, rng.choice(kept), pool) if i % 2 else compose(rng, pool)
            for i in range(args.adds)
        ]
        run = uuid.uuid4().hex[:8]
        for j, name in enumerate(stores):
            for i, text in enumerate(new):
                key = f"add-{run}-{j}-{i}"
                add_us[name] += timed_calls([lambda s=stores[name], t=text, k=key: s.add(t, key=k)])
        report(f"add(text), {args.adds} texts, one transaction each", add_us, POLICIES_REF)
        sizes = [len(t) for t in texts]
        print(f"\nquery texts: median {int(np.median(sizes))} characters")
        for store in stores.values():
            store.close()


# --- expiry ------------------------------------------------------------------------------------

EXPIRY_DOC = """What expiry by last sighting costs an add that finds a duplicate.

    python -m benchmarks expiry [--kept 2000] [--duplicates 2000] [--url URL]

Two namespaces of one database (a SQLite file by default, or a scratch database on the server
--url names) keep the same texts (made-up words, 40 a text, ``add_many`` at one moment), one
under ``MinHashVerification(expire_by_last_seen=True)``, one under the default. Then each adds
the same near-duplicates of its kept texts (the text with a word dropped, an hour later), one
``add`` and one transaction each, alternating between the two namespaces add by add so that both
see the same machine. With the option on, every such add also moves its kept text to its time
(one UPDATE by key; on PostgreSQL an advisory lock first). Prints p50 / p99 / mean in
microseconds, the ratio of on to off and the difference per duplicate; checks that every kept
text of the namespace with the option moved.
"""


def _made_up_text(rng: random.Random, words: int = 40) -> str:
    return " ".join(
        "".join(rng.choice("bcdfghklmnprstvz") + rng.choice("aeiou") for _ in range(3))
        for _ in range(words)
    )


def expiry(argv: Sequence[str]) -> None:
    parser = cli.parser("expiry", EXPIRY_DOC)
    parser.add_argument("--kept", type=int, default=2000)
    parser.add_argument("--duplicates", type=int, default=2000)
    parser.add_argument("--url", help="a server URL (a scratch database is made on it)")
    args = parser.parse_args(argv)
    rng = random.Random(1)
    texts = [_made_up_text(rng) for _ in range(args.kept)]
    duplicates = []
    for i in range(args.duplicates):
        words = texts[i % args.kept].split()
        del words[rng.randrange(len(words))]
        duplicates.append((i % args.kept, " ".join(words)))
    with contextlib.ExitStack() as stack:
        if args.url:
            url = stack.enter_context(scratch_database(args.url, "simstore_bench"))
        else:
            folder = stack.enter_context(tempfile.TemporaryDirectory())
            url = f"sqlite:///{folder}/expiry.db"
        first = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)
        later = first + timedelta(hours=1)
        stores = {
            option: stack.enter_context(
                SimStore(url, namespace=f"expiry-{option}", auto_upgrade=True, keep="1d",
                         policy=MinHashVerification(expire_by_last_seen=option == "on"))
            )
            for option in ("off", "on")
        }  # fmt: skip
        for store in stores.values():
            list(store.add_many([(str(i), text) for i, text in enumerate(texts)], at=first))
            kept = store.stats().kept
            if kept != args.kept:
                raise SystemExit(f"{store.namespace}: {kept} kept, expected {args.kept}")
        print(f"{dialect_label(url)}: {args.kept:,} kept texts a namespace, "
              f"{args.duplicates:,} duplicates added to each")  # fmt: skip
        samples: dict[str, list[float]] = {option: [] for option in stores}
        for i, (number, text) in enumerate(duplicates):
            for option in ("off", "on") if i % 2 else ("on", "off"):
                store = stores[option]
                key = f"dup-{i}"
                decision = timed(lambda s=store, t=text, k=key: s.add(t, key=k, at=later),
                                 samples[option])  # fmt: skip
                if decision.duplicate_of is None or decision.duplicate_of.key != str(number):
                    raise SystemExit(f"{option}: {key} was not found a duplicate of {number}")
        moved = stores["on"].stats()
        if moved.oldest != later and args.duplicates >= args.kept:
            raise SystemExit(f"the option did not move every kept text (oldest {moved.oldest})")
    print(f"{'expire_by_last_seen':<20} {'p50 us':>8} {'p99 us':>8} {'mean us':>8}")
    means = {}
    for option, values in samples.items():
        means[option] = statistics.fmean(values)
        p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
        print(f"{option:<20} {p50:>8,.0f} {p99:>8,.0f} {means[option]:>8,.0f}")
    ratio = percentile(samples["on"], 0.5) / percentile(samples["off"], 0.5)
    print(f"on / off: {ratio:.2f}x at p50, {means['on'] / means['off']:.2f}x mean; "
          f"{means['on'] - means['off']:+,.0f} us a duplicate (mean)")  # fmt: skip


# --- the memory of boilerplate ---------------------------------------------------------------

BOILERPLATE_DOC = """What the memory of boilerplate costs an add and a query of a short text of several lines.

    python -m benchmarks boilerplate [--kept 2000] [--adds 2000] [--url URL]

Two namespaces of one database (a SQLite file by default, or a scratch database on the server
--url names) keep the same texts: made-up messages of two lines, each under one of 20 recurring
footers of two lines (a text of four lines: the case the memory works for), ``add_many`` at one
moment; one namespace with ``boilerplate_texts=None``, one with the default (3). Then each adds
the same new messages under those footers, one ``add`` and one transaction each, and queries the
same texts, alternating between the two namespaces call by call so that both see the same
machine. With the memory, an add of such a text also reads its lines' counts and upserts them
(a query reads them). Prints p50 / p99 / mean in microseconds and the ratio of on to off; checks
that the memory set the footers aside (a bare copy of a message kept under a footer is found).
A text of one line (most texts of a feed, every text of the window benchmark) costs nothing more.
"""


def _footers(rng: random.Random, count: int) -> list[str]:
    return [_made_up_text(rng, 12) + "\n" + _made_up_text(rng, 8) for _ in range(count)]


def boilerplate(argv: Sequence[str]) -> None:
    parser = cli.parser("boilerplate", BOILERPLATE_DOC)
    parser.add_argument("--kept", type=int, default=2000)
    parser.add_argument("--adds", type=int, default=2000)
    parser.add_argument("--url", help="a server URL (a scratch database is made on it)")
    args = parser.parse_args(argv)
    rng = random.Random(1)
    footers = _footers(rng, 20)

    def message() -> str:
        return _made_up_text(rng, 10) + "\n" + _made_up_text(rng, 8)

    texts = [message() + "\n" + footers[i % len(footers)] for i in range(args.kept)]
    fresh = [message() + "\n" + footers[i % len(footers)] for i in range(args.adds)]
    with contextlib.ExitStack() as stack:
        if args.url:
            url = stack.enter_context(scratch_database(args.url, "simstore_bench"))
        else:
            folder = stack.enter_context(tempfile.TemporaryDirectory())
            url = f"sqlite:///{folder}/boilerplate.db"
        first = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)
        later = first + timedelta(hours=1)
        stores = {
            option: stack.enter_context(
                SimStore(url, namespace=f"boilerplate-{option}", auto_upgrade=True, keep="1d",
                         policy=MinHashVerification(boilerplate_texts=3 if option == "on" else None))
            )
            for option in ("off", "on")
        }  # fmt: skip
        for store in stores.values():
            list(store.add_many([(str(i), text) for i, text in enumerate(texts)], at=first))
        bare = texts[-1].rsplit("\n", 2)[0]
        found = stores["on"].query(bare, now=first)
        if not found or found[0].key != str(args.kept - 1):
            raise SystemExit("the memory did not set the footer aside: a bare copy was not found")
        print(f"{dialect_label(url)}: {args.kept:,} kept texts of four lines a namespace, "
              f"{args.adds:,} adds and queries each")  # fmt: skip
        added: dict[str, list[float]] = {option: [] for option in stores}
        queried: dict[str, list[float]] = {option: [] for option in stores}
        for i, text in enumerate(fresh):
            for option in ("off", "on") if i % 2 else ("on", "off"):
                store = stores[option]
                timed(lambda s=store, t=text, k=f"new-{i}": s.add(t, key=k, at=later),
                      added[option])  # fmt: skip
                probe = texts[i % len(texts)]
                timed(lambda s=store, t=probe: s.query(t, now=later),
                      queried[option])  # fmt: skip
    print(f"{'boilerplate_texts':<20} {'call':<6} {'p50 us':>8} {'p99 us':>8} {'mean us':>8}")
    for call, samples in (("add", added), ("query", queried)):
        for option, values in samples.items():
            p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
            label = "3 (default)" if option == "on" else "None"
            print(
                f"{label:<20} {call:<6} {p50:>8,.0f} {p99:>8,.0f} {statistics.fmean(values):>8,.0f}"
            )
        ratio = percentile(samples["on"], 0.5) / percentile(samples["off"], 0.5)
        print(f"{call}: on / off {ratio:.2f}x at p50")


def main(argv: Sequence[str] | None = None) -> None:
    """``planner|verification|expiry|boilerplate [options]``."""
    cli.dispatch(
        {
            "planner": planner,
            "verification": verification,
            "expiry": expiry,
            "boilerplate": boilerplate,
        },
        argv,
        None,
    )


if __name__ == "__main__":
    main()
