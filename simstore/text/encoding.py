"""The one place that converts a fingerprint between its representations.

A fingerprint is an unsigned 64-bit integer. It is shown to people as 16 lowercase hex digits,
stored in SQL as a signed BIGINT (two's complement, so every dialect can hold it) and indexed as
four 16-bit bands, b0 = bits 63..48 down to b3 = bits 15..0.
"""

from __future__ import annotations

import re

from simstore.errors import InvalidInput, InvalidType

MASK64 = (1 << 64) - 1
BAND_COUNT = 4
BAND_BITS = 16
BAND_MASK = (1 << BAND_BITS) - 1
_HEX_RE = re.compile(r"(?:0x)?[0-9a-fA-F]{1,16}")


def check_fingerprint(value: object, *, bits: int = 64) -> int:
    """Return ``value`` if it is an unsigned ``bits``-bit integer, else raise InvalidInput."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidType(f"a fingerprint must be an int, not {type(value).__name__}")
    if not 0 <= value < (1 << bits):
        raise InvalidInput(f"a fingerprint must be an unsigned {bits}-bit integer, got {value}")
    return value


def to_hex(fingerprint: int) -> str:
    """Format a 64-bit fingerprint as 16 lowercase hex digits."""
    return format(check_fingerprint(fingerprint), "016x")


def from_hex(text: str) -> int:
    """Parse 1 to 16 hex digits (an optional ``0x`` prefix allowed) into an unsigned fingerprint."""
    if not isinstance(text, str):
        raise InvalidType(f"from_hex expects a str, not {type(text).__name__}")
    stripped = text.strip()
    if not _HEX_RE.fullmatch(stripped):
        raise InvalidInput(f"not a 64-bit hex fingerprint: {text!r}")
    return int(stripped.removeprefix("0x"), 16)


def to_signed(fingerprint: int) -> int:
    """Unsigned 64-bit -> signed BIGINT (two's complement) for storage."""
    check_fingerprint(fingerprint)
    return fingerprint - (1 << 64) if fingerprint >= (1 << 63) else fingerprint


def from_signed(stored: int) -> int:
    """Signed BIGINT as stored -> unsigned 64-bit fingerprint."""
    if isinstance(stored, bool) or not isinstance(stored, int):
        raise InvalidType(f"a stored fingerprint must be an int, not {type(stored).__name__}")
    if not -(1 << 63) <= stored < (1 << 63):
        raise InvalidInput(f"a stored fingerprint must be a signed 64-bit integer, got {stored}")
    return stored & MASK64


def bands(fingerprint: int) -> tuple[int, int, int, int]:
    """The four 16-bit bands, most significant first (b0 = bits 63..48)."""
    check_fingerprint(fingerprint)
    return (
        (fingerprint >> 48) & BAND_MASK,
        (fingerprint >> 32) & BAND_MASK,
        (fingerprint >> 16) & BAND_MASK,
        fingerprint & BAND_MASK,
    )


def from_bands(b0: int, b1: int, b2: int, b3: int) -> int:
    """Reassemble a fingerprint from its four bands."""
    for band in (b0, b1, b2, b3):
        check_fingerprint(band, bits=BAND_BITS)
    return (b0 << 48) | (b1 << 32) | (b2 << 16) | b3


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two fingerprints (any width)."""
    if any(isinstance(v, bool) or not isinstance(v, int) for v in (a, b)):
        raise InvalidType("hamming expects two int fingerprints")
    if a < 0 or b < 0:
        raise InvalidInput("fingerprints are unsigned; got a negative value")
    return (a ^ b).bit_count()
