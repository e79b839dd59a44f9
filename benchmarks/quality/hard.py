"""Hard cases for the quality benchmark (issue 14): shared boilerplate, templates and look-alikes.

Every text is real and read from this machine (see ``sources.py`` for the packages the base
benchmark installs; this module adds ``git-man`` and reads what Debian installed anyway):

| kind | label | what the pair is |
| --- | --- | --- |
| ``copyright`` | 0 | the Debian copyright files (/usr/share/doc/*/copyright) of two different source packages that share licence text: for each file, its nearest file of another source (character 3-gram Jaccard) whose copyright holders differ |
| ``man_family`` | 0 | two man pages of one package family (git, coreutils, systemd, openssl, util-linux, mariadb, llvm; Chinese: manpages-zh), rendered with groff for an 80-column terminal: the same header, footer, option and "see also" sections around a different command |
| ``man_roff`` | 0 | the same kind of pair, as the raw roff source (macros, escapes and generator preambles as they appear) |
| ``package_siblings`` | 0 | the descriptions (dpkg status) of two binary packages of one source (lib* / lib*-dev / -doc / -tools) |
| ``shared_footer`` | 0 | two unrelated texts of one group, both wrapped in the same real long disclaimer or footer (GPL warranty disclaimer, licence notices, the Chinese man pages' translation footer) making 35-70% of each |
| ``table_frame`` | 0 | two different tables of the Debian Reference drawn the same way (ASCII, or box characters) |
| ``lookalike`` | 0 | a real short text and a copy with its names, numbers and content words swapped for others of the same pool (jieba parts of speech for Chinese), at least two slots: the template of one message filled with another's facts (a fortune's attribution line is left alone; fillers are drawn by slot kind, so the result is often implausible: it tests that swapped facts outweigh a shared frame, not realism) |
| ``table_box_ascii`` | 1 | a table of the Debian Reference as printed (ASCII) and the same table redrawn with box-drawing characters: the same content, so a duplicate |
| ``man_reflow`` | 1 | one man page rendered at two widths (80 and 66 columns): the same page, reflowed |
| ``<domain>:<edit>`` | 1 | a copyright file, man page or package description and an edit of it (``edits.py``), so that recall is measured on the same kind of text |

Negatives are labelled by where they come from (different packages, commands or messages); a pair
is kept only when neither text is contained in the other and, for ``copyright``, the holders
differ. Each document is assigned to a half (``tune``/``test``) by a seeded hash of its own key,
and both texts of a pair come from documents of the same half, so no text is in both halves; the
boilerplate wrappers are split the same way.
"""

from __future__ import annotations

import gzip
import random
import re
import subprocess
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from benchmarks.quality import build_dataset, sources
from benchmarks.quality.build_dataset import NearestIndex, Pair, Text, coverage, size_of

HARD_PACKAGES = ("git-man",)
MAN_FAMILIES: dict[str, tuple[str, str]] = {  # family -> (Debian package, language)
    "git": ("git-man", "en"),
    "coreutils": ("coreutils", "en"),
    "systemd": ("systemd", "en"),
    "openssl": ("openssl", "en"),
    "util-linux": ("util-linux", "en"),
    "mariadb": ("mariadb-client", "en"),
    "llvm": ("llvm-14", "en"),
    "manpages-zh": ("manpages-zh", "zh"),
}
PAGES_PER_FAMILY = {"en": 70, "zh": 220}
MAX_DOC = 12000  # longer documents are cut at a paragraph break before this many characters
COPYRIGHT_DIR = Path("/usr/share/doc")
DPKG_STATUS = Path("/var/lib/dpkg/status")
GPL3 = Path("/usr/share/common-licenses/GPL-3")
APACHE = Path("/usr/share/common-licenses/Apache-2.0")
EDITS_PER_DOMAIN = 150
RENDER_TIMEOUT = 10  # seconds


def half(seed: int, key: str) -> str:
    """The half a document belongs to (the same rule as ``build_dataset.assign_split``)."""
    return build_dataset.half_of(seed, key)


def cut(text: str, limit: int = MAX_DOC) -> str:
    """``text`` up to the last blank line before ``limit`` characters (whole when shorter)."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    at = head.rfind("\n\n")
    return head[:at] if at > limit // 2 else head


@dataclass(frozen=True)
class Doc:
    key: str  # unique document key; decides the half
    owner: str  # who the document is about (source package, command); pairs need two owners
    family: str  # the family a negative pair is drawn within
    lang: str
    text: str


# --- (a) copyright files -----------------------------------------------------------------------


def source_packages() -> dict[str, str]:
    """Binary package -> source package, for every installed package."""
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${Source}\n"], capture_output=True, text=True
    ).stdout
    mapping = {}
    for line in out.splitlines():
        name, _, source = line.partition(" ")
        mapping[name.split(":")[0]] = (source.split() or [name])[0]
    return mapping


_HOLDER = re.compile(r"(?im)^\s*(?:Copyright\s*:?|\(c\)|©)\s*(.+)$")


def holders(text: str) -> set[str]:
    """The copyright holder lines of a copyright file, years and punctuation removed."""
    found = set()
    for match in _HOLDER.finditer(text):
        line = re.sub(r"(?i)copyright|\(c\)|©|\d{4}(?:\s*[-,]\s*\d{2,4})*", " ", match.group(1))
        words = re.findall(r"[^\W\d_]{2,}", line.casefold())
        if words:
            found.add(" ".join(words[:6]))
    return found


def copyright_docs(mapping: dict[str, str] | None = None) -> list[Doc]:
    """One document per distinct copyright file (the first package by name that ships it)."""
    mapping = source_packages() if mapping is None else mapping
    seen: set[str] = set()
    docs = []
    for folder in sorted(COPYRIGHT_DIR.iterdir()):
        path = folder / "copyright"
        if folder.is_symlink() or not path.is_file():
            continue
        text = cut(path.read_text(encoding="utf-8", errors="replace").strip())
        if text in seen or len(text) < 200 or "\ufffd" in text:
            continue
        seen.add(text)
        source = mapping.get(folder.name, folder.name)
        docs.append(Doc(f"copyright:{source}", source, "copyright", "en", text))
    # two distinct files of one source (several versions installed) share a key: keep the first
    unique: dict[str, Doc] = {}
    for doc in docs:
        unique.setdefault(doc.key, doc)
    return list(unique.values())


def different_holders(a: str, b: str) -> bool:
    left, right = holders(a), holders(b)
    if not left or not right:
        return False
    return len(left & right) / len(left | right) < 0.5


# --- (b) man pages of one family ---------------------------------------------------------------


def _man_paths(package: str, lang: str) -> list[Path]:
    listing = subprocess.run(
        ["dpkg-query", "-L", package], capture_output=True, text=True, check=False
    ).stdout
    paths = []
    for line in sorted(listing.splitlines()):
        if not line.endswith(".gz") or "/man/" not in line:
            continue
        if (lang == "zh") != ("/zh_CN/" in line) or (
            lang == "en" and re.search(r"/man/(?!man)[^/]+/", line)
        ):
            continue
        path = Path(line)
        if path.is_symlink() or not path.is_file():
            continue
        paths.append(path)
    return paths


def render_man(source: bytes, width: int = 80) -> str:
    """A man page as groff prints it for a terminal of ``width`` columns (tbl tables, the input
    encoding guessed by preconv; left-adjusted, no bold or underline), blank runs squeezed."""
    command = ["groff", "-k", "-t", "-man", "-Tutf8", "-P-cbou", "-dAD=l"]
    command += [f"-rLL={width}n", f"-rLT={width}n"]
    try:  # a few pages send the formatter into a loop: give up on them
        result = subprocess.run(
            command, input=source, capture_output=True, check=False, timeout=RENDER_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        return ""
    text = result.stdout.decode("utf-8", errors="replace")
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def man_docs(
    rng: random.Random, families: dict[str, tuple[str, str]] = MAN_FAMILIES
) -> tuple[list[Doc], list[Doc], list[tuple[Doc, str]]]:
    """Rendered pages, raw roff pages, and (page, the same page rendered at 66 columns)."""
    rendered, raw, reflowed = [], [], []
    for family, (package, lang) in sorted(families.items()):
        paths = _man_paths(package, lang)
        rng.shuffle(paths)
        kept = 0
        for path in paths:
            if kept >= PAGES_PER_FAMILY[lang]:
                break
            data = gzip.decompress(path.read_bytes())
            source = data.decode("utf-8", errors="replace")
            if source.lstrip().startswith(".so ") or "\ufffd" in source:
                continue
            page = path.name.removesuffix(".gz")
            text = render_man(data)
            if len(text) < 300 or sources.language(text) not in (lang, None):
                continue
            if lang == "zh" and sources.cjk_share(text) < 0.3:
                continue
            kept += 1
            key = f"man:{family}:{page}"
            doc = Doc(key, page, family, lang, cut(text))
            rendered.append(doc)
            raw.append(Doc(key, page, family, lang, cut(source.strip())))
            if kept % 3 == 0:
                other = cut(render_man(data, 66))
                if other != doc.text:
                    reflowed.append((doc, other))
    return rendered, raw, reflowed


# --- (c) sibling package descriptions -------------------------------------------------------


def package_docs(status: Path = DPKG_STATUS) -> list[Doc]:
    """``name - short description`` and the long description of every installed package."""
    docs = []
    for record in status.read_text(encoding="utf-8", errors="replace").split("\n\n"):
        fields: dict[str, str] = {}
        current = ""
        for line in record.split("\n"):
            if line.startswith((" ", "\t")) and current:
                fields[current] += "\n" + line
            elif ":" in line:
                current, _, value = line.partition(":")
                fields[current] = value.strip()
        if "Package" not in fields or "Description" not in fields:
            continue
        short, _, long = fields["Description"].partition("\n")
        body = "\n".join("" if ln.strip() == "." else ln[1:] for ln in long.split("\n"))
        text = f"{fields['Package']} - {short}\n\n{body.strip()}".strip()
        source = fields.get("Source", fields["Package"]).split()[0]
        docs.append(Doc(f"package:{fields['Package']}", fields["Package"], source, "en", text))
    return docs


# --- (d) shared footers ------------------------------------------------------------------------


def _paragraphs(text: str) -> list[str]:
    return [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def footers() -> dict[str, list[str]]:
    """Real long disclaimers and footers by language (licences, notices, translation footers)."""
    found: dict[str, list[str]] = {"en": [], "zh": []}
    if GPL3.exists():
        gpl = _paragraphs(GPL3.read_text())
        for start in ("15. Disclaimer of Warranty.", "16. Limitation of Liability."):
            at = next((i for i, p in enumerate(gpl) if p.startswith(start)), None)
            if at is not None:
                found["en"].append(gpl[at] + "\n\n" + gpl[at + 1])
        at = next((i for i, p in enumerate(gpl) if p.startswith("This program is free")), None)
        if at is not None:
            found["en"].append("\n\n".join(gpl[at : at + 3]))
    if APACHE.exists():
        apache = _paragraphs(APACHE.read_text())
        found["en"] += [p for p in apache if p.startswith(("7. Disclaimer", "8. Limitation"))]
    mit = COPYRIGHT_DIR / "libxcb1" / "copyright"
    if mit.exists():
        found["en"] += [p for p in _paragraphs(mit.read_text()) if "AS IS" in p][:1]
    found["zh"] += _zh_man_footers()
    faq = sources.DEBIAN_FAQ / "debian-faq.zh-cn.txt.gz"
    if faq.exists():  # the FAQ's licence notice
        text = gzip.decompress(faq.read_bytes()).decode("utf-8", errors="replace")
        notice = re.search(r"版权 ©[^\n]*\n(.*?)\n\n\d{4} 年", text, re.S)
        if notice:
            found["zh"].append(sources.join_lines(notice.group(0).split("\n")))
    reference = sources.DEBIAN_REFERENCE / "debian-reference.zh-cn.txt.gz"
    if reference.exists():  # the Reference's disclaimer (the last "1. 免责声明", not the TOC's)
        text = gzip.decompress(reference.read_bytes()).decode("utf-8", errors="replace")
        start = text.rfind("免责声明\n\n")
        end = text.find("\n2. ", start)
        if 0 <= start < end:
            blocks = re.split(r"\n\s*\n", text[start:end])
            found["zh"].append("\n".join(sources.join_lines(b.split("\n")) for b in blocks))
        summary = re.search(r"(?m)^摘要\n\n(.*?)\n\n", text, re.S)
        if summary:
            found["zh"].append(sources.join_lines(summary.group(1).split("\n")))
    return {lang: sorted(set(items)) for lang, items in found.items()}


def _zh_man_footers() -> list[str]:
    """The translation footers of the Chinese man pages (what follows ``.SH 跋``), the two
    commonest, roff escapes resolved and each line's macros dropped."""
    counts: dict[str, int] = defaultdict(int)
    for path in sorted(Path("/usr/share/man/zh_CN/man1").glob("*.gz")):
        text = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
        at = re.search(r'(?m)^\.SH "?跋"?\s*$', text)
        if at:
            lines = [ln for ln in text[at.end() :].splitlines() if ln and not ln.startswith(".")]
            footer = sources.join_lines(lines[:6])
            counts[re.sub(r"\\f[BIRP]", "", footer)] += 1
    ranked = sorted(counts, key=lambda f: (-counts[f], f))
    return [f for f in ranked[:2] if len(f) > 20]


# --- (e) tables --------------------------------------------------------------------------------

_TABLE_LINE = re.compile(r"^\s*[+|].*[+|]\s*$")


def ascii_tables(text: str) -> list[tuple[str, str]]:
    """``(caption, table)`` of every ``+----+`` table of a plain-text Debian Reference."""
    lines = text.split("\n")
    tables = []
    i = 0
    while i < len(lines):
        if re.match(r"^\s*\+-{3,}", lines[i]):
            j = i + 1
            while j < len(lines) and _TABLE_LINE.match(lines[j]):
                j += 1
            caption = next(
                (lines[k].strip() for k in range(i - 1, max(-1, i - 4), -1) if lines[k].strip()),
                "",
            )
            tables.append((caption, "\n".join(lines[i:j])))
            i = j
        else:
            i += 1
    return tables


def to_box(table: str) -> str:
    """The same table drawn with box-drawing characters (corners, tees and crosses by position)."""
    grid = [list(line) for line in table.split("\n")]

    def at(r: int, c: int) -> str:
        return grid[r][c] if 0 <= r < len(grid) and 0 <= c < len(grid[r]) else " "

    out = []
    for r, row in enumerate(grid):
        line = []
        for c, ch in enumerate(row):
            if ch == "-" and (at(r, c - 1) in "-+|" or at(r, c + 1) in "-+|"):
                line.append("─")
            elif ch == "|" and not (at(r, c - 1) == "-" or at(r, c + 1) == "-"):
                line.append("│")
            elif ch in "+|":
                up, down = at(r - 1, c) in "|+", at(r + 1, c) in "|+"
                left, right = at(r, c - 1) in "-+", at(r, c + 1) in "-+"
                line.append(_BOX.get((up, down, left, right), "┼"))
            else:
                line.append(ch)
        out.append("".join(line))
    return "\n".join(out)


_BOX = {
    (False, True, False, True): "┌",
    (False, True, True, False): "┐",
    (True, False, False, True): "└",
    (True, False, True, False): "┘",
    (True, True, False, True): "├",
    (True, True, True, False): "┤",
    (False, True, True, True): "┬",
    (True, False, True, True): "┴",
    (True, True, False, False): "│",
    (False, False, True, True): "─",
}


def table_docs() -> list[Doc]:
    """Every table of the English and Chinese Debian Reference, with its caption.

    A table's key is the section that holds it (as the base benchmark's txt/html section pairs
    are keyed), so that a table and its section are always in the same half.
    """
    docs = []
    for lang, tag in (("en", "en"), ("zh", "zh-cn")):
        path = sources.DEBIAN_REFERENCE / f"debian-reference.{tag}.txt.gz"
        text = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
        where = sources.sections(text)
        for number, (caption, table) in enumerate(ascii_tables(text)):
            body = f"{caption}\n\n{table}" if caption else table
            if lang == "zh" and sources.cjk_share(body) < 0.15:
                continue
            section = next((n for n, t in where.items() if table in t), f"table{number}")
            key = f"debian-reference:{lang}:{section}"
            docs.append(Doc(key, f"{lang}:{number}", "table", lang, body))
    return docs


# --- (f) look-alikes ---------------------------------------------------------------------------

_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_EN_NAME = re.compile(r"(?<=[a-z,;] )[A-Z][a-z]{2,}")
_ZH_SLOTS = ("n", "nr", "ns", "nt", "nz", "vn")


def _zh_words(text: str) -> list[tuple[str, str]]:
    import jieba.posseg  # the benchmark's extra; simstore's jieba presets need it anyway

    return [(pair.word, pair.flag) for pair in jieba.posseg.cut(text)]


def slot_fillers(texts: Iterable[str], lang: str) -> dict[str, list[str]]:
    """Words that fill each slot kind in the pool: names (en), nouns by jieba flag (zh)."""
    found: dict[str, set[str]] = defaultdict(set)
    for text in texts:
        if lang == "en":
            found["name"].update(_EN_NAME.findall(text))
        else:
            for word, flag in _zh_words(text):
                if flag in _ZH_SLOTS and len(word) >= 2:
                    found[flag].add(word)
    return {slot: sorted(words) for slot, words in found.items()}


def lookalike(
    rng: random.Random, text: str, lang: str, fillers: dict[str, list[str]]
) -> str | None:
    """``text`` with its numbers and at least one name or noun swapped; None under two swaps."""
    swaps = 0

    def number(match: re.Match[str]) -> str:
        nonlocal swaps
        old = match.group()
        new = old
        while new == old:
            new = str(rng.randint(1, 10 ** max(1, len(old.split(".")[0]))))
        swaps += 1
        return new

    out = _NUMBER.sub(number, text)
    if lang == "en":
        names = sorted(set(_EN_NAME.findall(out)))
        for name in rng.sample(names, min(len(names), 3)):
            pool = [w for w in fillers.get("name", []) if w != name]
            if pool:
                out = re.sub(rf"\b{re.escape(name)}\b", rng.choice(pool), out)
                swaps += 1
    else:
        words = sorted({w for w, f in _zh_words(out) if f in _ZH_SLOTS and len(w) >= 2})
        flags = dict((w, f) for w, f in _zh_words(out))
        for word in rng.sample(words, min(len(words), 3)):
            pool = [w for w in fillers.get(flags.get(word, "n"), []) if w != word]
            if pool:
                out = out.replace(word, rng.choice(pool))
                swaps += 1
    return out if swaps >= 2 and out != text else None


# --- pairs ---------------------------------------------------------------------------------------


def _pair(
    kind: str, label: int, lang: str, a: str, b: str, source: str, family: str
) -> Pair | None:
    size = size_of(a, b)
    if size is None:
        return None
    return Pair(f"{lang}-{size}", lang, size, label, kind, 0, source, family, a, b)


def nearest_negatives(
    rng: random.Random,
    docs: list[Doc],
    kind: str,
    seed: int,
    per_doc: int = 1,
    check: object = None,
) -> list[Pair]:
    """For each document, its nearest documents of the same family and half but another owner."""
    pairs = []
    by_family: dict[tuple[str, str, str], list[Doc]] = defaultdict(list)
    for doc in docs:
        by_family[(doc.family, doc.lang, half(seed, doc.key))].append(doc)
    for (_family, lang, _half), members in sorted(by_family.items()):
        if len(members) < 2:
            continue
        index = NearestIndex([d.text for d in members])
        for position, doc in enumerate(members):
            made = 0
            for other_at in index.nearest(position, 12):
                other = members[other_at]
                if made >= per_doc:
                    break
                if other.owner == doc.owner or other.text == doc.text:
                    continue
                if containment(doc.text, other.text, lang) > 0.9:
                    continue
                if callable(check) and not check(doc.text, other.text):
                    continue
                a, b = (doc.text, other.text) if rng.random() < 0.5 else (other.text, doc.text)
                pair = _pair(kind, 0, lang, a, b, f"{doc.family}", doc.key)
                if pair is not None:
                    pairs.append(pair)
                    made += 1
    return pairs


def containment(a: str, b: str, lang: str) -> float:
    """The larger share of one text's shingles (4 words / 6 characters) found in the other: 1.0
    when one text is inside the other. Shingle sets, not difflib, so long pages stay fast."""
    left, right = build_dataset.shingles(a, lang), build_dataset.shingles(b, lang)
    if not left or not right:
        return 1.0
    shared = len(left & right)
    return max(shared / len(left), shared / len(right))


def edited_duplicates(rng: random.Random, docs: list[Doc], domain: str, count: int) -> list[Pair]:
    """Edits (``edits.py``) of hard-domain documents, labelled duplicates, kind domain:edit."""
    pairs: list[Pair] = []
    for lang in ("en", "zh"):
        pool = [Text(domain, d.key, 0, d.lang, d.text) for d in docs if d.lang == lang]
        if len(pool) < 2:
            continue
        for size in ("short", "mid", "long"):
            made = build_dataset.synthetic_duplicates(rng, pool, lang, size, count)
            for pair in made:
                # the family is the document key, so the pair lands in the document's half
                pairs.append(
                    Pair(
                        pair.group,
                        pair.lang,
                        pair.size,
                        1,
                        f"{domain}:{pair.kind}",
                        pair.level,
                        domain,
                        pair.family.split(":", 1)[1].rsplit(":", 1)[0],
                        pair.a,
                        pair.b,
                    )
                )
    return pairs


def footer_pairs(
    rng: random.Random, pools: dict[tuple[str, str], list[Text]], seed: int, per_group: int = 120
) -> list[Pair]:
    """Two unrelated texts of a group wrapped in one real footer (35-70% of the shorter text)."""
    pairs = []
    wrappers = footers()
    for (lang, _size), pool in sorted(pools.items()):
        by_half: dict[str, list[Text]] = defaultdict(list)
        for item in pool:
            by_half[half(seed, build_dataset.ident(item))].append(item)
        for name, members in sorted(by_half.items()):
            usable = [w for w in wrappers[lang] if half(seed, f"footer:{w}") == name]
            if not usable or len(members) < 2:
                continue
            made = tries = 0
            while made < per_group // 2 and tries < per_group * 20:
                tries += 1
                x, y = rng.sample(members, 2)
                shorter = min(len(x.text), len(y.text))
                # one real block, or several joined (a site's header and footer), 35-70% of each
                blocks = rng.sample(usable, len(usable))
                footer = blocks.pop()
                while blocks and len(footer) / (len(footer) + shorter) < 0.35:
                    footer += "\n\n" + blocks.pop()
                share = len(footer) / (len(footer) + shorter)
                if not 0.35 <= share <= 0.7:
                    continue
                if coverage(x.text, y.text, lang) > build_dataset.NONDUP_MAX:
                    continue
                joiner = "\n\n"
                a, b = x.text + joiner + footer, y.text + joiner + footer
                pair = _pair("shared_footer", 0, lang, a, b, x.source, build_dataset.ident(x))
                if pair is not None:
                    pairs.append(replace(pair, b_from=build_dataset.ident(y)))
                    made += 1
    return pairs


def lookalike_pairs(
    rng: random.Random, pools: dict[tuple[str, str], list[Text]], per_group: int = 500
) -> list[Pair]:
    """A real short text and its look-alike (``lookalike``); the family is the real text's."""
    pairs = []
    for lang in ("en", "zh"):
        pool = pools.get((lang, "short"), [])
        chosen = build_dataset.round_robin(rng, pool, per_group * 3)
        fillers = slot_fillers([t.text for t in pool], lang)
        made = 0
        for item in chosen:
            if made >= per_group:
                break
            # a fortune's attribution is not its message: swap inside the body only
            swapped = lookalike(rng, build_dataset.body(item), lang, fillers)
            if swapped is None:
                continue
            other = swapped + item.text[len(build_dataset.body(item)) :]
            pair = _pair(
                "lookalike", 0, lang, item.text, other, item.source, build_dataset.ident(item)
            )
            if pair is not None:
                pairs.append(pair)
                made += 1
    return pairs


def table_pairs(rng: random.Random, docs: list[Doc], seed: int) -> list[Pair]:
    """Box vs ASCII of one table (duplicates) and two tables drawn alike (``table_frame``)."""
    pairs = []
    for doc in docs:
        box = to_box(doc.text)
        if box != doc.text:
            a, b = (doc.text, box) if rng.random() < 0.5 else (box, doc.text)
            pair = _pair("table_box_ascii", 1, doc.lang, a, b, "debian-reference", doc.key)
            if pair is not None:
                pairs.append(pair)
    negatives = nearest_negatives(rng, docs, "table_frame", seed)
    for pair in negatives:
        if rng.random() < 0.5:  # half of them both drawn with box characters
            pairs.append(replace(pair, a=to_box(pair.a), b=to_box(pair.b)))
        else:
            pairs.append(pair)
    return pairs


def hard_pairs(seed: int, pools: dict[tuple[str, str], list[Text]]) -> list[Pair]:
    """Every hard pair (see the module docstring), their halves already decided."""
    rng = random.Random(f"{seed}:hard")
    pairs: list[Pair] = []
    copyrights = copyright_docs()
    pairs += nearest_negatives(rng, copyrights, "copyright", seed, 1, different_holders)
    rendered, raw, reflowed = man_docs(rng)
    pairs += nearest_negatives(rng, rendered, "man_family", seed, 1)
    pairs += nearest_negatives(rng, raw[::2], "man_roff", seed, 1)
    for doc, other in reflowed:
        pair = _pair("man_reflow", 1, doc.lang, doc.text, other, doc.family, doc.key)
        if pair is not None:
            pairs.append(pair)
    packages = package_docs()
    pairs += nearest_negatives(rng, packages, "package_siblings", seed, 2)
    pairs += footer_pairs(rng, pools, seed)
    pairs += table_pairs(rng, table_docs(), seed)
    pairs += lookalike_pairs(rng, pools)
    for domain, docs in (("copyright", copyrights), ("man", rendered), ("package", packages)):
        pairs += edited_duplicates(rng, docs, domain, EDITS_PER_DOMAIN)
    return pairs


def kinds(pairs: Iterable[Pair]) -> Iterator[str]:
    for pair in pairs:
        yield pair.kind
