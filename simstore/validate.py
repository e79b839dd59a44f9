"""Argument checks shared by every public entry point; each raises simstore's own errors."""

from __future__ import annotations

from simstore.errors import InvalidInput, InvalidType

MAX_RADIUS = 32  # the widest SimHash search radius (half the bits)
DEFAULT_MAX_DISTANCE = 3
"""The SimHash radius by default: a namespace that records none, ``SimStore``'s, a batch's and
Spark's ``max_distance``."""
MAX_KEY_LENGTH = 255
MAX_NAMESPACE_LENGTH = 255
MAX_TEXT_LENGTH = 1_000_000
"""The default longest text, in characters (about a 300-page book): a text costs about 20 bytes
of memory and 0.1 microseconds per character to plan, so 100 MB would take 2 GB and 10 s.
``SimStore(max_text_length=...)``, ``--max-text-length`` and ``SIMSTORE_MAX_TEXT_LENGTH`` change
it."""


def check_int(
    name: str,
    value: object,
    *,
    lowest: int | None = None,
    highest: int | None = None,
    optional: bool = False,
) -> int | None:
    """``value`` if it is an int (not a bool) within [lowest, highest]; None passes if optional."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidType(f"{name} must be an int, not {type(value).__name__}")
    if (lowest is not None and value < lowest) or (highest is not None and value > highest):
        if highest is not None:
            bounds = f"lie in {lowest}..{highest}"
        else:
            bounds = {0: "be a non-negative int", 1: "be a positive int"}.get(
                lowest or 0, f"be an int >= {lowest}"
            )
        raise InvalidInput(f"{name} must {bounds}, got {value}")
    return value


def check_bool(name: str, value: object) -> bool:
    """``value`` if it is True or False (not a truthy string or number); else InvalidType."""
    if not isinstance(value, bool):
        raise InvalidType(f"{name} must be True or False, not {type(value).__name__}")
    return value


def check_fraction(name: str, value: float | None) -> None:
    """A threshold in [0, 1] (None passes: "not used")."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidType(f"{name} must be a number, not {type(value).__name__}")
    if not 0.0 <= value <= 1.0:
        raise InvalidInput(f"{name} must lie in [0, 1], got {value!r}")


def check_text_value(what: str, value: str) -> None:
    """NUL and lone surrogates cannot be stored by every driver: refuse them clearly."""
    if "\x00" in value:
        raise InvalidInput(f"{what} must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} must be valid Unicode text (it has a lone surrogate)") from None


def check_name(what: str, value: object, longest: int) -> str:
    """A key or namespace: a str of 1 to ``longest`` storable characters."""
    if not isinstance(value, str):
        raise InvalidType(f"{what} must be a str, not {type(value).__name__}")
    if not value or len(value) > longest:
        raise InvalidInput(f"{what} must have 1 to {longest} characters, got {len(value)}")
    check_text_value(what, value)
    return value


def check_key(key: object) -> str:
    return check_name("key", key, MAX_KEY_LENGTH)


def check_radius(radius: object, name: str = "max_distance") -> int:
    """A SimHash search radius: an int in 0..MAX_RADIUS."""
    checked = check_int(name, radius, lowest=0, highest=MAX_RADIUS)
    assert checked is not None  # noqa: S101 - not optional
    return checked


def check_text_length(key: object, text: object, limit: int) -> None:
    """Refuse a text longer than ``limit`` characters (InvalidInput naming the knob)."""
    if isinstance(text, str) and len(text) > limit:
        raise InvalidInput(
            f"the text of key {key!r} has {len(text):,} characters, more than the limit of "
            f"{limit:,} (max_text_length; --max-text-length on the command line)"
        )
