"""Text -> 64-bit SimHash fingerprint. Pure functions: no database, no I/O.

Every preset follows the same pipeline: normalise, tokenise into features, weight them, hash each
feature to 64 bits, add +w for each 1 bit and -w for each 0 bit, and set the bits whose sum is
positive (``tokens-strhash`` sets them when the sum is >= 0, as its reference does).

Short texts collapse: with few features, distinct texts share fingerprints or land close together.
``analyze_many`` reports how many features each text produced so that callers (the store does) can
treat near-empty texts specially. What each preset returns for an empty text:

- ``simstore-v1`` (default): 0, with 0 features.
- ``pypi-simhash``, ``char4-pre``, ``char4-suf``: the MD5 of the empty string's low 64 bits
  (0x...``ecf8427e``), with 0 features, exactly as the reference package does.
- ``tokens-strhash``: all bits set (every sum is 0 and the rule is >= 0), with 0 features.
- ``jieba-tfidf``: 0, with 0 features (no keywords).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from simstore.errors import InvalidInput, InvalidType
from simstore.text._algorithms import ALGORITHMS, require_jieba, token_strhash
from simstore.text.presets import Preset, get_preset

BATCH = 1024  # texts fingerprinted per numpy batch; bounds memory for long iterables


class Analysis(NamedTuple):
    """A fingerprint together with the number of features it was built from."""

    fingerprint: int
    features: int


def _check_text(text: object, position: int | None = None) -> str:
    if isinstance(text, str):
        return text
    where = "" if position is None else f" (item {position})"
    raise InvalidType(
        f"text must be str, not {type(text).__name__}{where}; decode bytes first, e.g. "
        "data.decode('utf-8')"
    )


def _check_bits(preset: Preset, bits: object) -> int:
    if isinstance(bits, bool) or not isinstance(bits, int) or bits not in preset.bits:
        widths = " or ".join(str(width) for width in preset.bits)
        raise InvalidInput(f"preset {preset.name!r} makes {widths}-bit fingerprints, not {bits!r}")
    return bits


def _run(texts: Sequence[str], preset: Preset, bits: int) -> tuple[list[int], list[int]]:
    if bits != 64:  # only tokens-strhash defines other widths
        return token_strhash(texts, preset, bits)
    return ALGORITHMS[preset.algorithm](texts, preset)


def analyze_many(
    texts: Iterable[str], *, preset: str | Preset = "default", bits: int = 64
) -> list[Analysis]:
    """Fingerprint and feature count of each text, in input order."""
    chosen = get_preset(preset)
    width = _check_bits(chosen, bits)
    if isinstance(texts, (str, bytes)):
        raise InvalidType("texts must be an iterable of str, not a single string")
    try:
        iterator = iter(texts)
    except TypeError:
        raise InvalidType(f"texts must be an iterable of str, not {type(texts).__name__}") from None
    results: list[Analysis] = []
    batch: list[str] = []
    for position, text in enumerate(iterator):
        batch.append(_check_text(text, position))
        if len(batch) >= BATCH:
            results.extend(map(Analysis._make, zip(*_run(batch, chosen, width), strict=True)))
            batch = []
    if batch:
        results.extend(map(Analysis._make, zip(*_run(batch, chosen, width), strict=True)))
    return results


def analyze(text: str, *, preset: str | Preset = "default", bits: int = 64) -> Analysis:
    """Fingerprint and feature count of one text."""
    chosen = get_preset(preset)
    width = _check_bits(chosen, bits)
    fingerprints, features = _run([_check_text(text)], chosen, width)
    return Analysis(fingerprints[0], features[0])


def fingerprint(text: str, *, preset: str | Preset = "default", bits: int = 64) -> int:
    """The unsigned SimHash fingerprint of ``text`` under ``preset``."""
    return analyze(text, preset=preset, bits=bits).fingerprint


def fingerprint_many(
    texts: Iterable[str], *, preset: str | Preset = "default", bits: int = 64
) -> list[int]:
    """Fingerprints of many texts, in order: the same values as ``fingerprint``, much faster."""
    return [result.fingerprint for result in analyze_many(texts, preset=preset, bits=bits)]


def ensure_available(preset: str | Preset) -> None:
    """Raise ``MissingExtra`` now, before anything is opened or written, when ``preset`` needs a
    library that is not installed (``jieba-tfidf``: the zh extra)."""
    chosen = get_preset(preset)
    if chosen.algorithm == "jieba-tfidf":
        require_jieba()
