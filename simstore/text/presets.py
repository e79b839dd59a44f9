"""Named, versioned fingerprint presets.

A preset fixes every step from text to fingerprint. Changing any step makes a new preset version,
never a silent change, because stores remember the preset their fingerprints were made with.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from simstore.errors import InvalidInput, UnknownPreset

ParamValue = int | float | str


@dataclass(frozen=True)
class Preset:
    """A fingerprint recipe: its name, version, algorithm and parameters."""

    name: str
    version: int
    algorithm: str
    params: Mapping[str, ParamValue] = field(default_factory=dict, hash=False)
    bits: tuple[int, ...] = (64,)
    summary: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def __reduce__(self) -> tuple[Any, ...]:  # a mapping proxy does not pickle; its dict does
        fields = (self.name, self.version, self.algorithm, dict(self.params), self.bits)
        return (Preset, (*fields, self.summary))

    @property
    def label(self) -> str:
        """``name@version``, plus the parameters when they differ from the registered ones."""
        base = _REGISTRY.get(self.name)
        suffix = "" if base is not None and base.params == self.params else f" {self.params_json()}"
        return f"{self.name}@{self.version}{suffix}"

    def params_json(self) -> str:
        """The parameters as canonical JSON (sorted keys), as stored in a store's metadata."""
        return json.dumps(dict(self.params), sort_keys=True, separators=(",", ":"))

    def with_params(self, **changes: ParamValue) -> Preset:
        """A copy with some parameters changed; unknown names or wrong types raise InvalidInput."""
        merged = dict(self.params)
        for key, value in changes.items():
            if key not in merged:
                raise InvalidInput(
                    f"preset {self.name!r} has no parameter {key!r}; it has {sorted(merged)}"
                )
            expected = type(merged[key])
            if type(value) is not expected or (isinstance(value, int) and value <= 0):
                raise InvalidInput(
                    f"parameter {key!r} of preset {self.name!r} must be a positive "
                    f"{expected.__name__}, got {value!r}"
                )
            merged[key] = value
        return Preset(self.name, self.version, self.algorithm, merged, self.bits, self.summary)


DEFAULT_ALIAS = "default"

_BUILTIN = [
    Preset(
        "simstore-v1",
        1,
        "char-ngram-splitmix",
        {"ngram": 4},
        summary="simstore's default: NFKC + casefold, word runs joined by one space, "
        "character 4-grams, one vote per occurrence, splitmix64 hashing (numpy batch path)",
    ),
    Preset(
        "pypi-simhash",
        1,
        "char-window-md5",
        {"width": 4, "weighting": "count"},
        summary="bit-exact with simhash.Simhash(text).value of the PyPI simhash package 2.x",
    ),
    Preset(
        "char4-pre",
        1,
        "char-window-md5",
        {"width": 4, "weighting": "pre"},
        summary="character 4-gram windows in text order; the first n//2+1 weigh 3, the rest 1 "
        "(a reference Scala program's 'pre' weighting)",
    ),
    Preset(
        "char4-suf",
        1,
        "char-window-md5",
        {"width": 4, "weighting": "suf"},
        summary="character 4-gram windows in text order; the last n//2+1 weigh 3, the rest 1 "
        "(a reference Scala program's 'suf' weighting)",
    ),
    Preset(
        "tokens-strhash",
        1,
        "token-strhash",
        {},
        bits=(64, 128),
        summary="whitespace tokens, a Python-2-style string hash, bit set when its sum is >= 0 "
        "(a reference Python/Java SimHash program)",
    ),
    Preset(
        "jieba-tfidf",
        1,
        "jieba-tfidf",
        {"top_k": 10},
        summary="jieba TF-IDF keywords of Chinese text (float weights), a Python-2-style string "
        "hash; needs the zh extra",
    ),
]
_REGISTRY: dict[str, Preset] = {preset.name: preset for preset in _BUILTIN}


def presets() -> list[str]:
    """The names of all built-in presets (``default`` is an alias of the first)."""
    return [preset.name for preset in _BUILTIN]


def get_preset(name: str | Preset) -> Preset:
    """Look a preset up by name (``"default"`` resolves to simstore's current default)."""
    if isinstance(name, Preset):
        return name
    if not isinstance(name, str):
        raise InvalidInput(f"a preset is a name or a Preset, not {type(name).__name__}")
    resolved = _BUILTIN[0].name if name == DEFAULT_ALIAS else name
    try:
        return _REGISTRY[resolved]
    except KeyError:
        valid = ", ".join([DEFAULT_ALIAS, *presets()])
        raise UnknownPreset(f"unknown preset {name!r}; valid names: {valid}") from None
