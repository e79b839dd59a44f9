"""The settings Flask and Django share, with the CLI's meanings: read, converted from strings (as
environment variables give them) and checked in one place, when the app starts.

``POLICY`` names the policy (``simstore.policy.policies.POLICY_NAMES``; None: the namespace's own,
the default for a new one); ``THRESHOLD`` and ``LONG_THRESHOLD`` are its short and long texts'
similarity thresholds, ``POLICY_OPTIONS`` any other option (a dict, or ``"key=value,..."``:
``simstore.policy.policies.policy_options``); ``MAX_DISTANCE`` is the SimHash radius, ``KEEP`` the
retention window, ``MAX_TEXT_LENGTH`` the longest text accepted (characters), ``NAMESPACE``,
``PRESET``, ``GROUP_COMMIT`` and ``SYNCHRONOUS_COMMIT`` as in ``SimStore`` (the last two True or
False, or a string: true/false, yes/no, on/off, 1/0). Under a policy that decides
texts by similarity (``minhash``) the radius only governs bare fingerprints, so a radius set there
is logged as a warning that names the knob that does decide, never taken silently.
"""

from __future__ import annotations

import difflib
import functools
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sqlalchemy.engine import URL, Connection, Engine

from simstore.errors import InvalidInput, MissingExtra, SimstoreError
from simstore.policy.policies import Policy, policy_with
from simstore.storage.db import create_engine_for
from simstore.storage.retention import parse_duration
from simstore.text.presets import get_preset
from simstore.validate import (
    MAX_NAMESPACE_LENGTH,
    check_fraction,
    check_int,
    check_name,
    check_radius,
)

log = logging.getLogger("simstore")

KNOBS = (
    "NAMESPACE",
    "PRESET",
    "KEEP",
    "POLICY",
    "THRESHOLD",
    "LONG_THRESHOLD",
    "POLICY_OPTIONS",
    "MAX_DISTANCE",
    "MAX_TEXT_LENGTH",
    "GROUP_COMMIT",
    "SYNCHRONOUS_COMMIT",
)
"""The settings read here, without the host's prefix."""


def _options(value: object) -> dict[str, object]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(key): option for key, option in value.items()}
    if isinstance(value, str):
        pairs = [part.partition("=") for part in value.split(",") if part.strip()]
        if any(not equals for _, equals, _ in pairs):
            raise InvalidInput(f"takes key=value pairs separated by commas, not {value!r}")
        return {key.strip(): option.strip() for key, _, option in pairs}
    raise InvalidInput(f"takes a dict or 'key=value,...', not {type(value).__name__}")


def _number(value: object, kind: Callable[[str], Any]) -> Any:
    if isinstance(value, str):
        try:
            return kind(value.strip())
        except ValueError:
            raise InvalidInput(f"takes a number, not {value!r}") from None
    return value


_FLAGS = {"true": True, "yes": True, "on": True, "1": True}
_FLAGS.update({"false": False, "no": False, "off": False, "0": False})


def _flag(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _FLAGS:
        return _FLAGS[value.strip().lower()]
    raise InvalidInput(f"takes true or false, not {value!r}")


def _fraction(knob: str, value: object) -> float:
    number: float = _number(value, float)
    check_fraction(knob.lower(), number)
    return number


def store_options(get: Callable[[str], Any], setting: str) -> dict[str, Any]:
    """``SimStore`` keyword arguments from the host's settings (``get(KNOB)``: its value or None),
    each checked; ``setting`` is how the host names one (``"SIMSTORE_{}"``,
    ``'SIMSTORE["{}"]'``), and an error names the setting (``InvalidInput``)."""

    def check(knob: str, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except InvalidInput as error:
            raise InvalidInput(f"{setting.format(knob)}: {error}") from None

    namespace = get("NAMESPACE") or "default"
    knobs: dict[str, Any] = {
        "namespace": check(
            "NAMESPACE", lambda: check_name("namespace", namespace, MAX_NAMESPACE_LENGTH)
        ),
        "preset": check("PRESET", lambda: get("PRESET") and get_preset(get("PRESET"))),
        "keep": check("KEEP", lambda: None if get("KEEP") is None else parse_duration(get("KEEP"))),
    }
    name = get("POLICY")
    options = check("POLICY_OPTIONS", lambda: _options(get("POLICY_OPTIONS")))
    if options:
        check("POLICY_OPTIONS", lambda: policy_with(str(name or "minhash"), options))
    for knob, option in (("THRESHOLD", "threshold"), ("LONG_THRESHOLD", "long_threshold")):
        value = get(knob)
        if value is not None:
            options[option] = check(knob, functools.partial(_fraction, knob, value))
    if name is not None or options:
        knobs["policy"] = check("POLICY", lambda: policy_with(str(name or "minhash"), options))
    radius = get("MAX_DISTANCE")
    if radius is not None:
        knobs["max_distance"] = check("MAX_DISTANCE", lambda: check_radius(_number(radius, int)))
    length = get("MAX_TEXT_LENGTH")
    if length is not None:
        knobs["max_text_length"] = check(
            "MAX_TEXT_LENGTH",
            lambda: check_int("max_text_length", _number(length, int), lowest=1),
        )
    for knob in ("GROUP_COMMIT", "SYNCHRONOUS_COMMIT"):
        value = get(knob)
        if value is not None:
            knobs[knob.lower()] = check(knob, functools.partial(_flag, value))
    return {name: value for name, value in knobs.items() if value is not None}


def warn_about_radius(policy: Policy, max_distance: int | None, setting: str) -> None:
    """Log that a radius set under a policy that decides texts by similarity governs only bare
    fingerprints (called with the store's policy: the namespace's own when none was set)."""
    if max_distance is not None and not policy.decides_texts_by_distance:
        log.warning(
            "%s is the SimHash radius, but the %s policy decides texts by similarity: it "
            "only applies to bare fingerprints (set %s instead, or %s = 'simhash')",
            setting.format("MAX_DISTANCE"),
            policy.name,
            setting.format("THRESHOLD"),
            setting.format("POLICY"),
        )


def check_database_url(url: object, setting: str) -> None:
    """A database URL setting, checked without connecting: it parses, its dialect is known and
    its driver installed, and the driver takes its arguments; else ``InvalidInput`` (or
    ``MissingExtra``) naming ``setting``."""
    if isinstance(url, (Engine, Connection)):
        return  # the app's own engine: it was made, so its URL parsed and its driver loaded
    if not isinstance(url, (str, URL)):
        raise InvalidInput(f"{setting}: a database URL is a string, not {type(url).__name__}")
    try:
        engine = create_engine_for(url)
    except MissingExtra as error:
        raise MissingExtra(f"{setting}: {error}") from error
    except SimstoreError as error:
        raise InvalidInput(f"{setting}: {error}") from error
    engine.dispose()


def unknown_settings(given: Iterable[str], known: Iterable[str], setting: str) -> list[str]:
    """A line for each name in ``given`` that is no setting of ``known`` (a misspelling is
    otherwise ignored in silence), with the nearest known one; ``setting`` formats a name."""
    names = sorted(set(known))
    lines = []
    for name in sorted(set(given) - set(names)):
        near = difflib.get_close_matches(name, names, n=1)
        hint = f" (did you mean {setting.format(near[0])}?)" if near else ""
        lines.append(
            f"{setting.format(name)} is not a simstore setting{hint}; the settings: "
            + ", ".join(setting.format(known_name) for known_name in names)
        )
    return lines
