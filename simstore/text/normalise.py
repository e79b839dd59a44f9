"""The comparison text: what the default policy's similarity measures and MinHash see.

``default_normalise`` (the ``simstore-v1`` fingerprint preset's, fixed by its golden values) keeps
runs of word characters only, so ``C++`` and ``C`` are one word, and so are ``C#``, ``C`` and
``c``. ``compare_normalise`` keeps the symbols that carry meaning:

- inside a word, between two letters or digits of a non-CJK script: ``objective-c``, ``asp.net``,
  ``1.2.3``, ``usr/bin``, ``a+b``, ``c#x`` (a ``_`` is a word character anyway);
- after a word: ``++`` and ``#`` (``c++``, ``c#``, ``f#``, ``g++``);
- in front of a word that starts the token (after a space, a bracket or a quote): ``-``, ``--``
  and ``.`` (``-v``, ``--verbose``, ``.net``).

Everything else is as ``default_normalise``: NFKC, casefold, tokens joined by single spaces. The
invisible Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), which Unicode counts as letters, are
white space here: a text of only those is blank (``is_blank``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from simstore.text._algorithms import nfkc, nfkc_joined

FILLERS = "\u115f\u1160\u3164\uffa0"
"""Hangul fillers: letters to Unicode (so ``\\w`` matches them), invisible on screen."""

_FILLER = re.compile(f"[{FILLERS}]")
_BLANK = re.compile(rf"[\s{FILLERS}]*")
_CJK = "\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff"
_ALNUM = rf"[^\W_{_CJK}]"  # a letter or digit of a script written with spaces
_TOKEN = re.compile(
    rf"(?:(?<![^\s(\[{{<\"'])(?:--?|\.)(?={_ALNUM}))?"  # -v, --verbose, .net
    rf"\w+(?:(?<={_ALNUM})[-./+#](?={_ALNUM})\w+)*"  # objective-c, asp.net, 1.2.3
    rf"(?:(?<={_ALNUM})(?:\+\+|#)(?![\w+#]))?"  # c++, c#
)


def is_blank(text: str) -> bool:
    """Whether ``text`` holds nothing but white space and invisible fillers."""
    return _BLANK.fullmatch(text) is not None


def compare_normalise(text: str) -> str:
    """NFKC, casefold, fillers made spaces, then the tokens (words with the symbols that carry
    meaning, see the module's docstring) joined by single spaces."""
    folded = nfkc(text).casefold()
    if not folded.isascii():
        folded = _FILLER.sub(" ", folded)
    return " ".join(_TOKEN.findall(folded))


def compare_normalise_many(texts: Sequence[str]) -> list[str]:
    """``[compare_normalise(t) for t in texts]``, folded as one batch (NFKC and casefold of the
    texts joined by NUL, ``nfkc_joined``) and then tokenised text by text: faster on a batch of
    short texts, where folding each text on its own costs more than finding its tokens."""
    joined = nfkc_joined(texts) if len(texts) > 1 else None
    if joined is None:
        return [compare_normalise(text) for text in texts]
    folded = joined.casefold()
    if not folded.isascii():
        folded = _FILLER.sub(" ", folded)
    return [" ".join(_TOKEN.findall(piece)) for piece in folded.split("\x00")]
