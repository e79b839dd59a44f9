"""Pairs that test what a duplicate is: edits merged, identities kept apart, symbols and recurring
footers kept straight. Built from the same real texts as the rest of the benchmark, on both halves.

| kind | label | what the pair is |
| --- | --- | --- |
| ``replace_words`` | 1 | a real text and a copy with 2-10% of its ordinary words (level 1: 2-4%, 2: 4-7%, 3: 7-10%; at least one) each replaced once, at random places, by another ordinary word of the same language's vocabulary of the corpus (a reworded or corrupted copy) |
| ``sibling_package`` | 0 | a Debian package's description (``name - summary``: short; with its long text: medium or long) and the same text with the package name swapped for another installed package's name at every occurrence |
| ``sibling_command`` | 0 | a man page (English or Chinese, its paragraphs joined: long) with its command name swapped for another page's of the same package at every occurrence |
| ``sibling_language`` | 0 | a text naming a language (ISO 639 names, in Chinese from iso-codes' translations) with that language swapped for another at every occurrence (one suite's language packs) |
| ``sibling_name`` | 0 | a Chinese text with one organisation or product name (jieba ``nt``/``nz``) swapped for another of the pool at every occurrence |
| ``version_bump`` | 0 | a medium or long text with one or more of its version numbers (``1.2``, ``3.0.7``) changed, each at every occurrence |
| ``symbol`` | 0 | a text naming ``C++``, ``C#``, ``.NET`` or ``--verbose`` and the same text with ``C``, ``C``, ``NET`` or ``-v`` (``C#`` and ``.NET`` are rare in the corpus: a ``C++`` text is also paired as ``C#`` against ``C``) |
| ``recurring_footer`` | 0 | two unrelated short or medium texts under one recurring footer (a mail disclaimer, a signature, a "related reading" block of real Debian Reference titles, a cookie notice); each footer is put under about 15 texts of one half, which the stream sends within one day (``Pair.burst``); the disclaimers and signatures are written here, as ``edits.FOOTERS`` are |
| ``footer_added`` | 1 | a text and the same text re-sent under one of those footers |

Version bumps are labelled non-duplicates: a version is identity (``DESIGN.md``: texts of one
template filled in twice are look-alikes, "a name, product, language, package, version, number,
date or identifier"). Two announcements or descriptions of 2.3 and 2.4 describe different
releases, and a merge throws the second away for good; a feed that wants them merged is the
crawler's case that the policy's one identity option serves. The table reports them as their own
row, so the share merged is visible whichever side a reader takes.

Every pair's family is the real text it was made from, so it lands in that text's half; the
footers are split between the halves by a seeded hash too. A non-duplicate whose two texts are
identical after the benchmark's normalisation (``same_normalised``: case, width, white space and
punctuation ignored, symbols in or after a word kept) is not made: such texts count as duplicates.
"""

from __future__ import annotations

import gettext
import json
import random
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from benchmarks.quality import build_dataset, hard, sources
from benchmarks.quality.build_dataset import Pair, ident, size_of
from benchmarks.quality.sources import Text

NEW_KINDS = frozenset(
    {
        "replace_words",
        "sibling_package",
        "sibling_command",
        "sibling_language",
        "sibling_name",
        "version_bump",
        "symbol",
        "recurring_footer",
        "footer_added",
    }
)
REPLACE_RATES = {1: (0.02, 0.04), 2: (0.04, 0.07), 3: (0.07, 0.10)}
REPLACE_COUNT = {"short": 300, "mid": 160, "long": 200}  # per language, both halves together
SIBLINGS_PER_KIND = {"short": 240, "mid": 160, "long": 160}
VERSIONS_PER_GROUP = 160
SYMBOLS_PER_GROUP = 160
BURST = 15  # texts under one recurring footer
FOOTER_ADDED_EVERY = 3  # one text in three of a burst is also sent without its footer
MIN_VOCAB_TEXTS = 5  # an ordinary word is found in at least this many texts of the language
ISO_639 = Path("/usr/share/iso-codes/json/iso_639-2.json")
LOCALES = Path("/usr/share/locale")


# --- the benchmark's normalisation -------------------------------------------------------------

_KEPT_SYMBOL = re.compile(r"(?<=\w)[+#]+|(?<![\w.\-])[.\-]+(?=\w)")


def normalised(text: str) -> str:
    """Case, width, white space and punctuation ignored; symbols in or after a word kept (``C++``,
    ``C#``, ``.NET``, ``--verbose``): the benchmark's own, independent of simstore's."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = []
    at = 0
    for match in _KEPT_SYMBOL.finditer(folded):
        out.append(re.sub(r"[^\w]+", " ", folded[at : match.start()]))
        out.append(match.group())
        at = match.end()
    out.append(re.sub(r"[^\w]+", " ", folded[at:]))
    return " ".join("".join(out).split())


def same_normalised(a: str, b: str) -> bool:
    """Whether two texts are identical after ``normalised``: a duplicate whatever their source."""
    return normalised(a) == normalised(b)


# --- (a) ordinary words replaced -----------------------------------------------------------------

_EN_WORD = re.compile(r"(?<![\w'-])[a-z]{3,}(?![\w'-])")
_CJK_WORD = re.compile(r"^[\u4e00-\u9fff]{2,}$")


def _zh_words(text: str) -> list[str]:
    import jieba  # the benchmark's extra (hard.py's look-alikes use it too)

    return list(jieba.cut(text))


def vocabulary(texts: Iterable[str], lang: str) -> list[str]:
    """Ordinary words of a language's texts: lower-case words of three letters or more (English),
    words of two or more Chinese characters (Chinese, jieba), found in ``MIN_VOCAB_TEXTS`` texts."""
    found: Counter[str] = Counter()
    for text in texts:
        if lang == "en":
            found.update(set(_EN_WORD.findall(text)))
        else:
            found.update({w for w in _zh_words(text) if _CJK_WORD.match(w)})
    return sorted(word for word, n in found.items() if n >= MIN_VOCAB_TEXTS)


def replace_words(
    rng: random.Random, text: str, lang: str, level: int, vocab: Sequence[str], known: set[str]
) -> str | None:
    """``text`` with a share of its words (``REPLACE_RATES[level]``, at least one) each replaced
    once, at random places, by another ordinary word; only ordinary words are replaced."""
    if lang == "en":
        pieces = re.split(r"(\W+)", text)
        words = [i for i, p in enumerate(pieces) if p and not re.match(r"\W", p)]
        places = [i for i in words if pieces[i] in known and _EN_WORD.fullmatch(pieces[i])]
    else:
        pieces = _zh_words(text)
        words = [i for i, p in enumerate(pieces) if re.search(r"\w", p)]
        places = [i for i in words if pieces[i] in known]
    low, high = REPLACE_RATES[level]
    count = max(1, round(len(words) * rng.uniform(low, high)))
    if len(places) < count or len(words) < 5:
        return None
    for i in rng.sample(places, count):
        new = pieces[i]
        while new == pieces[i]:
            new = rng.choice(vocab)
        pieces[i] = new
    return "".join(pieces)


def replaced_pairs(seed: int, pools: dict[tuple[str, str], list[Text]]) -> list[Pair]:
    pairs: list[Pair] = []
    for lang in ("en", "zh"):
        texts = [t.text for size in ("short", "mid", "long") for t in pools.get((lang, size), [])]
        sample = random.Random(f"{seed}:vocab:{lang}").sample(texts, min(len(texts), 6000))
        vocab = vocabulary(sample, lang)
        known = set(vocab)
        for size in ("short", "mid", "long"):
            rng = random.Random(f"{seed}:replace_words:{lang}:{size}")
            made = 0
            for base in build_dataset.round_robin(rng, pools.get((lang, size), []), 10**9):
                if made >= REPLACE_COUNT[size]:
                    break
                level = rng.randint(1, 3)
                edited = replace_words(rng, base.text, lang, level, vocab, known)
                if edited is None or size_of(base.text, edited) != size:
                    continue
                group = f"{lang}-{size}"
                pairs.append(
                    Pair(
                        group,
                        lang,
                        size,
                        1,
                        "replace_words",
                        level,
                        base.source,
                        ident(base),
                        base.text,
                        edited,
                    )
                )
                made += 1
    return pairs


# --- (b) siblings that differ by identity --------------------------------------------------------


def swap_everywhere(text: str, old: str, new: str) -> str:
    """``old`` replaced by ``new`` at every occurrence as a whole token (its upper-case and
    capitalised forms too: a man page's header says GIT-LOG)."""
    out = text
    forms = {old: new, old.upper(): new.upper(), old.capitalize(): new.capitalize()}
    if old[:1].isupper() and old[1:].islower():  # a name written in lower case ('italian')
        forms[old.lower()] = new.lower()
    for before, after in forms.items():
        if re.search(r"[\u4e00-\u9fff]", before):
            out = out.replace(before, after)
        else:
            out = re.sub(rf"(?<![\w.+#-]){re.escape(before)}(?![\w+#]|-\w)", after, out)
    return out


def _negative(kind: str, lang: str, a: str, b: str, source: str, family: str) -> Pair | None:
    size = size_of(a, b)
    if size is None or a == b or same_normalised(a, b):
        return None
    return Pair(f"{lang}-{size}", lang, size, 0, kind, 0, source, family, a, b)


def _capped(pairs: list[Pair], cap: dict[str, int] | int, rng: random.Random) -> list[Pair]:
    by_group: dict[str, list[Pair]] = defaultdict(list)
    for pair in pairs:
        by_group[pair.group].append(pair)
    kept: list[Pair] = []
    for group, members in sorted(by_group.items()):
        rng.shuffle(members)
        limit = cap if isinstance(cap, int) else cap[group.split("-")[1]]
        kept += members[:limit]
    return kept


def package_siblings(rng: random.Random, docs: list[hard.Doc]) -> list[Pair]:
    """A package's description (its summary line alone, or whole) with another package's name."""
    names = sorted({d.owner for d in docs})
    by_prefix: dict[str, list[str]] = defaultdict(list)
    for name in names:
        by_prefix[re.split(r"[-\d]", name)[0][:3]].append(name)
    pairs = []
    for doc in docs:
        name = doc.owner
        if len(name) < 3 or not re.search(rf"(?<![\w.+#-]){re.escape(name)}", doc.text):
            continue
        pool = [n for n in by_prefix[re.split(r"[-\d]", name)[0][:3]] if n != name] or names
        other = rng.choice(pool)
        if other in doc.text or name in other:
            continue
        summary = doc.text.split("\n", 1)[0]
        for text in (summary, doc.text):
            pair = _negative(
                "sibling_package",
                "en",
                text,
                swap_everywhere(text, name, other),
                "dpkg-status",
                doc.key,
            )
            if pair is not None:
                pairs.append(pair)
    return pairs


def man_texts() -> list[tuple[str, str, str, str]]:
    """``(package, command, lang, text)`` of the man pages the pools read, paragraphs joined,
    cut to at most 3,000 characters at a paragraph."""
    out = []
    for package, page, paragraphs in sources.man_pages():
        lang = "zh" if package == "manpages-zh" else "en"
        command = page.rsplit(".", 1)[0]
        text = ""
        for paragraph in paragraphs:
            if len(text) + len(paragraph) > 3000:
                break
            text += ("\n\n" if text else "") + paragraph
        if len(text) > 500 and len(command) >= 3:
            out.append((package, page, lang, text))
    return out


def command_siblings(rng: random.Random, pages: list[tuple[str, str, str, str]]) -> list[Pair]:
    """A man page with another page's command name (same package and language) everywhere."""
    by_package: dict[tuple[str, str], list[str]] = defaultdict(list)
    for package, page, lang, _text in pages:
        by_package[(package, lang)].append(page.rsplit(".", 1)[0])
    pairs = []
    for package, page, lang, text in pages:
        command = page.rsplit(".", 1)[0]
        if not re.search(rf"(?<![\w.+#-]){re.escape(command)}(?![\w+#]|-\w)", text):
            continue
        choices = by_package[(package, lang)]
        other = next(
            (c for c in (rng.choice(choices) for _ in range(20)) if c != command and c not in text),
            None,
        )
        if other is None:
            continue
        family = f"{package}:{page}"  # the pools' key of this page (``split_key``)
        pair = _negative(
            "sibling_command", lang, text, swap_everywhere(text, command, other), package, family
        )
        if pair is not None:
            pairs.append(pair)
    return pairs


def language_names() -> dict[str, list[str]]:
    """Language names by the benchmark's languages: ISO 639-2 names that have a two-letter code
    (the major languages), one word each, and their Chinese translations from iso-codes."""
    entries = json.loads(ISO_639.read_text(encoding="utf-8"))["639-2"]
    english = sorted(
        {
            e["name"]
            for e in entries
            if "alpha_2" in e and re.fullmatch(r"[A-Z][a-z]{3,}", e["name"])
        }
    )
    translation = gettext.translation(
        "iso_639-2", localedir=str(LOCALES), languages=["zh_CN"], fallback=True
    )
    chinese = sorted({t for n in english if (t := translation.gettext(n)) != n and len(t) >= 2})
    return {"en": english, "zh": chinese}


def language_siblings(
    rng: random.Random, items: Iterable[tuple[str, str, str, str]], names: dict[str, list[str]]
) -> list[Pair]:
    """``(source, family, lang, text)`` naming a language, with another language everywhere."""
    known = {lang: set(found) for lang, found in names.items()}
    widths = sorted({len(n) for n in names["zh"]})
    pairs = []
    for source, family, lang, text in items:
        if lang == "en":
            found = sorted(set(re.findall(r"\b[A-Z][a-z]{3,}\b", text)) & known["en"])
        else:  # every run of a translated name's length, looked up
            runs = {text[i : i + w] for w in widths for i in range(len(text) - w + 1)}
            found = sorted(runs & known["zh"])
        if not found:
            continue
        old = rng.choice(found)
        others = [n for n in names[lang] if n != old and old not in n]
        new = rng.choice(others)
        if new in text:
            continue
        pair = _negative(
            "sibling_language", lang, text, swap_everywhere(text, old, new), source, family
        )
        if pair is not None:
            pairs.append(pair)
    return pairs


def name_siblings(rng: random.Random, pool: list[Text]) -> list[Pair]:
    """Chinese texts with one organisation or product name (jieba nt/nz) swapped, at every
    occurrence in the body (a saying's attribution left alone), for another of the same tag."""
    import jieba.posseg

    names: dict[Text, list[tuple[str, str]]] = {}
    every: dict[str, set[str]] = defaultdict(set)
    for item in pool:
        cut = jieba.posseg.cut(build_dataset.body(item))
        found = sorted(
            {(p.word, p.flag) for p in cut if p.flag in ("nt", "nz") and len(p.word) >= 2}
        )
        if found:
            names[item] = found
            for word, flag in found:
                every[flag].add(word)
    by_flag = {flag: sorted(words) for flag, words in every.items()}
    pairs = []
    for item, found in names.items():
        old, flag = rng.choice(found)
        new = rng.choice(by_flag[flag])
        if new == old or new in item.text or old in new:
            continue
        body = build_dataset.body(item)
        swapped = body.replace(old, new) + item.text[len(body) :]
        pair = _negative("sibling_name", "zh", item.text, swapped, item.source, ident(item))
        if pair is not None:
            pairs.append(pair)
    return pairs


# --- (c) version bumps ---------------------------------------------------------------------------

# a version follows a name or "version" and a space (``Python 3.11``, ``Version 11.0``,
# ``coreutils 9.1``), or is written ``v1.2``; section numbers (``3.1.1.``, ``see 5.2``) are not
_VERSION = re.compile(r"(?<![\w.])v?\d{1,3}(?:\.\d{1,3}){1,3}(?![\w]|\.\d)")
_BEFORE = re.compile(r"(?:([A-Za-z][\w+-]*) |版本 ?)$")
_NOT_A_NAME = frozenset({"section", "chapter", "table", "figure", "see", "step", "and", "or", "to"})


def versions_in(text: str) -> list[str]:
    """The distinct version numbers of a text (see ``_VERSION``), in order."""
    found: list[str] = []
    for match in _VERSION.finditer(text):
        before = _BEFORE.search(text[max(0, match.start() - 30) : match.start()])
        named = before is not None and (before.group(1) or "版本").casefold() not in _NOT_A_NAME
        if (named or match.group().startswith("v")) and match.group() not in found:
            found.append(match.group())
    return found


def bump(rng: random.Random, version: str) -> str:
    """Another version: one component changed (the last raised, or a middle one raised and the
    rest zeroed), as a release does."""
    prefix = "v" if version.startswith("v") else ""
    parts = [int(p) for p in version.removeprefix("v").split(".")]
    at = len(parts) - 1 if rng.random() < 0.6 else rng.randrange(len(parts))
    parts[at] += rng.randint(1, 3)
    parts[at + 1 :] = [0] * (len(parts) - at - 1)
    return prefix + ".".join(map(str, parts))


def version_bumps(rng: random.Random, items: Iterable[tuple[str, str, str, str]]) -> list[Pair]:
    """A medium or long text and a copy with 1-3 of its version numbers changed everywhere."""
    pairs = []
    for source, family, lang, text in items:
        versions = versions_in(text)
        if not versions or len(text) < build_dataset.SHORT:
            continue
        level = rng.randint(1, min(3, len(versions)))
        out = text
        for old in rng.sample(versions, level):
            out = re.sub(rf"(?<![\w.]){re.escape(old)}(?![\w]|\.\d)", bump(rng, old), out)
        pair = _negative("version_bump", lang, text, out, source, family)
        if pair is not None and pair.size != "short":
            pairs.append(replace(pair, level=level))
    return pairs


# --- (d) symbols -------------------------------------------------------------------------------

SYMBOLS = (("C++", "C"), ("C#", "C"), (".NET", "NET"), ("--verbose", "-v"))


def symbol_pairs(rng: random.Random, items: Iterable[tuple[str, str, str, str]]) -> list[Pair]:
    """A text naming a symbol-bearing name and the same text with the symbol-less one."""
    pairs = []
    for source, family, lang, text in items:
        for symbol, plain in SYMBOLS:
            if not re.search(rf"(?<![\w.+#-]){re.escape(symbol)}(?![\w+#])", text):
                continue
            a = text
            if symbol == "C++" and rng.random() < 0.3:  # C# is rare in the corpus: C# against C
                a = swap_everywhere(text, "C++", "C#")
            b = (
                swap_everywhere(text, symbol, plain)
                if a == text
                else swap_everywhere(text, "C++", "C")
            )
            pair = _negative("symbol", lang, a, b, source, family)
            if pair is not None:
                pairs.append(pair)
            break
    return pairs


# --- (e) recurring footers -----------------------------------------------------------------------

DISCLAIMERS = {
    "en": [
        "This e-mail and any attachments are confidential. If you are not the intended recipient, "
        "please delete it.",
        "Opinions expressed here are my own and not those of my employer.",
        "Please consider the environment before printing this e-mail.",
        "We use cookies to improve your experience. By continuing you accept our cookie policy.",
        "Unsubscribe from this list | Manage your preferences | Contact support",
    ],
    "zh": [
        "本邮件及其附件含有保密信息，如果您不是收件人，请立即删除。",
        "以上内容仅代表个人观点，与所在单位无关。",
        "本网站使用Cookie以改善您的体验，继续浏览即表示您同意我们的Cookie政策。",
        "点击退订 | 管理订阅 | 联系客服",
        "打印前请考虑环境保护。",
    ],
}


def _signature(rng: random.Random, lang: str) -> str:
    name = rng.choice(hard_names[lang])
    if lang == "en":
        role = rng.choice(["Release Manager", "Support Team", "Maintainer", "Sales"])
        return f"--\n{name}\n{role}\nphone +1 555 {rng.randint(1000, 9999)}"
    role = rng.choice(["技术支持部", "市场部", "编辑部", "客服中心"])
    return f"——\n{name}\n{role}\n电话 010-{rng.randint(10000000, 99999999)}"


hard_names = {
    "en": ["J. Doe", "Sam Kim", "Alice Martin", "Bob Li", "Maria Torres", "Lee Wong"],
    "zh": ["张华", "李雷", "王明", "韩梅梅", "赵小燕", "刘强"],
}


def section_titles(lang: str) -> list[str]:
    """Section titles of the Debian Reference (``1.2.3. Title``): the "related reading" links."""
    tag = "en" if lang == "en" else "zh-cn"
    path = sources.DEBIAN_REFERENCE / f"debian-reference.{tag}.txt.gz"
    import gzip

    text = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
    titles = []
    for body in sources.sections(text).values():
        title = re.sub(
            r"^\s*(?:Chapter\s+|第\s*)?[\dA-Z.]+\.?\s+", "", body.split("\n", 1)[0]
        ).strip()
        if 6 <= len(title) <= 40:
            titles.append(title)
    return sorted(set(titles))


def footers(rng: random.Random, lang: str, count: int) -> list[str]:
    """``count`` recurring footers: every disclaimer, then signatures and "related reading"
    blocks in turn."""
    titles = section_titles(lang)
    out: list[str] = list(DISCLAIMERS[lang])
    heading = "Related reading:" if lang == "en" else "相关阅读："
    while len(out) < count:
        if len(out) % 2:
            footer = _signature(rng, lang)
        else:
            footer = heading + "".join(f"\n- {t}" for t in rng.sample(titles, 2))
        if footer not in out:
            out.append(footer)
    rng.shuffle(out)
    return out


def footer_pairs(seed: int, pools: dict[tuple[str, str], list[Text]]) -> list[Pair]:
    """Bursts of ``BURST`` texts of one half under one recurring footer: consecutive texts of a
    burst are non-duplicates (``recurring_footer``), and every third text is also paired with
    itself without the footer (``footer_added``, a duplicate)."""
    pairs: list[Pair] = []
    for lang in ("en", "zh"):
        rng = random.Random(f"{seed}:recurring:{lang}")
        blocks = footers(rng, lang, 24)
        for size in ("short", "mid"):
            by_half: dict[str, list[Text]] = defaultdict(list)
            for item in pools.get((lang, size), []):
                by_half[hard.half(seed, ident(item))].append(item)
            for name, members in sorted(by_half.items()):
                chosen = [f for f in blocks if hard.half(seed, f"recurring:{f}") == name]
                members = sorted(members, key=ident)
                rng.shuffle(members)
                used = 0
                for number, footer in enumerate(chosen):
                    burst = f"{lang}-{size}-{name}-{number}"
                    fitting: list[tuple[Text, str]] = []
                    while used < len(members) and len(fitting) < BURST:
                        item = members[used]
                        used += 1
                        wrapped = item.text + "\n\n" + footer
                        if size_of(item.text, wrapped) == size:
                            fitting.append((item, wrapped))
                    pairs += _burst_pairs(lang, burst, fitting)
    return pairs


def _burst_pairs(lang: str, burst: str, fitting: list[tuple[Text, str]]) -> list[Pair]:
    pairs = []
    for n, (item, wrapped) in enumerate(fitting):
        size = size_of(item.text, wrapped)
        if size is None:
            continue
        group = f"{lang}-{size}"
        if n % FOOTER_ADDED_EVERY == 0:
            pairs.append(
                Pair(
                    group,
                    lang,
                    size,
                    1,
                    "footer_added",
                    0,
                    item.source,
                    ident(item),
                    item.text,
                    wrapped,
                    burst=burst,
                )
            )
        if n + 1 < len(fitting):
            other, other_wrapped = fitting[n + 1]
            if build_dataset.coverage(item.text, other.text, lang) > build_dataset.NONDUP_MAX:
                continue
            made = _negative(
                "recurring_footer", lang, wrapped, other_wrapped, item.source, ident(item)
            )
            if made is not None:
                pairs.append(replace(made, b_from=ident(other), burst=burst))
    return pairs


# --- the whole set -------------------------------------------------------------------------------


def difference_pairs(seed: int, pools: dict[tuple[str, str], list[Text]]) -> list[Pair]:
    """Every pair of this module (see the docstring); halves are assigned by the caller."""
    pairs = replaced_pairs(seed, pools)
    rng = random.Random(f"{seed}:siblings")
    packages = hard.package_docs()
    pairs += _capped(package_siblings(rng, packages), SIBLINGS_PER_KIND, rng)
    pages = man_texts()
    pairs += _capped(command_siblings(rng, pages), SIBLINGS_PER_KIND, rng)
    # every text of the pools, the package descriptions and the man pages, with its family
    items: list[tuple[str, str, str, str]] = [
        (t.source, ident(t), t.lang, t.text) for pool in pools.values() for t in pool
    ]
    items += [("dpkg-status", d.key, "en", d.text) for d in packages]
    items += [("dpkg-status", d.key, "en", d.text.split("\n", 1)[0]) for d in packages]
    items += [(package, f"{package}:{page}", lang, text) for package, page, lang, text in pages]
    items.sort()
    names = language_names()
    pairs += _capped(language_siblings(rng, items, names), SIBLINGS_PER_KIND, rng)
    zh = [t for size in ("short", "mid") for t in pools.get(("zh", size), [])]
    zh = build_dataset.round_robin(rng, sorted(zh, key=ident), 4000)
    pairs += _capped(name_siblings(rng, zh), SIBLINGS_PER_KIND, rng)
    pairs += _capped(version_bumps(rng, items), VERSIONS_PER_GROUP, rng)
    pairs += _capped(symbol_pairs(rng, items), SYMBOLS_PER_GROUP, rng)
    pairs += footer_pairs(seed, pools)
    return pairs
