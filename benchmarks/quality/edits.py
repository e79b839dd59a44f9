"""Realistic edits that turn a text into a near-duplicate of itself, at graded intensities.

Every edit takes a seeded ``random.Random``, the text, its language and an intensity 1..3, and
returns the edited text or None when it does not apply (a one-sentence text cannot be reordered).
The intensities are bounded so that the result is still, to a reader, the same text: at intensity 3
about a third of it is changed, added or removed, never more. ``donor`` is another real text of the
same pool, used where an edit adds material (a sentence added).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

# share of the text an edit may change, add or remove, by intensity
SHARE = {1: 0.12, 2: 0.22, 3: 0.33}

_SENTENCE_END = re.compile(r"(?<=[。！？!?；;…])\s*|(?<=[.!?])\s+|\n+")


def sentences(text: str) -> list[str]:
    """Sentences of ``text`` with their end punctuation; line breaks also end a sentence."""
    return [piece for piece in _SENTENCE_END.split(text) if piece and piece.strip()]


def _join(parts: list[str], lang: str) -> str:
    return ("" if lang == "zh" else " ").join(part.strip() for part in parts)


# --- typos ---------------------------------------------------------------------------------------

_ZH_CONFUSABLE = [
    "的得地",
    "在再",
    "做作",
    "已以",
    "那哪",
    "他她它",
    "像象",
    "带代",
    "是事",
    "为位",
    "进近",
    "做坐",
    "反返",
    "即既",
    "份分",
    "帐账",
    "练炼",
    "须需",
    "布部",
    "截节",
]
_ZH_SWAP = {ch: group for group in _ZH_CONFUSABLE for ch in group}
_KEYBOARD = {
    row[i]: row[max(i - 1, 0)] + row[min(i + 1, len(row) - 1)]
    for row in ("qwertyuiop", "asdfghjkl", "zxcvbnm")
    for i in range(len(row))
}


def typos(rng: random.Random, text: str, lang: str, level: int, donor: str = "") -> str | None:
    """Misspellings: 1, 3 or 6 in 100 letters (at least one); Chinese uses homophone swaps."""
    chars = list(text)
    letters = [i for i, ch in enumerate(chars) if ch.isalpha()]
    if len(letters) < 8:
        return None
    count = max(1, round(len(letters) * {1: 0.01, 2: 0.03, 3: 0.06}[level]))
    for i in sorted(rng.sample(letters, count), reverse=True):
        ch = chars[i]
        if lang == "zh" and ch in _ZH_SWAP and rng.random() < 0.7:
            chars[i] = rng.choice([c for c in _ZH_SWAP[ch] if c != ch])
            continue
        kind = rng.choice(
            ["drop", "double", "swap", "near"] if lang == "en" else ["drop", "double", "swap"]
        )
        if kind == "drop":
            del chars[i]
        elif kind == "double":
            chars.insert(i, ch)
        elif kind == "swap" and i + 1 < len(chars):
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
        elif kind == "near" and ch.lower() in _KEYBOARD:
            chars[i] = rng.choice(_KEYBOARD[ch.lower()])
    return "".join(chars)


# --- punctuation, width, case, whitespace -------------------------------------------------------

_TO_FULL = {chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)}
_ZH_TO_HALF = {
    "，": ",",
    "。": ".",
    "！": "!",
    "？": "?",
    "：": ":",
    "；": ";",
    "（": "(",
    "）": ")",
}
_ZH_TO_HALF |= {"“": '"', "”": '"', "‘": "'", "’": "'", "、": ","}


def surface(rng: random.Random, text: str, lang: str, level: int, donor: str = "") -> str | None:
    """Punctuation (level 1), plus letter width or case (2), plus whitespace and emphasis (3)."""
    out = text
    if lang == "zh":
        if any(ch in _ZH_TO_HALF for ch in out):
            out = "".join(_ZH_TO_HALF.get(ch, ch) for ch in out)  # typed on a Latin keyboard
        else:
            out = out.replace(",", "，").replace(".", "。").replace("?", "？").replace("!", "！")
        if level >= 2:  # ASCII letters and digits typed in full width
            out = "".join(
                _TO_FULL.get(ch, ch) if ch.isalnum() and ch.isascii() else ch for ch in out
            )
    else:
        out = re.sub(r"[,;:]", lambda m: rng.choice(["", m.group(), " -"]), out)
        out = re.sub(r"[.!?](?=\s|$)", lambda m: rng.choice([m.group(), "", "!", "..."]), out)
        if level >= 2:
            out = rng.choice([str.lower, str.upper, str.title])(out)
    if level >= 3:
        out = re.sub(r"\s*\n\s*", lambda m: rng.choice([" ", "\n\n", "  "]), out)
        out = out.rstrip("。.!！ ") + rng.choice(["!!!", "！！！", "～～", "...", " :)"])
    return out if out != text else None


# --- sentences added, removed, reordered -------------------------------------------------------


def add_sentence(
    rng: random.Random, text: str, lang: str, level: int, donor: str = "", share: float = 0.0
) -> str | None:
    """One or more sentences of another text inserted, adding at most SHARE[level] of the length
    (or ``share``)."""
    budget = (share or SHARE[level]) * len(text)
    pool = [s for s in sentences(donor) if 4 <= len(s.strip()) <= budget]
    if not pool:
        return None
    added: list[str] = []
    while pool and sum(map(len, added)) + len(pool[0]) <= budget and len(added) < 1 + level:
        added.append(pool.pop(rng.randrange(len(pool))))
    parts = sentences(text)
    for sentence in added:
        parts.insert(rng.randint(0, len(parts)), sentence)
    return _join(parts, lang)


def remove_sentence(
    rng: random.Random, text: str, lang: str, level: int, donor: str = "", share: float = 0.0
) -> str | None:
    """Sentences removed, at most SHARE[level] (or ``share``) of the length; at least two
    sentences stay."""
    parts = sentences(text)
    budget = (share or SHARE[level]) * len(text)
    removable = [i for i, s in enumerate(parts) if len(s) <= budget]
    if len(parts) < 3 or not removable:
        return None
    rng.shuffle(removable)
    dropped: set[int] = set()
    for i in removable:
        if (
            sum(len(parts[j]) for j in dropped) + len(parts[i]) <= budget
            and len(parts) - len(dropped) > 2
        ):
            dropped.add(i)
        if len(dropped) >= level:
            break
    return _join([s for i, s in enumerate(parts) if i not in dropped], lang) if dropped else None


def reorder(rng: random.Random, text: str, lang: str, level: int, donor: str = "") -> str | None:
    """Two adjacent sentences swapped (1), two anywhere (2), or all shuffled (3)."""
    parts = sentences(text)
    if len(parts) < 2:
        return None
    if level == 1:
        i = rng.randrange(len(parts) - 1)
        parts[i], parts[i + 1] = parts[i + 1], parts[i]
    elif level == 2:
        i, j = rng.sample(range(len(parts)), 2)
        parts[i], parts[j] = parts[j], parts[i]
    else:
        original = list(parts)
        while parts == original:
            rng.shuffle(parts)
    return _join(parts, lang)


def truncate(rng: random.Random, text: str, lang: str, level: int, donor: str = "") -> str | None:
    """The end cut off: 90%, 80% or 70% kept (at a word boundary in English), maybe an ellipsis."""
    keep = round(len(text) * {1: 0.9, 2: 0.8, 3: 0.7}[level])
    cut = text[:keep]
    if lang == "en" and " " in cut:
        cut = cut[: cut.rindex(" ")]
    tail = {
        "zh": ["", "…", "……", "...（全文）", "（未完）"],
        "en": ["", "...", "…", " [...]", "... (more)"],
    }
    return cut.rstrip() + rng.choice(tail[lang])


DEEP_SHARE = {1: 0.3, 2: 0.35, 3: 0.4}  # the heavier sentence edits of issue 36


def sentences_deep(
    rng: random.Random, text: str, lang: str, level: int, donor: str = ""
) -> str | None:
    """Sentences added or removed (one or the other, at random), up to 30%, 35% or 40% of the
    length: the medium-text edits of issue 36 that the 0.75 estimate missed."""
    edit = add_sentence if rng.random() < 0.5 else remove_sentence
    return edit(rng, text, lang, level, donor, share=DEEP_SHARE[level])


def truncate_deep(
    rng: random.Random, text: str, lang: str, level: int, donor: str = ""
) -> str | None:
    """The first 70%, 65% or 60% of the text kept (a copy cut short, issue 36)."""
    keep = round(len(text) * {1: 0.7, 2: 0.65, 3: 0.6}[level])
    cut = text[:keep]
    if lang == "en" and " " in cut:
        cut = cut[: cut.rindex(" ")]
    tail = rng.choice(["", "…", "..."])
    if len(re.findall(r"\w", cut)) < 0.5 * keep:  # cut inside a link or a run of symbols
        return None
    return cut.rstrip() + tail


_CJK = re.compile(r"[\u4e00-\u9fff]")
_CJK_NUMERALS = "〇零一二两三四五六七八九十百千万亿"


def cjk_typos(rng: random.Random, text: str, lang: str, level: int, donor: str = "") -> str | None:
    """Chinese only: 1, 2 or 3 characters (at least 1, 2, 3 in 100) each put for another, taken
    from another text (a wrong input-method pick, no homophone list), never a numeral, each
    inside an otherwise equal run."""
    if lang != "zh":
        return None
    places = [i for i, ch in enumerate(text) if _CJK.match(ch) and ch not in _CJK_NUMERALS]
    pool = [ch for ch in donor if _CJK.match(ch) and ch not in _CJK_NUMERALS]
    if len(places) < 10 or not pool:
        return None
    count = max(level, round(len(places) * level / 100))
    chars = list(text)
    chosen: list[int] = []
    for i in rng.sample(places, len(places)):
        if len(chosen) == count:
            break
        if all(abs(i - j) > 2 for j in chosen):  # each alone in an equal run
            chosen.append(i)
    for i in chosen:
        chars[i] = rng.choice([ch for ch in pool if ch != text[i]] or pool)
    edited = "".join(chars)
    return edited if edited != text else None


# --- boilerplate and reposts --------------------------------------------------------------------

HEADERS = {
    "zh": [
        "【转载】",
        "【原创】",
        "[置顶] ",
        "本文来源：网络\n",
        "来源：人民网\n",
        "编者按：",
        "【热评】",
    ],
    "en": [
        "[Reposted] ",
        "From the archive: ",
        "Originally posted on the forum:\n",
        "Update: ",
        "[FAQ] ",
    ],
}
FOOTERS = {
    "zh": [
        "——发自我的iPhone",
        "（完）",
        "（责任编辑：张华）",
        "\n转载请注明出处",
        "\n本文仅代表作者观点。",
        "\n欢迎关注我们的公众号",
        "\n免责声明：本文来自网络，如有侵权请联系删除。",
        "\n（记者 王明）",
    ],
    "en": [
        "\nSent from my iPhone",
        " (via the mailing list)",
        "\n-- \nposted with a mobile client",
        "\nAll rights reserved.",
        "\nShare this post",
        "\nThis message was forwarded automatically.",
        "\nReply to unsubscribe.",
        " #quote",
    ],
}
REPOSTS = {
    "zh": [
        "转发：",
        "转：",
        "RT @小鱼儿: ",
        "转发微博 //@李雷: ",
        "说得太对了！//@韩梅梅: ",
        "赞同 //@老张: 转 //@王五: ",
        "@所有人 看看这个：",
        "马克一下 #转发#",
    ],
    "en": [
        "RT @jdoe: ",
        "Fwd: ",
        "RT @sam_k: so true -> ",
        "This! RT @news: ",
        "+1 RT @alice: ",
        "lol @bob you need to see this: ",
        "Repost: ",
        "Worth reading. via @lwn ",
    ],
}


def _fitting(options: list[str], budget: float, rng: random.Random) -> str | None:
    fitting = [option for option in options if len(option) <= budget]
    return rng.choice(fitting) if fitting else None


def boilerplate(
    rng: random.Random, text: str, lang: str, level: int, donor: str = ""
) -> str | None:
    """A site footer (1), a header and a footer (2, 3), within SHARE[level] of the length."""
    budget = SHARE[level] * len(text)
    footer = _fitting(FOOTERS[lang], budget if level == 1 else budget / 2, rng)
    header = "" if level == 1 else _fitting(HEADERS[lang], budget / 2, rng)
    if footer is None or header is None:
        return None
    return header + text + footer


def repost(rng: random.Random, text: str, lang: str, level: int, donor: str = "") -> str | None:
    """A repost marker or a comment with @mentions in front, within SHARE[level] of the length."""
    prefix = _fitting(REPOSTS[lang][: 2 + 3 * level], SHARE[level] * len(text), rng)
    return None if prefix is None else prefix + text


EDITS: dict[str, Callable[..., str | None]] = {
    "typos": typos,
    "surface": surface,
    "add_sentence": add_sentence,
    "remove_sentence": remove_sentence,
    "reorder": reorder,
    "truncate": truncate,
    "boilerplate": boilerplate,
    "repost": repost,
    "sentences_deep": sentences_deep,
    "truncate_deep": truncate_deep,
    "cjk_typos": cjk_typos,
}
LIGHT_MIX = ("typos", "surface", "boilerplate", "repost", "truncate")


def mixed(rng: random.Random, text: str, lang: str, level: int, donor: str = "") -> str | None:
    """Two (level 1, 2) or three (level 3) light edits one after another, as a repost chain does."""
    names = rng.sample(LIGHT_MIX, 2 if level < 3 else 3)
    out: str | None = text
    for name in names:
        out = EDITS[name](rng, out, lang, 1, donor) or out
    return out if out != text else None


EDITS["mixed"] = mixed


NAMES = {
    "zh": ["李雷", "韩梅梅", "老张", "小鱼儿", "王五", "阿杰", "大熊", "北京晚报", "科技日报"],
    "en": ["jdoe", "sam_k", "alice", "bob", "news", "lwn", "maria_t", "debian", "tech_daily"],
}
COMMENTS = {
    "zh": [
        "转发微博",
        "说得好",
        "赞",
        "同意",
        "马克一下",
        "学习了",
        "顶",
        "哈哈哈",
        "太真实了",
        "收藏",
    ],
    "en": ["so true", "this", "+1", "lol", "agreed", "must read", "wow", "same here", "bookmarked"],
}


def repost_chain(rng: random.Random, lang: str, budget: float) -> str:
    """A chain of reposts with comments (``//@name:comment``), as long as fits ``budget``."""
    chain = ""
    while True:
        name, comment = rng.choice(NAMES[lang]), rng.choice(COMMENTS[lang])
        piece = f"{comment}//@{name}:" if lang == "zh" else f"{comment} RT @{name}: "
        if len(chain) + len(piece) > budget:
            return chain
        chain += piece


def wrap(rng: random.Random, text: str, lang: str, level: int, share: float) -> tuple[str, str]:
    """A repost chain and a footer that make about ``share`` of the wrapped ``text``.

    Applied to two different texts it makes the "same template, different content"
    non-duplicates. Returns (before, after).
    """
    budget = share / (1 - share) * len(text)
    before = repost_chain(rng, lang, budget * rng.uniform(0.3, 0.8))
    if not before or rng.random() < 0.3:
        before = (_fitting(HEADERS[lang], budget / 2, rng) or "") + before
    after = _fitting(FOOTERS[lang], budget - len(before), rng) or ""
    return before, after
