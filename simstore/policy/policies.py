"""Policies: how a text is decided. The one module that says what makes a near-duplicate.

A policy owns its rule end to end (``Policy``): what it computes for a text (``plan``: the search
radius, the comparison text it keeps, the MinHash signature and band keys), which kept rows are
its candidates (``is_candidate``: shared band keys, or the SimHash radius) and when a candidate
is a duplicate (``confirm``, with the measure and score that decided). ``SimStore``, its finder
and the DB-free ``simstore.policy.batch`` call these methods and never look at a policy's type, so
the store and a batch job cannot disagree.

- ``MinHashVerification()``, the default: MinHash-LSH band keys find candidates of every text, a
  similarity decides (see its docstring).
- ``SimHashVerification(...)``: SimHash only; short texts are searched at a wider radius and
  confirmed by an exact measure. It needs no side table.
- ``SimHashOnly(min_features=3)``: plain SimHash at the store's radius.

The base and the SimHash policies live in ``_base``, the default in ``_minhash_policy``; this
module is their public face and holds the registry (names, recipes, ``policy_from_recipe``).

An item that was not planned (added as a bare fingerprint, or with an explicit ``max_distance``)
is decided by distance alone under every policy; so is a planned item against a kept row that
lacks what the policy compares (no signature, no kept text).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from simstore.errors import InvalidInput, InvalidType, PolicyMismatch
from simstore.policy._base import (
    MEASURES,
    RECIPE_VERSION,
    REGISTERED,
    Item,
    Kept,
    Measure,
    Policy,
    SimHashOnly,
    SimHashVerification,
    Thresholds,
    class_path,
)
from simstore.policy._minhash_policy import MinHashVerification, strip_markup
from simstore.text import minhash
from simstore.validate import check_fraction

__all__ = [
    "DEFAULT_POLICY",
    "MEASURES",
    "POLICIES",
    "POLICY_NAMES",
    "READABLE_RECIPES",
    "RECIPE_VERSION",
    "Item",
    "Kept",
    "Measure",
    "MinHashVerification",
    "Policy",
    "SimHashOnly",
    "SimHashVerification",
    "Thresholds",
    "check_policy",
    "class_path",
    "policy_from",
    "policy_from_recipe",
    "policy_options",
    "policy_with",
    "recipe_summary",
    "strip_markup",
]

DEFAULT_POLICY = MinHashVerification()


POLICY_NAMES = ("minhash", "simhash-verified", "simhash")
POLICIES: dict[str, type[Policy]] = {name: REGISTERED[name] for name in POLICY_NAMES}
"""The policies by the names the CLI, Flask, Django and recorded recipes use."""

READABLE_RECIPES = (1, RECIPE_VERSION)

_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def policy_options(name: str) -> dict[str, object]:
    """The options of policy ``name`` with their defaults: its dataclass fields, the one
    declaration the CLI (``--policy-option``), Flask and Django settings all read."""
    cls = _policy_class(name)
    return {f.name: getattr(cls(), f.name) for f in dataclasses.fields(cls)}  # type: ignore[arg-type]


def _policy_class(name: str) -> type[Policy]:
    if name not in POLICIES:
        raise InvalidInput(f"policy must be one of {', '.join(POLICY_NAMES)}, not {name!r}")
    return POLICIES[name]


def _coerce(policy: str, option: str, value: object, default: object) -> object:
    """``value`` for an option whose default is ``default``; strings (from a command line or an
    environment variable) are converted to the option's type."""
    if not isinstance(value, str):
        return value
    text = value.strip().lower()
    if text in ("none", "null") and option in _OPTIONAL:
        return None
    kind = _OPTIONAL.get(option, type(default))
    try:
        if kind is bool:
            if text not in _TRUE + _FALSE:
                raise ValueError(value)
            return text in _TRUE
        if kind is int:
            return int(text)
        if kind is float:
            return float(text)
    except ValueError:
        raise InvalidInput(
            f"policy option {option} of {policy} takes {kind.__name__}, not {value!r}"
        ) from None
    return value


_OPTIONAL: dict[str, type] = {
    "cjk_long_threshold": float,
    "max_replaced": int,
    "containment": float,
    "long_containment": float,
    "long_radius": int,
    "long_threshold": float,
    "opening_length": int,
    "shared_lines_rest": float,
    "boilerplate_texts": int,
    "cjk_replaced": int,
}
"""Options that may be None, with the type of their other values."""


def policy_with(name: str, options: Mapping[str, object] | None = None) -> Policy:
    """Policy ``name`` with ``options`` (any of ``policy_options(name)``; string values are
    converted, as a command line or an environment variable gives them)."""
    cls = _policy_class(name)
    defaults = policy_options(name)
    given = dict(options or {})
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        hint = " (it decides by distance: give max_distance)" if name == "simhash" else ""
        raise InvalidInput(
            f"the {name} policy has no option {', '.join(unknown)}{hint}; its options: "
            + ", ".join(f"{option}={default}" for option, default in defaults.items())
        )
    converted = {k: _coerce(name, k, v, defaults[k]) for k, v in given.items()}
    try:
        return cls(**converted)
    except TypeError as error:
        raise InvalidInput(f"bad options for the {name} policy: {error}") from None


def policy_from(name: str, *, threshold: float | None = None) -> Policy:
    """A policy by its name (``POLICY_NAMES``), with ``threshold`` as its short texts' similarity
    threshold (``policy_with`` takes every option). ``simhash`` decides by distance alone and
    takes no threshold (its knob is ``max_distance``)."""
    check_fraction("threshold", threshold)
    return policy_with(name, {} if threshold is None else {"threshold": threshold})


def recipe_summary(recipe: str | None) -> str:
    """A recorded recipe in a few words: the policy's name and the options that differ from its
    defaults (``minhash``, ``minhash threshold=0.7 fold_traditional=true``)."""
    if recipe is None:
        return "-"
    try:
        data = json.loads(recipe)
        name, params = data["policy"], data["params"]
        defaults = policy_options(name)
    except (ValueError, KeyError, TypeError, InvalidInput):
        return recipe
    changed = [
        f"{option}={json.dumps(value)}"
        for option, value in sorted(params.items())
        if defaults.get(option, object()) != value
    ]
    return " ".join([name, *changed])


_BEFORE_OPTION: dict[str, dict[str, object]] = {
    "minhash": {
        "typos": False,
        "containment": None,
        "long_containment": None,
        "opening_length": None,
        # recipe 2: symbols kept, look-alikes by identity, traditional Chinese folded by default
        # (a version-1 recipe records fold_traditional itself)
        "keep_symbols": False,
        "identity_rule": False,
        "merge_identity_swaps": False,
        "minhash_bands": minhash.LAYOUT,  # recipe 2: 24 x 3 (minhash.LAYOUTS)
        "shared_lines_rest": None,  # lines shared at the edges set aside: after simstore 0.4.0
        "cjk_titles": False,  # a long CJK text's title words kept: after simstore 0.4.0
        "boilerplate_texts": None,  # the store's memory of boilerplate: after simstore 0.4.0
        "cjk_replaced": None,  # Chinese names told from words (jieba): after simstore 0.4.0
    },
}
"""For a recipe recorded before an option existed, the value that keeps the rule it recorded."""


def policy_from_recipe(recipe: str) -> Policy:
    """The policy a namespace recorded (``Policy.recipe``)."""
    try:
        data = json.loads(recipe)
        name, version, params = data["policy"], data["recipe"], dict(data["params"])
    except (ValueError, KeyError, TypeError):
        raise PolicyMismatch(f"unreadable policy recipe {recipe!r}") from None
    if version not in READABLE_RECIPES or name not in POLICIES:
        raise PolicyMismatch(
            f"the namespace records policy {recipe}, which this simstore cannot make: upgrade "
            "simstore, or pass the policy explicitly"
        )
    older = {k: v for k, v in _BEFORE_OPTION.get(name, {}).items() if k not in params}
    return policy_with(name, {**older, **params})


def check_policy(policy: object) -> Policy:
    """``policy`` if it is a simstore policy (or one's name, see ``policy_from``), else an error."""
    if isinstance(policy, str):
        return policy_from(policy)
    if not isinstance(policy, Policy):
        raise InvalidType(
            "policy must be a simstore.policy.policies policy (MinHashVerification, "
            f"SimHashVerification or SimHashOnly), not {type(policy).__name__}"
        )
    return policy
