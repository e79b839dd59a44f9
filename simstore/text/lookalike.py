"""Look-alikes: what differs between two comparison texts, and whether it is their identity.

Two texts of one template filled in twice differ by their identity: a name, product, language,
package, version, number or identifier. An edited copy differs by ordinary words replaced here
and there, typos, insertions and deletions. ``identity_swaps`` aligns the two texts' tokens (a
longest common subsequence, rapidfuzz) and judges each place where both sides hold other tokens
by what differs there:

- its size: more than ``MAX_SWAP`` tokens on a side, or one side more than twice the other's,
  is a passage rewritten or moved: an edit, unless numbers of one shape or identifiers stand for
  others there; so is a place whose tokens all occur elsewhere in the other text (moved words);
- its form: a number (digits, a CJK numeral), even one edit apart (``libfoo1``, ``libfoo2``):
  identity; the same letters with other symbols (``c`` and ``c++``, ``net`` and ``.net``):
  identity; the same letters broken at another hyphen or space: layout, an edit;
- a typo (a small edit inside a word or across the place, one CJK character for another): an edit;
- a token with a symbol in it (``aspell-da``, ``usr/bin``, ``--verbose``) replaced by another
  that is no typo of it: identity;
- a word written with capitals inside a sentence of a text mostly in lowercase, or first in an
  attribution (``-- Polish proverb``) (``Context``): a name, identity; so is a word in Latin
  letters put for another in a text mostly in Chinese or Japanese by its tokens (``mostly_cjk``:
  ``python`` for ``ruby``, a command in a manual page);
- the same words replaced by the same words at each of two or more places (none left as it was):
  a template filled in, identity;
- Chinese words (more than one character for one) replaced: with no capitals to tell a name
  from a word, jieba's part-of-speech tags tell what stands there (``noun_kind``): a noun (a
  name, a product, a place, a time) put for another is identity; other words (verbs,
  adjectives, adverbs) put for others at up to ``cjk_replaced`` places are an edit (a reworded
  copy), at more a template's slots filled in: identity; at ``SCATTERED`` places or more, none
  of them a name, the copy is reworded throughout (a template has fewer slots): an edit.
  Japanese (kana), which jieba does not read, and every such place when ``cjk_replaced`` is
  None: identity;
- two words or more for two words or more (``hiking boots``, ``robot vacuum``): a template's
  slot, identity; so is the text's first word put for another (what it is about: a package, a
  command);
- anything else (ordinary words replaced once here and there): an edit; so are words or a
  phrase put for the last words of a text (a marker of a copy cut short, a sign-off).

Numbers are judged over the whole texts as well: one text holding a number the other lacks while
the other holds a number the first lacks is a number swap wherever the two stand.

``sketch`` and ``sketch_swaps`` carry the rule to texts too long to keep whole (a signature keeps
a sketch): bottom-k samples (by hash) of the text's numbers, compared exactly over the part of the
hash range both cover; a sample of its names (one name for one name); its most frequent names
and identifiers with their counts (one put for another at every place: a command swapped through
its man page).
"""

from __future__ import annotations

import functools
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from rapidfuzz.distance import OSA, Indel

from simstore.errors import missing_extra
from simstore.text._algorithms import nfkc
from simstore.text.similarity import _is_typo

_CJK = "\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")
_CJK_NUMERALS = frozenset("〇零一二两三四五六七八九十百千万亿")
_SYMBOL = re.compile(r"[\W_]")
_DIGIT = re.compile(r"\d")
# a raw text's sentences: split after an end mark followed by a space, or at a line break
_SENTENCES = re.compile(r"(?<=[.!?:;])\s+|\n+|(?<=[。！？；])")
# a line that opens with a dash names who said or wrote the text above it (-- Chinese proverb,
# — Mark Twain): its first word is a name's, not a sentence's start
_ATTRIBUTION = re.compile(r"\s*(?:--|[—―])")
_RAW_TOKEN = re.compile(
    rf"\w+(?:[-./+#](?=[^\W_{_CJK}])\w+)*",
)
NAMES_FROM = 20000  # raw characters read for names
LOWERCASE_CONTEXT = 0.6  # a text whose tokens start with a capital more often has no names
SKETCH = 16  # numbers a long text's sketch keeps (half versions and dates, half plain numbers)
SKETCH_SPLIT = "/"  # between a sketch's parts (no number or name is "/")
NAMES = 12  # names a sketch keeps
TOPS = 4  # most frequent names and identifiers a long text's sketch keeps, with their counts
COUNT_MARK = "*"  # between such a token and its count
SKELETON = "skeleton"  # a Swap's why: two long texts of one skeleton (``skeleton_digests``)
# a long text mostly in Chinese or Japanese: the first words in Latin letters of its opening (a
# command, a product: what it is about) that its sketch keeps, and the characters they are read from
TITLES = 4
TITLES_FROM = 200
MAX_SWAP = 4  # tokens on a side of one place: more is a passage rewritten or moved
# places where Chinese or Japanese words (two characters or more, no typo) stand for others
# that say nothing of the texts' identity, whatever the words
MAX_CJK_WORDS = 0
_UNBROKEN = re.compile(r"[-./\s]")
_LEAD = re.compile(r"^\.")  # a leading - comes and goes with layout (a list, a table's rule)
_TRAIL = re.compile(r"(?:\+\+|#)$")
_NUMBER = re.compile(r"\d+(?:[.:/-]\d+)*")
_DIGITS = re.compile(r"\d+")
_SEGMENTS = re.compile(r"[\W_]+")
INNER_EDIT_LENGTH = 3  # an identifier's part of this many letters may hold a typo inside it
_CJK_CHAR = re.compile(f"[{_CJK}]")
_WORDLIKE = re.compile(r"[^\W_]")  # a letter, a digit or a CJK character


class Swap(NamedTuple):
    """One place where two texts hold other tokens, judged identity: ``why`` is ``number``,
    ``symbol``, ``name``, ``noun`` (a Chinese noun for another), ``recurring``, ``title``,
    ``words`` (Chinese words put for others at more places than an edit holds) or ``phrase``."""

    old: str
    new: str
    why: str

    def __str__(self) -> str:
        if self.why == SKELETON:
            return "nothing but names, numbers or symbols differ (skeleton)"
        return f"{self.old or '-'!r} -> {self.new or '-'!r} ({self.why})"


def tokens(text: str) -> tuple[str, ...]:
    """A comparison text's tokens: single CJK characters, other runs between spaces."""
    return tuple(_TOKEN.findall(text))


@functools.lru_cache(maxsize=1024)  # a text is held against many kept ones: read it once
def _tokens(text: str) -> tuple[tuple[str, ...], Counter[str], Counter[str]]:
    """A text's tokens, their counts and its numbers (``_numbers``); read only."""
    found = tokens(text)
    return found, Counter(found), _numbers(found)


def _is_number(token: str) -> bool:
    return _DIGIT.search(token) is not None or token in _CJK_NUMERALS


def _numbers(tokens: Sequence[str]) -> Counter[str]:
    """The numbers the tokens hold (``10`` in ``10.utime``, ``1.2.3``, CJK numerals)."""
    found: Counter[str] = Counter()
    for token in tokens:
        if token in _CJK_NUMERALS:
            found[token] += 1
        elif _DIGIT.search(token):
            found.update(_NUMBER.findall(token))
    return found


def _shape(number: str) -> str:
    """A number's shape: its digit runs made one digit (``1.10`` and ``1.9``: ``0.0``)."""
    return _DIGITS.sub("0", number)


def _number_swap(old: Counter[str], new: Counter[str]) -> Swap | None:
    """A number swap between two texts' numbers: a number only the old holds and one of the
    same shape only the new holds (a version bumped, a date or a count changed)."""
    only_old = [n for n in old if old[n] > new[n]]
    only_new = [n for n in new if new[n] > old[n]]
    shapes = {_shape(n) for n in only_old} & {_shape(n) for n in only_new}
    if not shapes:
        return None
    gone = [n for n in only_old if _shape(n) in shapes]
    came = [n for n in only_new if _shape(n) in shapes]
    return Swap(" ".join(gone[:3]), " ".join(came[:3]), "number")


def _has_symbol(token: str) -> bool:
    inner = token.strip("_")  # _italics_ in plain-text markup
    return len(inner) > 1 and _SYMBOL.search(inner) is not None


def _identifier(token: str) -> bool:
    """A package-, path-, option- or version-like token (a symbol or a digit in it)."""
    return _has_symbol(token) or _DIGIT.search(token) is not None


def _extended_path(gone: Sequence[str], came: Sequence[str]) -> bool:
    """One path made longer or shorter (``etc/ssh`` and ``etc/ssh/ssh_config``)."""
    if len(gone) != 1 or len(came) != 1:
        return False
    short, long = sorted((gone[0], came[0]), key=len)
    return long.startswith(short + "/")


def _letters(token: str) -> str:
    return _SYMBOL.sub("", token)


class Context(NamedTuple):
    """What the new text's raw form says that its comparison text cannot: its names (tokens
    written with capitals inside a sentence of a text mostly in lowercase)."""

    names: frozenset[str]


NO_CONTEXT = Context(frozenset())


def context(raw: str) -> Context:
    """The ``Context`` of a raw text (its first ``NAMES_FROM`` characters)."""
    head = nfkc(raw[:NAMES_FROM])
    starts = 0
    capitalised: set[str] = set()
    seen = 0
    for sentence in _SENTENCES.split(head):
        found = _RAW_TOKEN.findall(sentence)
        start = 1 if _ATTRIBUTION.match(sentence) else 0
        for position, token in enumerate(found, start=start):
            seen += 1
            if token[0].isupper():
                starts += 1
            mixed = any(c.isupper() for c in token[1:]) and any(c.islower() for c in token)
            if (position and token[0].isupper()) or mixed:  # Alice, iPhone, LibreOffice
                capitalised.add(token.casefold())
    lowercase = seen and starts <= LOWERCASE_CONTEXT * seen
    return Context(frozenset(capitalised) if lowercase else frozenset())


def identity_swaps(
    old: str,
    new: str,
    ctx: Context = NO_CONTEXT,
    *,
    typos: bool = True,
    numbers: bool = True,
    whole: bool = True,
    cjk_replaced: int | None = None,
    first: bool = False,
) -> list[Swap]:
    """The places where comparison text ``new`` holds other tokens than ``old`` that are its
    identity (see the module's docstring); empty when the two differ only by edits.
    ``numbers`` False: numbers are ordinary tokens; ``whole`` False: the texts are parts (two
    openings), whose numbers are judged where they align, not over the whole;
    ``cjk_replaced``: places where Chinese words other than nouns stand for others that an edit
    may hold (None: none, and no noun is told from another word); ``first``: the first swap
    found alone, for a caller that asks whether there is one (a template's texts, which differ
    by a number, are told apart without aligning them)."""
    if old == new:
        return []
    left, left_counts, left_numbers = _tokens(old)
    right, right_counts, right_numbers = _tokens(new)
    swaps: list[Swap] = []
    if numbers and whole:
        swap = _number_swap(left_numbers, right_numbers)
        if swap is not None:
            swaps.append(swap)
            if first:
                return swaps
    gaps: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    starts: list[int] = []
    end_left = end_right = 0
    for block in Indel.editops(left, right).as_matching_blocks():
        if block.a > end_left and block.b > end_right:
            gaps.append((left[end_left : block.a], right[end_right : block.b]))
            starts.append(end_right)
        end_left, end_right = block.a + block.size, block.b + block.size
    recurring = Counter(gaps)
    joined = "".join(left)
    latin_names = mostly_cjk(left)
    words: list[Swap] = []  # CJK words replaced: judged together (cjk_identity)
    last = len(gaps) - 1
    for index, ((a, b), at) in enumerate(zip(gaps, starts, strict=True)):
        why = _judge(
            a,
            b,
            ctx,
            typos,
            numbers,
            recurring,
            left_counts,
            right_counts,
            joined,
            at,
            latin_names,
            whole,
        )
        if why in ("words", "phrase") and index == last and at + len(b) == len(right):
            continue  # the end: a marker put for the text cut short (未完), a sign-off
        if why is not None:
            glue = "" if why == "words" else " "  # CJK characters are written together
            (words if why == "words" else swaps).append(Swap(glue.join(a), glue.join(b), why))
            if first and swaps:
                return swaps
    swaps.extend(cjk_identity(words, cjk_replaced))
    return list(dict.fromkeys(swaps))  # a recurring swap is named once


def cjk_identity(words: Sequence[Swap], ordinary: int | None) -> list[Swap]:
    """Of the places where CJK words stand for others (``Swap.why`` "words"), those that are
    identity: the ones where a noun stands on either side (``noun_kind``: a name, a product, a
    place, a time), or all of them when more than ``ordinary`` places hold none (or ``ordinary``
    is None: simstore 0.4's rule)."""
    if len(words) <= MAX_CJK_WORDS:
        return []
    if ordinary is None:
        return list(words)
    kinds = [_stronger(noun_kind(swap.old), noun_kind(swap.new)) for swap in words]
    if len(words) >= SCATTERED and "name" not in kinds:
        return []  # other words at many places, each once, no name: a reworded copy
    if sum(kind is None for kind in kinds) > ordinary:
        return list(words)
    return [swap._replace(why=kind) for swap, kind in zip(words, kinds, strict=True) if kind]


def _stronger(own: str | None, other: str | None) -> str | None:
    """What a place where two words stand for each other holds: a name if either is one."""
    return "name" if "name" in (own, other) else own or other


SCATTERED = 4
"""Places where Chinese words stand for others, none of them a name, each once, from which a
copy is reworded or corrupted throughout rather than a template filled in (a template's slots
are few: a product, a place, a time)."""
_NAME_TAGS = frozenset({"nr", "nrfg", "nrt", "ns", "nt", "nz", "j", "eng"})
"""jieba's tags of a word that names a thing: a person (nr, nrfg, nrt), a place (ns), an
organisation (nt), another proper noun (nz), an abbreviation (j: 英 for English, 北大), a word in
Latin letters (eng)."""
_NOUN_TAGS = frozenset({"n", "ng", "vn", "s", "t"})
"""jieba's tags of the other nouns: a thing or product (n, ng), an activity (vn: 管理, 设置), a
place word (s), a time (t): one put for another is what the text is about, not its wording."""
_KANA = re.compile("[\u3040-\u30ff]")


@functools.lru_cache(maxsize=65536)
def noun_kind(words: str) -> str | None:
    """``"name"`` when CJK characters hold a name by jieba's part-of-speech tags
    (``_NAME_TAGS``), ``"noun"`` when they hold another noun (``_NOUN_TAGS``), else None (verbs,
    adjectives, adverbs and the like: a rewording). Read without their sentence, so that both
    sides of a pair are read alike. Kana (Japanese, which jieba does not read) counts as a name:
    Japanese keeps the stricter rule."""
    if _KANA.search(words):
        return "name"
    tags = {pair.flag for pair in _tagger().lcut(words, HMM=True)}
    if tags & _NAME_TAGS:
        return "name"
    return "noun" if tags & _NOUN_TAGS else None


@functools.cache
def _tagger() -> Any:
    """jieba's part-of-speech tokenizer, its dictionary loaded once (without its log lines)."""
    try:
        import jieba
        import jieba.posseg
    except ImportError as exc:  # pragma: no cover - jieba is part of the base install
        raise missing_extra("telling Chinese names from words needs jieba", "zh") from exc
    jieba.setLogLevel(60)
    jieba.initialize()
    return jieba.posseg.dt


def _judge(
    a: tuple[str, ...],
    b: tuple[str, ...],
    ctx: Context,
    typos: bool,
    numbers: bool,
    recurring: Counter[tuple[tuple[str, ...], tuple[str, ...]]],
    left_counts: Counter[str],
    right_counts: Counter[str],
    old_text: str,
    at: int,
    latin_names: bool = False,
    whole: bool = True,
) -> str | None:
    """Why the place where ``a`` (old) stands as ``b`` (new) is identity, or None (an edit);
    ``old_text``: the old text's CJK characters run together; ``latin_names``: the old text is
    mostly CJK (``mostly_cjk``), its words in Latin letters names; ``whole``: the texts are
    whole, not openings (whose first token a reflowed header may jam with the next)."""
    cjk = all(map(_is_cjk, (*a, *b)))
    if cjk and not (numbers and _numbers(a) != _numbers(b)):
        # CJK characters are common to many words, so they are not told moved by being found
        # elsewhere; one for another is a typo, a word for a word may be a name (see above)
        # the same characters put for others at two places or more, found nowhere in the old
        # text (its characters may be: they are common to many words)
        if recurring[(a, b)] >= 2 and "".join(b) not in old_text:
            return "recurring"
        one_for_one = len(a) == len(b) == 1  # a typo
        return "words" if not one_for_one and len(a) + len(b) <= 4 * MAX_SWAP else None
    if (
        len(a) == len(b) == 1
        and _letters(a[0]) == _letters(b[0])
        and _edges(a) != _edges(b)
        and not (right_counts[a[0]] and left_counts[b[0]])
    ):
        # c put for c++ though c stands elsewhere too ("c++ and c"), c++ found nowhere else in
        # the new text; a form both texts hold elsewhere is layout (a table's + border)
        return "symbol"
    # the tokens replaced: a token found elsewhere in the other text was moved, not replaced
    gone = [t for t in a if right_counts[t] == 0]
    came = [t for t in b if left_counts[t] == 0]
    if whole and at == 0 and _first_identifier_swapped(a, b, typos):
        return "title"  # the text's first token, a package or a file: what it is about
    if not gone or not came:
        return None
    if max(len(a), len(b)) > MAX_SWAP or max(len(a), len(b)) > 2 * min(len(a), len(b)) + 1:
        # a passage rewritten or moved: an edit, unless one identifier stands for another there
        if numbers and _number_swap(_numbers(gone), _numbers(came)) is not None:
            return "number"
        return "symbol" if _identifier_swapped(gone, came, typos) else None
    if _UNBROKEN.sub("", "".join(gone)) == _UNBROKEN.sub("", "".join(came)):
        if _edges(gone) != _edges(came):
            return "symbol"  # other symbols at a word's edge: c and c++, net and .net
        return None  # a word broken or joined at a hyphen, a dot or a space: layout
    old_numbers, new_numbers = _numbers(gone), _numbers(came)
    if numbers and old_numbers and new_numbers and old_numbers != new_numbers:
        return "number"  # a number in another's place (one only added or dropped: an edit)
    if _edges(gone) != _edges(came):
        return "symbol"  # other symbols at a word's edge: -v and --verbose
    if (
        any(map(_identifier, gone))
        and any(map(_identifier, came))
        and not _extended_path(gone, came)
        and not _segment_typos(gone, came, typos)
    ):
        return "symbol"  # a package-, path- or option-like token replaced by another
    if _is_typo(a, b, typos) or _is_typo((" ".join(gone),), (" ".join(came),), typos):
        return None
    if any(t in ctx.names for t in came):
        return "name"
    if latin_names and _latin_words(gone, came):
        return "name"  # a word in Latin letters in a Chinese text: a command, a product
    if (
        recurring[(a, b)] >= 2
        and all(right_counts[t] == 0 for t in gone)
        and all(left_counts[t] == 0 for t in came)
    ):
        return "recurring"
    if min(len(gone), len(came)) >= 2:
        return "phrase"  # words in place of words (a product, a title): a template's slot
    if at == 0 and max(len(a), len(b)) <= 2:
        return "title"  # the text's first word: what it is about (a package, a command)
    return None


def _first_identifier_swapped(a: Sequence[str], b: Sequence[str], typos: bool) -> bool:
    """Whether one identifier stands for another at a text's start, no typo of it (even when
    the new one is cited elsewhere in the old text: a sibling package's description)."""
    return (
        len(a) == len(b) == 1
        and _identifier(a[0])
        and _identifier(b[0])
        and not _segment_typos(a, b, typos)
    )


def _segment_typos(gone: Sequence[str], came: Sequence[str], typos: bool) -> bool:
    """Whether two identifiers differ by typos alone, part by part (``dbus-system-bus`` and
    ``dbus-session-bus`` differ by a word, not a typo, though the whole is one edit in four)."""
    left = _SEGMENTS.split(" ".join(gone))
    right = _SEGMENTS.split(" ".join(came))
    if len(left) != len(right):
        return False
    return all(
        x == y or _is_typo((x,), (y,), typos) or (typos and _inner_edit(x, y))
        for x, y in zip(left, right, strict=True)
    )


def _inner_edit(x: str, y: str) -> bool:
    """Whether two letter-only parts of an identifier differ by one edit inside them, their
    first and last letters kept (``cmd`` and ``cd`` in ``membarrier_cmd_register``): a typo. An
    edit at a part's edge makes another name (``python3-ssl`` and ``python3-ssh``)."""
    return (
        max(len(x), len(y)) >= INNER_EDIT_LENGTH
        and x.isalpha()
        and y.isalpha()
        and x[0] == y[0]
        and x[-1] == y[-1]
        and OSA.distance(x, y, score_cutoff=1) == 1
    )


def _identifier_swapped(gone: Sequence[str], came: Sequence[str], typos: bool) -> bool:
    """Whether a token with a symbol (a package, path or option) on one side has none on the
    other that is a typo of it, and the other side has such a token too."""
    left = [t for t in gone if _has_symbol(t)]
    right = [t for t in came if _has_symbol(t)]
    return bool(left and right) and any(
        not any(_is_typo((x,), (y,), typos) for y in right) for x in left
    )


def _edges(tokens: Sequence[str]) -> Counter[str]:
    """The symbols at the tokens' edges (``++`` of ``c++``, ``.`` of ``.net``)."""
    found: Counter[str] = Counter()
    for token in tokens:
        found.update(f"<{lead}" for lead in _LEAD.findall(token))
        found.update(f"{trail}>" for trail in _TRAIL.findall(token))
    return found


def _is_cjk(token: str) -> bool:
    return len(token) == 1 and _CJK_CHAR.match(token) is not None


def _hash(token: str) -> int:
    return zlib.crc32(token.encode("utf-8", "surrogatepass"))


def sketch(
    text: str,
    names: Iterable[str] = (),
    size: int = SKETCH,
    numbers: bool = True,
    titles: bool = False,
    skeleton: bool = False,
    text_tokens: Sequence[str] | None = None,
) -> tuple[str, ...]:
    """What a signature keeps of a text for the look-alike rule: its numbers (``1.2.3``,
    ``2024``: digit runs joined by ``.-/``) as two bottom-k samples of ``size // 2`` each, in
    hash order (the versions and dates, numbers of several parts, which a template's fill
    changes; then the plain numbers), then up to ``NAMES`` of the text's names (``Context``),
    each part after ``SKETCH_SPLIT``, then its ``TOPS`` most frequent identifiers and, with
    ``titles``, its ``title_words``; with ``skeleton``, its ``skeleton_digests`` last (after an
    empty titles part without ``titles``). ``numbers`` False: the names alone (a short text,
    whose numbers are read from the text it keeps). ``text_tokens``: its ``tokens``, when the
    caller has read them already."""
    half = size // 2
    found = set(_NUMBER.findall(text)) if numbers else set()
    parts = sorted((n for n in found if not n.isdigit()), key=_order)[:half]
    plain = sorted((n for n in found if n.isdigit()), key=_order)[:half]
    kept_names = sorted(names, key=_order)[:NAMES]
    if not numbers:
        return (*parts, SKETCH_SPLIT, *plain, SKETCH_SPLIT, *kept_names)
    every = tokens(text) if text_tokens is None else text_tokens
    identifiers = _identifiers(every)
    counts = Counter(t for t in every if t in identifiers or t in names)
    tops = [
        f"{t}{COUNT_MARK}{n}"
        for t, n in counts.most_common(TOPS)
        if n >= (2 if t in identifiers else 3) and len(t) > 1
    ]
    found_tops = (*parts, SKETCH_SPLIT, *plain, SKETCH_SPLIT, *kept_names, SKETCH_SPLIT, *tops)
    titled = (*found_tops, SKETCH_SPLIT, *title_words(text)) if titles else found_tops
    if not skeleton:
        return titled
    if not titles:
        titled = (*titled, SKETCH_SPLIT)  # (no title words: the skeleton's part comes after)
    return (*titled, SKETCH_SPLIT, *_digests(every, frozenset(names)))


def skeleton_digests(text: str, names: frozenset[str]) -> tuple[str, str]:
    """Two digests of a comparison text (CRC-32, in hex): of its tokens' skeletons
    (``_skeleton``) and of its tokens, those without a letter or digit left out (white space
    between CJK characters, a table's frame: layout). Two texts of one skeleton that are not
    one text differ only by their identity: names, numbers, symbols, options (a template filled
    in twice, nothing edited)."""
    return _digests(_TOKEN.findall(text), names)


def _digests(every: Sequence[str], names: frozenset[str]) -> tuple[str, str]:
    found = [token for token in every if token.isalnum() or _WORDLIKE.search(token)]
    latin_names = mostly_cjk(found)
    masked = {token: _skeleton(token, names, latin_names) for token in set(found)}
    skeleton = " ".join([masked[token] for token in found])
    return f"{_hash(skeleton):08x}", f"{_hash(' '.join(found)):08x}"


def _skeleton(token: str, names: frozenset[str], latin_names: bool) -> str:
    """A token with its identity masked: an option (``-v``, ``--verbose``) as ``-``, a number's
    digit runs as 0 (``2.3``: ``0.0``), a name as ``N``, a word in Latin letters of a text mostly
    in Chinese or Japanese as ``L``, an identifier without its symbols (``c++``: ``c``)."""
    if len(token) == 1 and _CJK_CHAR.match(token):
        return token
    if token[0] == "-" and len(token) > 1:
        return "-"
    if _DIGIT.search(token):
        return _DIGITS.sub("0", token)
    letters = _letters(token)
    if token in names or letters in names:  # (C++ is read as the name C in a raw text)
        return "N"
    if latin_names and letters.isascii() and letters.isalpha():
        return "L"
    return letters or token


def title_words(text: str) -> tuple[str, ...]:
    """The first ``TITLES`` distinct words in Latin letters (no digit) that start within a
    comparison text's first ``TITLES_FROM`` characters, each read whole: in a text mostly in
    Chinese or Japanese, what it is about (``name mkfs ...``: a command; a product, a package),
    which an edit rarely replaces."""
    found: dict[str, None] = {}
    for match in _TOKEN.finditer(text):
        if match.start() >= TITLES_FROM:
            break
        token = match.group()
        if len(token) > 1 and not _is_cjk(token) and not _DIGIT.search(token):
            found.setdefault(token)
            if len(found) == TITLES:
                break
    return tuple(found)


def mostly_cjk(found: Sequence[str]) -> bool:
    """Whether most of a text's tokens (``tokens``) are CJK characters: a text mostly in Chinese
    or Japanese, whose words in Latin letters are names (commands, products, packages)."""
    # (a token holding a CJK character is that one character: count the characters of all)
    return 2 * len(_CJK_CHAR.findall("".join(found))) > len(found)


def _latin_words(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether both sides of a place are words in Latin letters (no CJK, no digit)."""
    return bool(a and b) and all(t.isascii() and t.isalpha() and len(t) > 1 for t in (*a, *b))


def _identifiers(found: Sequence[str]) -> set[str]:
    """A text's identifier-like tokens (``tokens``) without digits (``c++``, ``--verbose``,
    ``aspell-da``) and, in a text mostly in Chinese or Japanese, its words in Latin letters
    (commands, names)."""
    latin = mostly_cjk(found)
    return {
        t
        for t in found
        if not _DIGIT.search(t) and (_has_symbol(t) or (latin and not _is_cjk(t) and len(t) > 1))
    }


def names_of(found: Sequence[str]) -> frozenset[str]:
    """The names a ``sketch`` keeps (none in a sketch made without them)."""
    parts = _samples(found)
    return frozenset(parts[2]) if len(parts) > 2 else frozenset()


def _order(token: str) -> tuple[int, str]:
    return _hash(token), token


def sketch_swaps(
    old: Sequence[str], new: Sequence[str], size: int = SKETCH, typos: bool = True
) -> list[Swap]:
    """Identity swaps between two texts by their sketches: one of the new text's most frequent
    names or identifiers put for one of the old's at every place (``_top_swap``); in each sample
    of numbers, within the hash range both texts' samples cover, a number only the old holds and
    one of the same shape only the new holds."""
    old_parts, new_parts = _samples(old), _samples(new)
    sizes = (size // 2, size // 2)
    if len(old_parts) > 3 and len(new_parts) > 3:
        swap = _top_swap(old_parts[3], new_parts[3])
        if swap is not None:
            return [swap]
    if len(old_parts) > 4 and len(new_parts) > 4:
        swap = _title_swap(old_parts[4], new_parts[4], typos)
        if swap is not None:
            return [swap]
    for index, (old_part, new_part) in enumerate(zip(old_parts[:2], new_parts[:2], strict=False)):
        swap = _number_swap(*_sample_excess(old_part, new_part, sizes[index]))
        if swap is not None:
            return [swap]
    if len(old_parts) > 3 and len(new_parts) > 3:  # long texts: their sampled names
        gone, came = _sample_excess(old_parts[2], new_parts[2], NAMES)
        gone_names = [t for t in gone if not any(_is_typo((t,), (u,), typos) for u in came)]
        came_names = [t for t in came if not any(_is_typo((u,), (t,), typos) for u in gone)]
        if len(gone_names) == len(came_names) == 1:  # one name for one name
            return [Swap(gone_names[0], came_names[0], "name")]
    if len(old_parts) > 5 and len(new_parts) > 5:
        old_skeleton, new_skeleton = old_parts[5], new_parts[5]
        if old_skeleton[:1] == new_skeleton[:1] and old_skeleton != new_skeleton:
            return [Swap("", "", SKELETON)]
    return []


def _title_swap(old: Sequence[str], new: Sequence[str], typos: bool) -> Swap | None:
    """One of the old text's ``title_words`` put for another in its place, the words around it
    the same (a word moved, or one that came in last, as a sentence moved or cut brings, is
    none), and no typo of it."""
    if len(old) != len(new) or len(old) < 2:
        return None
    differ = [i for i, (x, y) in enumerate(zip(old, new, strict=True)) if x != y]
    if len(differ) != 1 or differ[0] == len(old) - 1:
        return None
    gone, came = old[differ[0]], new[differ[0]]
    if gone in new or came in old:
        return None
    if _is_typo((gone,), (came,), typos) or _segment_typos((gone,), (came,), typos):
        return None
    return Swap(gone, came, "title")


def _unlisted_most(counts: dict[str, int]) -> int:
    """How often a token left off a sketch's full list of ``TOPS`` may occur (as often as the
    last listed one); 1 when the list is not full (every unlisted token occurs once, or is a name
    twice)."""
    return min(counts.values()) if len(counts) >= TOPS else 1


def _top_swap(old: Sequence[str], new: Sequence[str]) -> Swap | None:
    """A frequent name or identifier of the new text put for one of the old's at every place
    (it is not among the old's most frequent, and the other lost as many occurrences: all of
    them when it is not among the new's most frequent)."""
    old_counts = {t: int(n) for t, _, n in (entry.rpartition(COUNT_MARK) for entry in old)}
    new_counts = {t: int(n) for t, _, n in (entry.rpartition(COUNT_MARK) for entry in new)}
    old_floor, new_floor = _unlisted_most(old_counts), _unlisted_most(new_counts)
    for came, count in new_counts.items():
        if came in old_counts or count <= old_floor:  # (it may be the old's, unlisted)
            continue
        for gone, was in old_counts.items():
            if gone not in new_counts and was <= new_floor:
                continue  # it may be in the new text as often, unlisted (a tie at the last place)
            # all of its places; some of them only for an identifier (lspci in lspci(8) too)
            partial = _has_symbol(came) or _has_symbol(gone)
            if new_counts.get(gone, 0) == was - count and (
                (was == count and gone not in new_counts) or (partial and gone in new_counts)
            ):
                return Swap(gone, came, "recurring")
    return None


def _samples(found: Sequence[str]) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    for token in found:
        if token == SKETCH_SPLIT:
            parts.append([])
        else:
            parts[-1].append(token)
    return parts if len(parts) >= 2 else []


def _sample_excess(
    old: Sequence[str], new: Sequence[str], size: int
) -> tuple[Counter[str], Counter[str]]:
    old_set, new_set = set(old), set(new)
    cover = min(
        _hash(old[-1]) if len(old) >= size else 1 << 32,
        _hash(new[-1]) if len(new) >= size else 1 << 32,
    )
    only_old = Counter(t for t in old if t not in new_set and _hash(t) <= cover)
    only_new = Counter(t for t in new if t not in old_set and _hash(t) <= cover)
    return only_old, only_new
