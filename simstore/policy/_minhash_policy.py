"""``MinHashVerification``, the default policy: MinHash-LSH band keys find candidates of every
text, a similarity decides, and look-alikes are told apart by what differs (see the class).
``simstore.policy.policies`` is its public face.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from simstore.errors import InvalidInput, MissingExtra, missing_extra
from simstore.policy._base import (
    OPENING_ALIGNED,
    OPENING_SHARED,
    Item,
    Kept,
    Measure,
    Policy,
    Thresholds,
    Whole,
    _by_distance,
    _check_measure,
    _judged,
    _score,
    _Scores,
    _values_for,
    registered,
)
from simstore.results import Judged, Match
from simstore.text import minhash
from simstore.text._algorithms import default_normalise, default_normalise_many
from simstore.text.edges import flat, joined, shared_edges, without_lines
from simstore.text.lookalike import (
    Context,
    Swap,
    context,
    identity_swaps,
    mostly_cjk,
    names_of,
    sketch_swaps,
    tokens,
)
from simstore.text.lookalike import sketch as number_sketch
from simstore.text.normalise import compare_normalise, compare_normalise_many
from simstore.text.similarity import (
    char_ngrams,
    containment_of_sets,
    jaccard_of_sets,
    replacements,
)
from simstore.validate import check_fraction, check_int


@registered
@dataclass(frozen=True)
class MinHashVerification(Policy):
    """The default policy: MinHash-LSH finds candidates of every text, a similarity decides.

    Every text gets a MinHash signature over its character 5-grams (``simstore.text.minhash``), kept
    in its row, and 16 band keys, kept in ``simstore_minhash``. A kept text with a signature is a
    candidate when it shares at least ``min_bands`` band keys with the new one; a row without one
    (kept from a fingerprint, or by an early release) when it lies within the store's SimHash
    radius, and then the distance decides. When both texts are shorter than ``short_length``
    normalised characters (their texts are kept), a candidate whose signature estimate reaches
    ``prefilter`` is decided by the exact ``measure`` (Jaccard over character 3-grams by default)
    >= ``threshold``; otherwise by the signature's estimate of the 5-gram Jaccard similarity >=
    ``long_threshold``. Either way two texts that differ by their identity (a number, a symbol, a
    name, a word replaced the same way throughout: ``simstore.text.lookalike``) are look-alikes,
    not duplicates, unless ``merge_identity_swaps``; ordinary words replaced here and there,
    typos, insertions and deletions are edits. Texts are compared as ``simstore.text.normalise``
    makes them (symbols that carry meaning kept), traditional Chinese folded to simplified. Defaults
    chosen for precision first on the tune half of ``benchmarks/quality`` with its hard negatives
    (``evaluate_policy.py``; the README's Detection quality section has the held-out numbers).
    """

    name: ClassVar[str] = "minhash"
    decides_texts_by_distance: ClassVar[bool] = False
    # normalised characters; shorter texts are kept (compressed) and decided by the exact measure
    # and the look-alike rule. 700: texts of 500-700 characters by the estimate alone merged
    # sibling package descriptions that differ by a word or two (tune half, en-long: P .941
    # R .928 with 500 -> P .954 R .939; 1000 gave P .963 R .941 but 794 B a kept text on the
    # window benchmark, past its 750, and twice the median query time there)
    short_length: int = 700
    measure: Measure = "jaccard"
    threshold: float = 0.55
    prefilter: float = 0.35
    # 0.70 and 0.60: with the identity rule's skeleton keeping look-alikes of long texts apart,
    # the bars came down from 0.75 and 0.65 (tune half: long texts' recall .849/.883 -> .888/.905
    # in zh/en, typos .824 -> .859, no false merge more); 0.60 is the lowest at which 24 x 3 band
    # keys make a pair at the bar a candidate with p >= .97 (two shared keys: .977)
    long_threshold: float = 0.70
    # the same for a text mostly in Chinese or Japanese (None: long_threshold): a character
    # 5-gram spans two or three words there, so an edit of the same size costs more grams
    cjk_long_threshold: float | None = 0.60
    min_bands: int = 2
    # every text's band keys: 24 bands of 3 signature values (``minhash.LAYOUTS``), so that a
    # short text at the 3-gram threshold (5-gram estimate ~.35-.45) is a candidate with p ~.97
    # (16 x 4: ~.75; tune half, ``python -m benchmarks layouts --short``); "16x4": a version-1
    # recipe's keys. One layout for every length: a short and a long text must share keys
    minhash_bands: str = "24x3"
    # a short text (decided by 3-grams, whose Jaccard runs above the 5-grams' the keys are made
    # of) needs one shared key: two would miss half of its near-duplicates at the threshold
    short_min_bands: int = 1
    # short texts: a look-alike of one template (other names, products, places swapped in) is
    # not a duplicate. More places where other words stand in for the kept text's words than
    # this (typos, insertions and deletions do not count) make a look-alike; None: no such check.
    max_replaced: int | None = 1
    numbers_matter: bool = True  # short texts: a number replaced by another makes a new message
    # a typo (a small edit inside a word, one changed CJK character) is no replaced word; False:
    # only words of four letters within one edit in four are typos (simstore 0.3's rule)
    typos: bool = True
    # short texts under ``threshold``: one (nearly) contained in the other (a header or footer
    # added, a copy cut short, sentences added) is a duplicate when the bigger holds this share of
    # the smaller's 3-grams (``containment_of_sets``) and the smaller has at least
    # ``min_contained`` as many 3-grams as the bigger (a few words found in a long text are no
    # copy of it); the look-alike rule still applies. None: Jaccard alone.
    containment: float | None = 0.8
    min_contained: float = 0.5
    # texts decided by the estimate, under their threshold: one nearly contained in the other is a
    # duplicate when the bigger holds this share of the smaller's 5-grams, from the estimate and
    # the two sizes a signature stores (``minhash.contained``; the smaller at least
    # ``min_contained`` of the bigger). High, since the estimate is noisy: sibling documents
    # that share most of their text reach 0.85-0.9, copies cut short or with a header added ~1.
    # None: the estimate alone.
    long_containment: float | None = 0.95
    # texts decided by the estimate (not mostly CJK): their signatures carry the first
    # ``opening_length`` normalised characters (a short text's own text serves), and two whose
    # openings have more than ``max_opening_replaced`` places where other words stand in are
    # one template's different documents (a licence with another package's names, one family's
    # man pages), not copies. An edit rarely replaces words in five places of the opening; two
    # such documents almost always differ there. None: no opening kept, the estimate alone.
    opening_length: int | None = 500
    max_opening_replaced: int = 4
    strip_markup: bool = True  # drop roff comments, requests and escapes, HTML tags and entities
    strip_social: bool = False  # drop URLs, @mentions and repost markers before comparing
    fold_traditional: bool = True  # compare traditional Chinese as simplified (OpenCC)
    # compare with the symbols that carry meaning (C++, C#, .NET, --verbose, 1.2.3:
    # ``simstore.text.normalise``); False: word characters only (simstore 0.4.0's comparison)
    keep_symbols: bool = True
    # look-alikes told by what differs, at every length (``simstore.text.lookalike``: numbers,
    # symbols, names, a word replaced the same way throughout, the title; a long text's opening
    # and the numbers of its whole text), so that an edited copy is a duplicate and a template
    # filled in twice is not; ``max_replaced`` and ``max_opening_replaced`` then count nothing.
    # False: by how many words differ (simstore 0.4.0's rule)
    identity_rule: bool = True
    # True: texts that differ only by their identity (two product pages of one template) are
    # duplicates too; look-alikes are not set apart
    merge_identity_swaps: bool = False
    # the identity rule in Chinese: a noun put for another (a name, a product, a place, a time,
    # by jieba's part-of-speech tags: ``lookalike.noun_kind``) makes a look-alike; other words
    # (verbs, adjectives, adverbs) put for others at up to this many places are an edit (a
    # reworded copy), at more a template filled in; words put for others at four places or
    # more, none a name, are a copy reworded throughout (``lookalike.SCATTERED``). None: any
    # Chinese word put for another makes a look-alike (simstore 0.4's rule)
    cjk_replaced: int | None = 1
    # short texts the rule would merge: the whole lines both hold at their end (a footer, a
    # disclaimer, a signature) and, with them, at their start (a greeting) are set aside, and
    # what remains of the two must reach this 3-gram Jaccard (or ``containment``, or one hold the
    # other), so that two messages under one footer are told apart; an edited copy keeps what
    # remains alike (unrelated short messages score .0-.15, a line with a few words replaced .4
    # and up). None: the whole texts decide (simstore 0.4's rule). A kept short text keeps its
    # lines (``simstore.text.edges``)
    shared_lines_rest: float | None = 0.3
    # a long text mostly in Chinese or Japanese keeps the first words in Latin letters of its
    # opening (``lookalike.title_words``: a command, a product), and one put for another there is
    # its identity (such texts keep no opening). False: simstore 0.4's rule
    cjk_titles: bool = True
    # the store's memory of boilerplate (``simstore.policy.boilerplate``): a line of a short text
    # that at least this many earlier texts carried (in the keep window; lines of 8 characters
    # or more of texts of several lines, each text counted when added, kept or not) is set aside
    # before the text is signed and compared, and each kept text loses the same lines for the
    # comparison. None: no memory (every line counts)
    boilerplate_texts: int | None = 3
    expire_by_last_seen: bool = False  # see Policy.expire_by_last_seen

    def __post_init__(self) -> None:
        _check_measure(self.measure)
        for name in (
            "threshold",
            "prefilter",
            "long_threshold",
            "cjk_long_threshold",
            "containment",
            "min_contained",
            "long_containment",
            "shared_lines_rest",
        ):
            check_fraction(name, getattr(self, name))
        check_int("short_length", self.short_length, lowest=0)
        check_int("min_bands", self.min_bands, lowest=1)
        check_int("short_min_bands", self.short_min_bands, lowest=1)
        try:
            minhash.check_layout(self.minhash_bands)
        except ValueError as error:
            raise InvalidInput(f"minhash_bands: {error}") from None
        check_int("max_replaced", self.max_replaced, lowest=0, optional=True)
        check_int("opening_length", self.opening_length, lowest=1, optional=True)
        check_int("max_opening_replaced", self.max_opening_replaced, lowest=0)
        check_int("boilerplate_texts", self.boilerplate_texts, lowest=1, optional=True)
        check_int("cjk_replaced", self.cjk_replaced, lowest=0, optional=True)
        for name in (
            "numbers_matter",
            "typos",
            "strip_markup",
            "strip_social",
            "fold_traditional",
            "keep_symbols",
            "identity_rule",
            "merge_identity_swaps",
            "cjk_titles",
            "expire_by_last_seen",
        ):
            if not isinstance(getattr(self, name), bool):
                raise InvalidInput(f"{name} must be True or False")
        if self.fold_traditional:
            _check_folder()  # fail now, not at the first add, when OpenCC is missing
        if self.cjk_replaced is not None and importlib.util.find_spec("jieba") is None:
            raise missing_extra("cjk_replaced (Chinese nouns told from words) needs jieba", "zh")

    def score(self, a: str, b: str) -> float:
        """Similarity of two normalised texts under the policy's exact measure."""
        return _score(self.measure, a, b)

    def prepare(self, text: str) -> str:
        """The text as the policy compares it (before simstore's normalisation): markup, social-
        media markers stripped and traditional characters folded, when asked. A text that would be
        left empty is kept whole, so that two bare links never look identical."""
        prepared = self._stripped(text)
        return prepared if self.normalise(prepared) else text

    def normalise(self, text: str) -> str:
        """The comparison text of a prepared text: ``compare_normalise`` (symbols kept) or,
        with ``keep_symbols`` False, ``default_normalise``."""
        return compare_normalise(text) if self.keep_symbols else default_normalise(text)

    def _sets_apart(self) -> bool:
        """Whether identity swaps are look-alikes under the identity rule."""
        return self.identity_rule and not self.merge_identity_swaps

    def _stripped(self, text: str) -> str:
        prepared = text
        if self.strip_markup and ("\\" in prepared or "<" in prepared or "&" in prepared):
            prepared = strip_markup(prepared)
        if self.strip_social:
            prepared = _SOCIAL.sub(" ", prepared)
        if self.fold_traditional:
            prepared = _traditional_folder()(prepared)
        return prepared

    def plan(self, item: Item, text: str, max_distance: int) -> None:
        self._plan_each([item], [text], max_distance)

    def plan_many(
        self, items: Sequence[Item], texts: Sequence[str], max_distance: int
    ) -> list[Item]:
        """``plan`` for a batch: the prepared texts normalised in one pass, then signed."""
        self._plan_each(items, texts, max_distance)
        for item in items:
            item.planned = True
        self.sign(items)
        return list(items)

    def _plan_each(self, items: Sequence[Item], texts: Sequence[str], max_distance: int) -> None:
        """``plan`` of each item, the prepared texts normalised in one pass."""
        stripped = [self._stripped(text) for text in texts]
        forms = self._normal_forms(stripped)
        for item, text, prepared, (own, lines) in zip(items, texts, stripped, forms, strict=True):
            if not own and prepared is not text:  # stripped to nothing: the text is kept whole
                prepared = text
                own, lines = self._normal_forms([text])[0]
            if self._sets_apart():
                item.context = context(prepared)
            self._planned(item, own, max_distance, prepared, lines)

    def _keeps_lines(self, prepared: str) -> bool:
        """Whether the text, if short, is kept as its lines (``joined``)."""
        return self.shared_lines_rest is not None and ("\n" in prepared or "\r" in prepared)

    def _normal_forms(self, prepared: Sequence[str]) -> list[tuple[str, list[str] | None]]:
        """Each prepared text's comparison text (``normalise``), all in one pass, with its lines'
        where it may be kept as its lines (else None). Such a text is normalised once, line by
        line: its lines' comparison texts joined by spaces are the whole text's, as every break
        of ``str.splitlines`` is white space that NFKC and casefold leave alone and no token
        spans (``tests/policy/test_shared_lines.py`` checks it for every character). A text
        ``_SPLIT_FROM`` times ``short_length`` long or more is normalised whole: it is long."""
        normal = compare_normalise_many if self.keep_symbols else default_normalise_many
        split = [
            text.splitlines()
            if self._keeps_lines(text) and len(text) < _SPLIT_FROM * self.short_length
            else None
            for text in prepared
        ]
        pieces: list[str] = []
        for text, lines in zip(prepared, split, strict=True):
            if lines is None:
                pieces.append(text)
            else:
                pieces.extend(lines)
        normalised = iter(normal(pieces))
        forms: list[tuple[str, list[str] | None]] = []
        for lines in split:
            if lines is None:
                forms.append((next(normalised), None))
            else:
                own = [next(normalised) for _line in lines]
                forms.append((" ".join(line for line in own if line), own))
        return forms

    def _planned(
        self,
        item: Item,
        normalised: str,
        max_distance: int,
        prepared: str,
        lines: list[str] | None = None,
    ) -> None:
        """Fill in ``item`` from its comparison text (``lines``: its lines', if normalised)."""
        item.radius = max_distance
        item.text = None
        if len(normalised) < self.short_length:
            item.text = normalised
            if self._keeps_lines(prepared):
                if lines is None:  # (a text that long is rarely short)
                    lines = [self.normalise(line) for line in prepared.splitlines()]
                item.text = joined(lines, normalised)
        item.normalised = normalised  # signed with the rest of the batch (``sign``)
        item.mostly_cjk = _mostly_cjk(normalised)

    def sign(self, items: Sequence[Item]) -> None:
        """MinHash signatures and band keys of the planned items, in one numpy pass."""
        wanted = [item for item in items if item.normalised is not None]
        if not wanted:
            return
        values, sizes = minhash.sketches([item.normalised or "" for item in wanted])
        keys = minhash.distinct_band_keys(values, self.minhash_bands)  # shared: counted once
        for item, signature, size, band_keys in zip(
            wanted, values, sizes.tolist(), keys, strict=True
        ):
            item.signature = minhash.to_bytes(
                signature, size, self._kept_opening(item), self._kept_sketch(item)
            )
            if item.whole is not None:  # (lines set aside: found by its whole text's keys too)
                band_keys = tuple(sorted({*band_keys, *item.whole.band_keys}))
            item.band_keys = band_keys

    @property
    def boilerplate_least(self) -> int | None:
        return self.boilerplate_texts

    def set_aside(self, item: Item, common: frozenset[int]) -> bool:
        """A short text of several lines without those in ``common`` (``without_lines``): what
        it is signed, compared and kept by; it is found by its whole text's band keys too."""
        whole = item.text if item.whole is None else item.whole.text
        if whole is None or not item.planned:
            return False
        rest = without_lines(whole, common)
        if rest == item.text:
            return False  # (as it was: set aside again, the same)
        if rest == whole:  # (set aside before, in a transaction tried again: made whole)
            item.whole, item.boilerplate = None, frozenset()
        else:
            item.whole = item.whole or Whole(whole, item.band_keys)
            item.boilerplate = common
        # (an item made again from its row, as Spark's stages make them, has its names back
        # from its signature: signed again, it carries them as it did)
        item.context = self._context(item)
        item.text = rest
        item.normalised = flat(rest)
        item.mostly_cjk = _mostly_cjk(item.normalised)
        return True

    def _other_text(self, item: Item, kept_text: str) -> str:
        """What a kept short text is compared with ``item`` by: without the lines that were
        boilerplate for ``item`` (a text kept before they were)."""
        return without_lines(kept_text, item.boilerplate) if item.boilerplate else kept_text

    def _kept_sketch(self, item: Item) -> tuple[str, ...] | None:
        """What its signature carries for the identity rule (``simstore.text.lookalike.sketch``):
        a long text's numbers and its names, a short text's names (its numbers are in its kept
        text), so that a kept row is judged as it was decided (``SimStore.near_misses``)."""
        if not self.identity_rule:
            return None
        names = item.context.names
        if item.text is not None:
            return number_sketch("", names, numbers=False) if names else None
        # (by tokens: a Chinese man page full of options is mostly CJK by its words, not its
        # characters)
        text = item.normalised or ""
        found = tokens(text)
        titles = self.cjk_titles and mostly_cjk(found)
        return number_sketch(text, names, titles=titles, skeleton=True, text_tokens=found)

    def _context(self, item: Item) -> Context:
        """The item's ``Context``: made when it was planned, or read from its signature (a kept
        row judged again)."""
        if item.context.names or item.signature is None:
            return item.context
        found = minhash.sketch_of(item.signature)
        return item.context if found is None else Context(names_of(found))

    def _kept_opening(self, item: Item) -> str | None:
        """The opening a planned item's signature carries: a long text's (not mostly CJK)."""
        if self.opening_length is None or item.text is not None or item.mostly_cjk:
            return None
        return (item.normalised or "")[: self.opening_length]

    def _confirm(self, item: Item, kept: Kept, distance: int, max_distance: int) -> Match | None:
        if item.signature is None or kept.signature is None:
            return _by_distance(item, kept, distance, item.radius)
        return self._decide(item, kept, distance, minhash.estimate(item.signature, kept.signature))

    def confirm_many(
        self, items: Sequence[Item], kept: Sequence[Kept], max_distance: int
    ) -> list[Match | None]:
        """``confirm`` over aligned pairs, the signature estimates computed in one numpy pass."""
        out: list[Match | None] = []
        signed: list[int] = []
        for i, (a, b) in enumerate(zip(items, kept, strict=True)):
            if a.planned and a.signature is not None and b.signature is not None:
                signed.append(i)
                out.append(None)  # decided below, with every estimate at once
            else:
                out.append(self.confirm(a, b, max_distance))
        if signed:
            scores = _Scores(self.measure)
            values = minhash.VALUES
            left = b"".join((items[i].signature or b"")[:values] for i in signed)
            right = b"".join((kept[i].signature or b"")[:values] for i in signed)
            equal = (
                (np.frombuffer(left, np.uint8) == np.frombuffer(right, np.uint8))
                .reshape(len(signed), values)
                .sum(axis=1)
            )
            least = self.least_equal_values()
            for i, count in zip(signed, equal.tolist(), strict=True):
                a, b = items[i], kept[i]
                if count < least and not a.boilerplate:
                    continue  # refused by every rule (most of a short text's candidates)
                distance = (a.fingerprint ^ b.fingerprint).bit_count()
                out[i] = self._decide(a, b, distance, minhash.jaccard(count), scores)
        return out

    def _decide(
        self,
        item: Item,
        kept: Kept,
        distance: int,
        estimate: float,
        scores: Callable[[str, str], float] | None = None,
    ) -> Match | None:
        """The rule once both sides are signed: estimate for long texts, exact for short ones
        (``scores``: the measure, if given, else ``score``)."""
        measure: str = "minhash"
        if item.text is None or kept.text is None:  # not both short: the estimate decides
            score = estimate
            if estimate < self._long_bar(item):
                contained = self._contained_long(item, kept, estimate)
                if contained is None:
                    return None
                measure, score = "containment", contained
            if self._long_lookalike(item, kept):
                return None
            return Match(
                kept.key, kept.fingerprint, distance, kept.added_at, measure, round(score, 6)
            )
        kept_text = self._other_text(item, kept.text)
        if estimate < self.prefilter and kept_text is kept.text:
            return None  # (a kept text with lines set aside: its signature holds them)
        measure = self.measure
        own, other = flat(item.text), flat(kept_text)
        score = (scores or self.score)(own, other)
        if score < self.threshold:
            contained = self._contained(own, other, scores)
            if contained is None:
                return None
            measure, score = "containment", contained
        if self._short_lookalike(item, other) or self._edges_only(item.text, kept_text):
            return None
        if self._whole_swaps(item, kept, first=True):
            return None
        return Match(kept.key, kept.fingerprint, distance, kept.added_at, measure, round(score, 6))

    def _whole_swaps(self, item: Item, kept: Kept, first: bool = False) -> list[Swap]:
        """The identity swaps between the whole texts of two short texts, one of them with lines
        set aside: a line set aside is no evidence of a duplicate, and no more than that: one
        that carries the text's identity (a version, a name) still tells the two apart."""
        if (item.whole is None and kept.whole is None) or not self._sets_apart():
            return []
        whole = item if item.whole is None else dataclasses.replace(item, text=item.whole.text)
        return self._short_swaps(whole, flat(kept.whole or kept.text or ""), first)

    def _edges_only(self, own: str, other: str) -> str | None:
        """What two short texts that the rule accepts share only at their edges (``"3 leading
        and 2 trailing line(s)"``): set aside, what remains of them is unrelated. None when they
        share no such lines, or what remains is alike too (``shared_lines_rest``)."""
        if self.shared_lines_rest is None:
            return None
        edges = shared_edges(own, other)
        if edges is None or edges.own in edges.other or edges.other in edges.own:
            return None  # (what remains of one is in the other's: a line added, a repost marker)
        left, right = char_ngrams(edges.own, 3), char_ngrams(edges.other, 3)
        if jaccard_of_sets(left, right) >= self.shared_lines_rest:
            return None
        if self.containment is not None and containment_of_sets(left, right) >= self.containment:
            return None  # what remains of one is in the other's: a copy cut short, edited
        return f"{edges.leading} leading and {edges.trailing} trailing line(s)"

    def _long_bar(self, item: Item) -> float:
        """The estimate a pair decided by its estimate must reach (``item`` is the new text)."""
        if item.mostly_cjk and self.cjk_long_threshold is not None:
            return self.cjk_long_threshold
        return self.long_threshold

    def _contained_long(self, item: Item, kept: Kept, estimate: float) -> float | None:
        """The containment of two texts decided by their estimate, from their signatures' sizes,
        if it decides them a duplicate (as ``_contained`` for short texts), else None."""
        if self.long_containment is None or item.signature is None or kept.signature is None:
            return None
        own, other = minhash.size_of(item.signature), minhash.size_of(kept.signature)
        if own is None or other is None or not self._copy_sized(own, other):
            return None  # (None: a row stored before sizes)
        contained = minhash.contained(estimate, own, other)
        return contained if contained >= self.long_containment else None

    def _opening_replaced(self, item: Item, kept: Item | Kept) -> int | None:
        """How many places of two texts' openings hold other words, if more than
        ``max_opening_replaced`` (one template's different documents), else None."""
        if self.opening_length is None or item.mostly_cjk:
            return None
        own, other = self._opening(item), self._opening(kept)
        if own is None or other is None:  # a mostly CJK text, or a row kept without an opening
            return None
        own_words, other_words = Counter(own.split()), Counter(other.split())
        fewer = min(own_words.total(), other_words.total())
        if (own_words & other_words).total() < OPENING_SHARED * fewer:
            return None  # no one template: other text in front (a long header added), or none
        # an insertion or deletion in one opening pushes the other's last words past its end,
        # which would count as a replaced place: each side's first part is aligned against the
        # whole of the other, and the fewer places count
        part = int(OPENING_ALIGNED * self.opening_length)
        places = min(
            replacements(own[:part], other, typos=self.typos)[0],
            replacements(other[:part], own, typos=self.typos)[0],
        )
        return places if places > self.max_opening_replaced else None

    def _opening(self, side: Item | Kept) -> str | None:
        if side.text is not None:
            return flat(side.text)[: self.opening_length]
        return None if side.signature is None else minhash.opening_of(side.signature)

    def _contained(
        self, a: str, b: str, scores: Callable[[str, str], float] | None = None
    ) -> float | None:
        """The containment of two short texts' 3-grams if it decides them a duplicate (it
        reaches ``containment`` and the smaller is not under ``min_contained`` of the bigger),
        else None."""
        if self.containment is None:
            return None
        left = scores.grams(a) if isinstance(scores, _Scores) else char_ngrams(a, 3)
        right = char_ngrams(b, 3)
        if not self._copy_sized(len(left), len(right)):
            return None
        contained = containment_of_sets(left, right)
        # a stricter threshold is stricter for containment too: two texts of one size that
        # differ by an edit have a containment above their Jaccard, and must not slip past it
        return contained if contained >= max(self.containment, self.threshold) else None

    def _copy_sized(self, own: int, other: int) -> bool:
        """Whether the smaller of two n-gram sets is at least ``min_contained`` of the bigger, as
        a copy of it must be (a few words found in a long text are no copy of it)."""
        return min(own, other) >= self.min_contained * max(own, other)

    def least_equal_values(self) -> int:
        """The values an estimate of the lowest of ``prefilter``, ``long_threshold``,
        ``cjk_long_threshold`` and what ``long_containment`` accepts needs: ``_decide`` refuses
        every pair below it. A subclass whose
        rule matches lower estimates must lower this too."""
        bars = [self.prefilter, self.long_threshold, self.cjk_long_threshold]
        if self.long_containment is not None:
            # the lowest estimate that can reach it: the smaller text min_contained of the bigger
            widest = 1 / self.min_contained if self.min_contained else float("inf")
            bars.append(self.long_containment / (1 + widest - self.long_containment))
        return _values_for(min(bar for bar in bars if bar is not None))

    def min_shared(self, item: Item) -> int:
        """One shared band key for a short text, ``min_bands`` for a long one (whose estimate
        must reach 0.65-0.75 anyway: a pair at 0.75 shares fewer than two of 16 x 4 keys with
        p ~ 0.02, at 0.65 ~ 0.19; of 24 x 3 keys with p ~ 0.00004 and ~ 0.005)."""
        return self.short_min_bands if item.text is not None else self.min_bands

    def _short_lookalike(self, item: Item, kept_text: str) -> bool:
        """Whether a short text and a kept one are one template filled with other content."""
        if not self.identity_rule:
            return self._lookalike(item.text or "", kept_text)
        return bool(self._short_swaps(item, kept_text, first=True))

    def _short_swaps(self, item: Item, kept_text: str, first: bool = False) -> list[Swap]:
        """The identity swaps between a short text and a kept one (none when they are merged;
        ``first``: the first one found alone)."""
        if not self._sets_apart():
            return []
        return identity_swaps(
            kept_text,
            flat(item.text or ""),
            self._context(item),
            typos=self.typos,
            numbers=self.numbers_matter,
            cjk_replaced=self.cjk_replaced,
            first=first,
        )

    def _long_lookalike(self, item: Item, kept: Item | Kept) -> bool:
        """Whether two texts decided by their estimate are one template's different documents."""
        if not self.identity_rule:
            return self._opening_replaced(item, kept) is not None
        return bool(self._long_swaps(item, kept))

    def _long_swaps(self, item: Item, kept: Item | Kept) -> list[Swap]:
        """The identity swaps of two texts decided by their estimate: in their openings (aligned
        each way with the first part of one against the whole of the other, the fewer taken, as
        an insertion pushes words past an opening's end) and among the numbers of the whole
        texts (their sketches)."""
        if not self._sets_apart():
            return []
        swaps: list[Swap] = []
        if self.numbers_matter and item.signature is not None and kept.signature is not None:
            own_sketch, other_sketch = self._sketch(item), self._sketch(kept)
            if own_sketch is not None and other_sketch is not None:
                swaps.extend(sketch_swaps(other_sketch, own_sketch))
        if self.opening_length is None or item.mostly_cjk:
            return swaps
        own, other = self._opening(item), self._opening(kept)
        if own is None or other is None:
            return swaps
        own, other = _whole_words(own), _whole_words(other)
        own_words, other_words = Counter(own.split()), Counter(other.split())
        fewer = min(own_words.total(), other_words.total())
        if (own_words & other_words).total() < OPENING_SHARED * fewer:
            return swaps  # no one template: other text in front (a long header added), or none
        part = int(OPENING_ALIGNED * self.opening_length)
        ctx = self._context(item)
        found = [
            identity_swaps(
                _whole_words(other[:part]),
                own,
                ctx,
                typos=self.typos,
                numbers=self.numbers_matter,
                whole=False,
                cjk_replaced=self.cjk_replaced,
            ),
            identity_swaps(
                other,
                _whole_words(own[:part]),
                ctx,
                typos=self.typos,
                numbers=self.numbers_matter,
                whole=False,
                cjk_replaced=self.cjk_replaced,
            ),
        ]
        named = {(swap.old, swap.new) for swap in swaps}  # (a title named by the sketch too)
        return swaps + [swap for swap in min(found, key=len) if (swap.old, swap.new) not in named]

    def _sketch(self, side: Item | Kept) -> tuple[str, ...] | None:
        if side.text is not None:
            return number_sketch(flat(side.text))
        return None if side.signature is None else minhash.sketch_of(side.signature)

    def _lookalike(self, a: str, b: str) -> bool:
        """Whether two short texts are one template filled with other content (by counting
        replaced words: the rule without ``identity_rule``)."""
        if self.max_replaced is None and not self.numbers_matter:
            return False
        places, numbers = replacements(a, b, typos=self.typos)
        if self.numbers_matter and numbers:
            return True
        return self.max_replaced is not None and places > self.max_replaced

    def judge(self, item: Item, kept: Kept, max_distance: int) -> Judged:
        judged = super().judge(item, kept, max_distance)
        if item.signature is None or kept.signature is None or not item.planned:
            return judged  # decided by distance alone
        distance, estimate = judged.distance, minhash.estimate(item.signature, kept.signature)
        if item.text is None or kept.text is None:
            least = self._long_bar(item)
            if judged.matched and judged.measure == "containment":  # confirm's own score
                bar = 1.0 if self.long_containment is None else self.long_containment
                return _judged(kept, distance, "containment", judged.score, bar, "duplicate")
            reason = "duplicate" if judged.matched else "estimate under the threshold"
            accepted = estimate >= least or self._contained_long(item, kept, estimate) is not None
            if not judged.matched and accepted and self.identity_rule:
                swaps = self._long_swaps(item, kept)
                if swaps:
                    reason = _lookalike_reason(swaps)
            places = None if judged.matched else self._opening_replaced(item, kept)
            if places is not None and accepted and not self.identity_rule:
                reason = f"look-alike: {places} replaced word(s) in the opening"
            return _judged(kept, distance, "minhash", estimate, least, reason, judged.matched)
        if judged.matched and judged.measure == "containment":  # confirm's own score
            # ``_contained``'s bar: a stricter threshold is stricter for containment too
            bar = max(self.threshold, self.containment or 0.0)
            return _judged(kept, distance, "containment", judged.score, bar, "duplicate")
        kept_text = self._other_text(item, kept.text)
        own, other = flat(item.text), flat(kept_text)
        score = self.score(own, other)
        accepted = score >= self.threshold or self._contained(own, other) is not None
        swaps = []
        if accepted and not judged.matched:
            swaps = self._short_swaps(item, other) or self._whole_swaps(item, kept)
        if judged.matched:
            reason = "duplicate"
        elif estimate < self.prefilter and kept_text is kept.text:
            reason = "estimate under the prefilter"
            return _judged(kept, distance, "minhash", estimate, self.prefilter, reason, False)
        elif not accepted:
            reason = "score under the threshold"
        elif swaps:
            reason = _lookalike_reason(swaps)
        elif not self.identity_rule and self._lookalike(own, other):
            places, numbers = replacements(own, other, typos=self.typos)
            reason = f"look-alike: {places} replaced word(s)" + (
                ", numbers differ" if numbers else ""
            )
        elif (edges := self._edges_only(item.text, kept_text)) is not None:
            reason = f"alike only in the lines both share: {edges} set aside, the rest differs"
        else:
            reason = "look-alike"
        return _judged(kept, distance, self.measure, score, self.threshold, reason, judged.matched)

    def describe(self, max_distance: int) -> str:
        cjk = "" if self.cjk_long_threshold is None else f" ({self.cjk_long_threshold} in CJK)"
        lookalike = "" if self.max_replaced is None else ", look-alikes apart"
        if self.identity_rule:
            lookalike = "" if self.merge_identity_swaps else ", identity swaps apart"
            if lookalike and self.cjk_replaced is not None:
                lookalike += (
                    f", Chinese nouns by jieba (<= {self.cjk_replaced} other word(s) an edit)"
                )
        contained = "" if self.containment is None else f" or containment >= {self.containment}"
        long_contained = (
            "" if self.long_containment is None else f" or containment >= {self.long_containment}"
        )
        opening = "" if self.opening_length is None else ", look-alike openings apart"
        if self.identity_rule:
            opening = "" if self.merge_identity_swaps else ", identity swaps apart"
        footers = (
            ""
            if self.shared_lines_rest is None
            else f", shared footers set aside (rest >= {self.shared_lines_rest})"
        )
        if self.boilerplate_texts is not None:
            footers += f", lines of >= {self.boilerplate_texts} earlier texts set aside"
        return (
            f"minhash (>= {self.min_bands} shared band keys, {self.short_min_bands} for short "
            f"texts; short texts: {self.measure} >= "
            f"{self.threshold}{contained}{lookalike}{footers}; long: estimate >= "
            f"{self.long_threshold}{cjk}{long_contained}{opening})"
        )

    def thresholds(self, max_distance: int) -> Thresholds:
        long = [("long texts", self.long_threshold)]
        if self.cjk_long_threshold is not None:
            long.append(("long, mostly CJK", self.cjk_long_threshold))
        scores = {self.measure: (("short texts", self.threshold),), "minhash": tuple(long)}
        contained = [("short texts", self.containment), ("long texts", self.long_containment)]
        if any(bar is not None for _label, bar in contained):
            scores["containment"] = tuple((name, bar) for name, bar in contained if bar is not None)
        return scores, (("unsigned rows", max_distance),)


def _lookalike_reason(swaps: Sequence[Swap]) -> str:
    """A look-alike's reason, naming what differs (its first three identity swaps)."""
    named = "; ".join(str(swap) for swap in swaps[:3])
    more = f" and {len(swaps) - 3} more" if len(swaps) > 3 else ""
    return f"look-alike: {named}{more}" if swaps else "look-alike"


def _whole_words(text: str) -> str:
    """A cut text without its last word, which the cut may have split."""
    return text.rsplit(" ", 1)[0] if " " in text else text


# a text this many times ``short_length`` characters long or more is normalised whole, as it is
# long (rarely short: its lines are then normalised too). 1.5: the least normalising time of 1,
# 1.5, 2, 3 and every length over the quality dataset's texts with line breaks
_SPLIT_FROM = 1.5

# Chinese and Japanese characters: kana, CJK unified ideographs (and Extension A), compatibility
# ideographs
_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x9FFF), (0xF900, 0xFAFF))
_CJK_CHARACTER = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in _CJK_RANGES) + "]")
_CJK_NUMPY_FROM = 200  # characters from which a numpy count beats the regex's list


@functools.lru_cache(maxsize=1)
def _cjk_table() -> npt.NDArray[np.bool_]:
    """Whether each code point up to the last range's end (and one past it) is in a range."""
    table = np.zeros(_CJK_RANGES[-1][1] + 2, dtype=bool)
    for first, last in _CJK_RANGES:
        table[first : last + 1] = True
    return table


def _mostly_cjk(normalised: str) -> bool:
    """Whether most of a normalised text's characters (its spaces left out) are Chinese or
    Japanese: its Chinese bars and rules apply to it."""
    return 2 * _cjk_characters(normalised) > len(normalised) - normalised.count(" ")


def _cjk_characters(text: str) -> int:
    """How many of the text's characters are Chinese or Japanese (``_CJK_RANGES``)."""
    if len(text) < _CJK_NUMPY_FROM:
        return len(_CJK_CHARACTER.findall(text))
    table = _cjk_table()
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    return int(np.count_nonzero(table[np.minimum(points, len(table) - 1)]))


# Social-media markers that say nothing about the content: links, repost and reply markers
# ("RT @a:", "via @a", "//@a:", "转发微博", "回复@a:") and @mentions (not an e-mail address).
_SOCIAL = re.compile(
    r"https?://\S+|www\.\S+"
    r"|(?:\bRT\b|\bvia\b|//|回复)?\s*(?<![A-Za-z0-9._%+\-])@[\w.\-]+[:：]?"
    r"|\bRT\b[:：]?|转发(?:微博)?[:：]?",
    re.IGNORECASE,
)


# Markup that says nothing about the content: roff comment lines (a man page's shared preamble)
# and the requests and font or character escapes of roff, HTML and XML tags and entities. One
# pattern per kind, each run only when its first character occurs: a single alternation of the
# four tried every branch at every position (2.7x slower on the dataset's markup texts, with the
# same normalised results on all of them; tests/test_policies.py checks the two agree).
_ROFF_LINE = re.compile(r"^[.'][ \t]*\\\".*$|^\.[A-Za-z]{1,3}\b", re.MULTILINE)
_ROFF_ESCAPE = re.compile(r"\\(?:f(?:[BIRP1-4]|\([A-Z]{2}|\[[A-Z]*\])|[(][^\s]{2}|[-&e|^~0])")
_TAG = re.compile(r"</?[A-Za-z][^<>]{0,200}>")
_ENTITY = re.compile(r"&(?:[A-Za-z]{2,8}|#\d{1,6}|#x[0-9A-Fa-f]{1,6});")


def strip_markup(text: str) -> str:
    """``text`` with roff comment lines, requests and escapes, tags and entities made spaces."""
    if "." in text or "'" in text:
        text = _ROFF_LINE.sub(" ", text)
    if "\\" in text:
        text = _ROFF_ESCAPE.sub(" ", text)
    if "<" in text:
        text = _TAG.sub(" ", text)
    if "&" in text:
        text = _ENTITY.sub(" ", text)
    return text


def _missing_opencc() -> MissingExtra:
    return MissingExtra(
        "fold_traditional needs OpenCC, part of simstore's base install: pip install opencc "
        "(or reinstall simstore)"
    )


@functools.cache
def _check_folder() -> None:
    """Raise now when OpenCC is missing (it is part of the base install)."""
    if importlib.util.find_spec("opencc") is None:
        raise _missing_opencc()


@functools.cache
def _traditional_folder() -> Callable[[str], str]:
    try:
        import opencc
    except ImportError:
        raise _missing_opencc() from None
    convert: Callable[[str], str] = opencc.OpenCC("t2s").convert
    return convert
