"""The benchmarks' data: the quality dataset's texts, the composed window texts, random
fingerprints, and the two-day window's clock.

The composed texts. A pool of the clauses (lines cut at sentence ends, commas, semicolons and
colons) of the quality dataset's texts (``benchmarks/data/quality/pairs.jsonl``, Chinese and
English). Text ``i`` is composed from ``random.Random(f"{SEED}:{i}")``: it takes the language and
the length of a dataset text drawn at random and strings clauses of that language drawn at random
(at least two) until it reaches that length. So every text can be made again from its number,
texts are distinct (exact repeats, ~0.01-0.02%, are counted), their n-grams are real text's and
their lengths the dataset's. Clauses recur across texts more than sentences of a real feed do, so
a few percent of the texts are near-duplicates of earlier ones.

The clock. Text ``i`` of ``n`` is added at ``moment(i, n)``: evenly over two days from ``DAY1``,
in steps of up to ``STEP`` texts that share one moment (a bulk load writes one moment a call;
``step(n)`` keeps at least 20 moments over the two days, and day 2 begins at text ``n / 2``
when ``n`` is a multiple of 20).
"""

from __future__ import annotations

import json
import random
import re
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt

BENCHMARKS = Path(__file__).resolve().parents[1]
ROOT = BENCHMARKS.parent
DATA = BENCHMARKS / "data"
PAIRS = DATA / "quality" / "pairs.jsonl"

DAY1 = datetime(2026, 3, 1)
SPAN = timedelta(days=2)
END_OF_DAY2 = DAY1 + SPAN - timedelta(minutes=1)
DAY3_ENDS = DAY1 + timedelta(days=3)  # keep 2 days: day 1 is out, day 2 is in
STEP = 1000  # texts that share one moment, at the most

Values = npt.NDArray[np.uint64]


def step(n: int) -> int:
    """How many consecutive texts of ``n`` share a moment (a load call writes them at once)."""
    return max(1, min(STEP, n // 20))


def moment(i: int, n: int) -> datetime:
    """When text ``i`` of ``n`` is added: evenly over the two days, ``step(n)`` texts a moment."""
    span_us = int(SPAN.total_seconds() * 1_000_000)
    return DAY1 + timedelta(microseconds=(i - i % step(n)) * span_us // max(n, 1))


# --- the quality dataset's texts ------------------------------------------------------------------


def dataset_languages(pairs: Path = PAIRS) -> dict[str, str]:
    """The dataset's distinct texts (``a`` then ``b`` of each pair, in file order), each with its
    language (``zh`` or ``en``)."""
    if not pairs.exists():
        raise SystemExit(f"no dataset at {pairs}: run `python -m benchmarks dataset` first")
    seen: dict[str, str] = {}
    with pairs.open(encoding="utf-8") as lines:
        for line in lines:
            pair = json.loads(line)
            for text in (pair["a"], pair["b"]):
                if text.strip():
                    seen.setdefault(text, pair["lang"])
    return seen


def dataset_texts(count: int, pairs: Path = PAIRS) -> list[str]:
    """The dataset's distinct texts, shuffled with seed 1: the first ``count``."""
    chosen = list(dataset_languages(pairs))
    random.Random(1).shuffle(chosen)
    if len(chosen) < count:
        print(f"only {len(chosen):,} distinct texts in {pairs}", flush=True)
    return chosen[:count]


# --- random fingerprints --------------------------------------------------------------------------


def fingerprints(n: int, seed: int) -> Values:
    """N random 64-bit fingerprints (at k = 3 none is near another: a store keeps them all)."""
    return np.random.default_rng(seed).integers(0, 1 << 64, size=n, dtype=np.uint64)


def near(value: int, rng: random.Random, distance: int) -> int:
    """``value`` with ``distance`` distinct bits flipped."""
    for bit in rng.sample(range(64), distance):
        value ^= 1 << bit
    return value


# --- the composed texts ---------------------------------------------------------------------------

# the pool's pieces: clauses (a sentence cut at its commas, semicolons and colons too), so that two
# texts sharing one piece share a small part of their grams, not half of a short text
_SENTENCE = {
    "zh": re.compile(r"[^。！？；，：、\n]+[。！？；，：、]?"),
    "en": re.compile(r"[^\n.!?,;:]+(?:[.!?,;:]+|$)"),
}
_CJK = re.compile(r"[\u4e00-\u9fff]")

# the pool, set in the parent before worker processes fork
SENTENCES: dict[str, list[str]] = {}
TEMPLATES: list[tuple[str, int]] = []  # (language, length) of every dataset text
SEED = 1  # set before the workers fork (``--seed``)


def load_pool(pairs: Path = PAIRS) -> None:
    """Fill SENTENCES and TEMPLATES from the quality dataset (its texts, distinct)."""
    if SENTENCES:
        return
    seen = dataset_languages(pairs)
    sentences: dict[str, dict[str, None]] = {"zh": {}, "en": {}}
    for text, lang in seen.items():
        TEMPLATES.append((lang, len(text)))
        for piece in _SENTENCE[lang].findall(text):
            piece = piece.strip()
            # a table's frame line has nothing to compare: a text of frames only is refused
            if len(piece) >= 4 and any(character.isalnum() for character in piece):
                sentences[lang].setdefault(piece)
    SENTENCES.update({lang: list(found) for lang, found in sentences.items()})


def compose(i: int) -> str:
    """Text number ``i``: sentences of one language drawn until a dataset text's length."""
    rng = random.Random(f"{SEED}:{i}")
    lang, length = TEMPLATES[rng.randrange(len(TEMPLATES))]
    pool = SENTENCES[lang]
    joiner = "" if lang == "zh" else " "
    parts = [pool[rng.randrange(len(pool))], pool[rng.randrange(len(pool))]]
    total = len(parts[0]) + len(parts[1])
    while total < length:
        parts.append(pool[rng.randrange(len(pool))])
        total += len(parts[-1]) + len(joiner)
    return joiner.join(parts)


def near_duplicate(text: str, rng: random.Random) -> str:
    """The text with one word replaced, one deleted and one inserted (characters for Chinese;
    numbers left alone: the default policy treats a changed number as a new message)."""
    cjk = len(_CJK.findall(text)) * 2 > len(text)
    tokens = list(text) if cjk else text.split(" ")
    words = [t for t in tokens if t and not any(c.isdigit() for c in t)] or ["x"]
    candidates = [n for n, t in enumerate(tokens) if t in words]
    if len(tokens) < 4 or not candidates:
        return text + (words[0] if cjk else f" {words[0]}")
    tokens[rng.choice(candidates)] = rng.choice(SENTENCES["zh" if cjk else "en"])[
        : 1 if cjk else 12
    ]
    del tokens[rng.randrange(len(tokens))]
    tokens.insert(rng.randrange(len(tokens) + 1), rng.choice(words))
    return ("" if cjk else " ").join(tokens)


def workload(n: int, count: int, salt: int) -> list[tuple[str, bool]]:
    """``count`` texts: half new (numbers past N), half near-duplicates of texts 0..n-1; each
    with whether it was planted as a near-duplicate."""
    rng = random.Random(f"{SEED}:work:{salt}")
    new = [(compose(n + salt * count + j), False) for j in range(count // 2)]
    near_ = [
        (near_duplicate(compose(rng.randrange(n)), rng), True) for _ in range(count - len(new))
    ]
    texts = new + near_
    rng.shuffle(texts)
    return texts
