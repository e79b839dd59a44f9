"""Lines two texts share at their edges: a footer, a disclaimer, a signature, a greeting.

Two unrelated short messages under one footer look alike to any similarity of the whole texts:
the footer is most of what they hold. Set the lines both share at their end (and, with them, at
their start) aside, and what remains tells them apart; a copy of one message (with its footer,
or edited inside its lines) still matches, since what remains of it matches too. A block shared
only at the start is no footer: it is the message itself as often as a header (a quotation under
another attribution, a copy cut short). A text is kept as its normalised lines joined by
``LINE`` (``joined``), so that its lines survive in a store's row.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass

LINE = "\n"
"""What separates a kept text's normalised lines (a normalised text has single spaces only)."""


def flat(text: str) -> str:
    """A kept text as one line: its lines joined by spaces, as the whole text normalises."""
    return text.replace(LINE, " ") if LINE in text else text


def joined(lines: Sequence[str], normalised: str) -> str:
    """``normalised`` with its lines (each normalised on its own) kept apart by ``LINE``, when
    they make it (joined by spaces, they are ``normalised``); else ``normalised`` itself."""
    kept = [line for line in lines if line]
    if len(kept) < 2 or " ".join(kept) != normalised:
        return normalised
    return LINE.join(kept)


@dataclass(frozen=True)
class Edges:
    """How many whole lines two texts share at their start (``leading``) and at their end
    (``trailing``), and what remains of each between them."""

    leading: int
    trailing: int
    own: str
    other: str

    @property
    def shared(self) -> int:
        return self.leading + self.trailing


def shared_edges(own: str, other: str) -> Edges | None:
    """The lines two kept texts (``joined``) share at their end and, with them, at their start,
    if both texts hold more than them; None when they share no line at their end, or one text is
    only lines the other has at its edges (a copy with a header or footer added: containment's)."""
    if LINE not in own or LINE not in other:
        return None
    left, right = own.split(LINE), other.split(LINE)
    most = min(len(left), len(right))
    leading = 0
    while leading < most and left[leading] == right[leading]:
        leading += 1
    trailing = 0
    while (
        trailing < most - leading
        and left[len(left) - 1 - trailing] == right[len(right) - 1 - trailing]
    ):
        trailing += 1
    if not trailing or leading + trailing >= most:
        return None
    rest_left = " ".join(left[leading : len(left) - trailing])
    rest_right = " ".join(right[leading : len(right) - trailing])
    return Edges(leading, trailing, rest_left, rest_right)


# --- the store's memory of boilerplate -------------------------------------------------------

SEGMENT_LENGTH = 8
"""Normalised characters a line needs to count as a segment: shorter lines (``--``, ``hi``,
``thanks``) recur under every kind of text and say nothing about it."""


def segment_key(line: str) -> int:
    """A normalised line's key: 64 bits of BLAKE2b as a signed integer (a SQL BIGINT), the same
    in every process, store and Spark executor."""
    digest = hashlib.blake2b(line.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def segments(text: str | None) -> tuple[int, ...]:
    """The distinct keys (sorted) of a kept short text's lines (``joined``) of at least
    ``SEGMENT_LENGTH`` characters; none for a text of one line (or a long text, None): only a
    text of several lines has lines that can be set aside."""
    if text is None or LINE not in text:
        return ()
    return tuple(
        sorted({segment_key(line) for line in text.split(LINE) if len(line) >= SEGMENT_LENGTH})
    )


def without_lines(text: str, keys: Collection[int]) -> str:
    """A kept text (``joined``) without its lines whose ``segment_key`` is in ``keys``; the text
    itself when that leaves less than a segment (a text all boilerplate is compared whole)."""
    if not keys or LINE not in text:
        return text
    lines = text.split(LINE)
    kept = [line for line in lines if len(line) < SEGMENT_LENGTH or segment_key(line) not in keys]
    if len(kept) == len(lines) or len("".join(kept)) < SEGMENT_LENGTH:
        return text
    return LINE.join(kept)


MARK = "\x1e"
"""Before a line of a kept text that was set aside as boilerplate (a control character: no
normalised text holds one), so that the row keeps the whole text and what it was compared by."""


def marked(whole: str, keys: Collection[int]) -> str:
    """A kept text (``joined``) with its lines whose key is in ``keys`` marked (``MARK``)."""
    return LINE.join(
        MARK + line if len(line) >= SEGMENT_LENGTH and segment_key(line) in keys else line
        for line in whole.split(LINE)
    )


def unmarked(stored: str) -> tuple[str, str | None, frozenset[int]]:
    """A stored text's parts: the text it was compared by (its marked lines left out), its
    whole text (None when no line is marked) and the keys of its marked lines."""
    if MARK not in stored:
        return stored, None, frozenset()
    lines = stored.split(LINE)
    rest = LINE.join(line for line in lines if not line.startswith(MARK))
    keys = frozenset(segment_key(line[1:]) for line in lines if line.startswith(MARK))
    return rest, stored.replace(MARK, ""), keys
