"""The fingerprint encodings: 16 hex digits, signed BIGINT, four 16-bit bands, Hamming distance."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import simstore
from simstore.errors import InvalidInput, SimstoreError
from simstore.text.encoding import (
    bands,
    check_fingerprint,
    from_bands,
    from_hex,
    from_signed,
    hamming,
    to_hex,
    to_signed,
)

U64 = st.integers(min_value=0, max_value=2**64 - 1)
HIGH_HALF = st.integers(min_value=2**63, max_value=2**64 - 1)  # stored as negative BIGINTs
FINGERPRINTS = st.one_of(U64, HIGH_HALF)


@given(FINGERPRINTS)
@example(0)
@example(2**63 - 1)
@example(2**63)
@example(2**64 - 1)
def test_every_encoding_round_trips_the_whole_unsigned_range(value: int) -> None:
    text = to_hex(value)
    assert len(text) == 16
    assert text == text.lower()
    assert from_hex(text) == value
    assert from_hex(text.upper()) == value
    assert from_hex("0x" + text) == value

    stored = to_signed(value)
    assert -(2**63) <= stored < 2**63
    assert (stored < 0) == (value >= 2**63)
    assert stored % 2**64 == value  # two's complement
    assert from_signed(stored) == value

    parts = bands(value)
    assert all(0 <= part < 2**16 for part in parts)
    assert parts[0] == value >> 48
    assert parts[3] == value & 0xFFFF
    assert from_bands(*parts) == value

    assert hamming(value, value) == 0
    assert hamming(value, value ^ (2**64 - 1)) == 64


@given(FINGERPRINTS, FINGERPRINTS)
def test_hamming_counts_differing_bits_and_bands_obey_the_pigeonhole_rule(a: int, b: int) -> None:
    distance = hamming(a, b)
    assert distance == hamming(b, a) == bin(a ^ b).count("1")
    if distance <= 3:  # four bands, at most three of them differ: at least one matches exactly
        assert any(x == y for x, y in zip(bands(a), bands(b), strict=True))


def test_known_values() -> None:
    assert to_hex(0) == "0000000000000000"
    assert to_hex(0xE9800998ECF8427E) == "e9800998ecf8427e"
    assert to_hex(2**64 - 1) == "ffffffffffffffff"
    assert from_hex("  FF ") == 255
    assert to_signed(2**63) == -(2**63)
    assert to_signed(2**64 - 1) == -1
    assert from_signed(-1) == 2**64 - 1
    assert bands(0x0123456789ABCDEF) == (0x0123, 0x4567, 0x89AB, 0xCDEF)
    assert simstore.to_hex is to_hex
    assert simstore.from_hex is from_hex
    assert simstore.hamming is hamming


@pytest.mark.parametrize(
    "text", ["", "0x", "xyz", "12345678901234567", "-1", "ff ff", "0xg1", "0X12"]
)
def test_from_hex_rejects_what_is_not_a_64_bit_hex_fingerprint(text: str) -> None:
    with pytest.raises(InvalidInput, match="hex"):
        from_hex(text)


@pytest.mark.parametrize("value", [b"ff", None, 255, 1.5])
def test_from_hex_rejects_non_str(value: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        from_hex(value)  # type: ignore[arg-type]
    assert isinstance(caught.value, TypeError)


@pytest.mark.parametrize("value", [-1, 2**64, 2**70])
@pytest.mark.parametrize("convert", [to_hex, to_signed, bands, check_fingerprint])
def test_out_of_range_fingerprints_raise(convert: object, value: int) -> None:
    assert callable(convert)
    with pytest.raises(InvalidInput, match="unsigned 64-bit"):
        convert(value)


@pytest.mark.parametrize("value", ["ff", None, 1.0, True, b"\x00"])
@pytest.mark.parametrize("convert", [to_hex, to_signed, bands, from_signed])
def test_non_int_fingerprints_raise_a_type_error(convert: object, value: object) -> None:
    assert callable(convert)
    with pytest.raises(InvalidInput) as caught:
        convert(value)
    assert isinstance(caught.value, TypeError)
    assert isinstance(caught.value, SimstoreError)


@pytest.mark.parametrize("stored", [2**63, -(2**63) - 1])
def test_from_signed_rejects_values_no_bigint_holds(stored: int) -> None:
    with pytest.raises(InvalidInput, match="signed 64-bit"):
        from_signed(stored)


@pytest.mark.parametrize("parts", [(2**16, 0, 0, 0), (0, 0, 0, -1), (0, 0, 1.0, 0)])
def test_from_bands_rejects_values_outside_16_bits(parts: tuple[object, ...]) -> None:
    with pytest.raises(InvalidInput):
        from_bands(*parts)  # type: ignore[arg-type]


@pytest.mark.parametrize(("a", "b"), [("1", 1), (1, None), (True, 1), (-1, 0), (0, -5)])
def test_hamming_rejects_bad_operands(a: object, b: object) -> None:
    with pytest.raises(InvalidInput):
        hamming(a, b)  # type: ignore[arg-type]
