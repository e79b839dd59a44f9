"""What would change under another recipe: the same texts decided twice, DB-free.

``compare`` decides the texts in input order under the namespace's policy and under a proposed
one, each by ``simstore.policy.batch.dedup`` (the store's own decision, ``decide_in_order``), and
lists what flips: a text kept under one and a duplicate under the other, either way, and a
duplicate that would match another kept text. ``proposal`` makes the proposed policy from a
change (options of the same policy, or another policy), and ``new_namespace_options`` gives the
exact ``--policy`` and ``--policy-option`` arguments that make a new namespace with it: a
namespace records its recipe and refuses another, so a change is tried here first, then used
in a new namespace.

>>> from simstore.policy import whatif
>>> from simstore.policy.policies import DEFAULT_POLICY
>>> looser = whatif.proposal(DEFAULT_POLICY, options={"threshold": 0.3})
>>> whatif.new_namespace_options(looser)
['--policy', 'minhash', '--policy-option', 'threshold=0.3']
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from simstore.errors import InvalidInput
from simstore.policy import batch
from simstore.policy.batch import Verdict
from simstore.policy.policies import POLICY_NAMES, Policy, check_policy, policy_options, policy_with
from simstore.text.presets import Preset
from simstore.validate import DEFAULT_MAX_DISTANCE

__all__ = [
    "DISTANCE",
    "Flip",
    "WhatIf",
    "compare",
    "new_namespace_options",
    "option_changes",
    "proposal",
]

DISTANCE = "distance"  # the measure named for a duplicate decided by SimHash distance alone
MERGED, SPLIT, MOVED = "merged", "split", "moved"


@dataclass(frozen=True)
class Flip:
    """One text decided otherwise under the proposal: ``before`` (the namespace's recipe) and
    ``after`` (the proposal); ``kind`` is ``merged`` (kept, then a duplicate), ``split`` (a
    duplicate, then kept) or ``moved`` (a duplicate of another kept text)."""

    kind: str
    before: Verdict
    after: Verdict

    @property
    def key(self) -> str:
        return self.before.key


@dataclass(frozen=True)
class WhatIf:
    """Both runs' decisions of the same texts, and what flipped between them.

    ``duplicates`` holds per measure (``DISTANCE`` when the distance alone decided) the
    duplicates before and after; ``changes`` each option whose value differs (name, before,
    after; ``policy`` when the policy itself changes); ``texts`` the texts by key, to show both
    sides of a flip."""

    current: str
    proposed: str
    changes: tuple[tuple[str, object, object], ...]
    new_namespace: tuple[str, ...]
    records: int
    kept: tuple[int, int]
    duplicates: Mapping[str, tuple[int, int]]
    flips: tuple[Flip, ...]
    texts: Mapping[str, str]

    def of_kind(self, kind: str) -> list[Flip]:
        """The flips of one kind (``merged``, ``split`` or ``moved``), in input order."""
        return [flip for flip in self.flips if flip.kind == kind]

    def counts(self) -> dict[str, int]:
        """Flips by kind."""
        return {kind: len(self.of_kind(kind)) for kind in (MERGED, SPLIT, MOVED)}


def _params(policy: Policy) -> dict[str, object]:
    params: dict[str, object] = json.loads(policy.recipe())["params"]
    return params


def proposal(
    current: Policy, *, policy: str | None = None, options: Mapping[str, object] | None = None
) -> Policy:
    """The policy a change makes: ``options`` over the current policy's own values when
    ``policy`` is None or its name, else policy ``policy`` with ``options`` over its defaults
    (string values converted as ``policy_with`` does). No change at all is refused."""
    given = dict(options or {})
    if policy is None and not given:
        raise InvalidInput(
            "give the change to try: --policy-option KEY=VALUE (repeatable), --threshold, "
            "--long-threshold or --policy NAME"
        )
    if policy is not None and policy not in POLICY_NAMES:
        raise InvalidInput(f"policy must be one of {', '.join(POLICY_NAMES)}, not {policy!r}")
    current = check_policy(current)
    if policy is None or policy == current.name:
        return policy_with(current.name, {**_params(current), **given})
    return policy_with(policy, given)


def option_changes(current: Policy, proposed: Policy) -> list[tuple[str, object, object]]:
    """What differs from ``current`` to ``proposed``: (option, before, after); when the policy
    changes, ``("policy", name, name)`` and the proposed policy's options that are not its
    defaults (before: the default)."""
    before, after = _params(current), _params(proposed)
    changes: list[tuple[str, object, object]] = []
    if current.name != proposed.name:
        changes.append(("policy", current.name, proposed.name))
        before = policy_options(proposed.name)
    for option in sorted(set(before) | set(after)):
        if before.get(option) != after.get(option):
            changes.append((option, before.get(option), after.get(option)))
    return changes


def _value(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def new_namespace_options(policy: Policy) -> list[str]:
    """The global options that make a new namespace record ``policy``: ``--policy NAME`` and a
    ``--policy-option KEY=VALUE`` for each option that differs from the policy's defaults."""
    defaults = policy_options(policy.name)
    arguments = ["--policy", policy.name]
    for option, value in _params(policy).items():
        if defaults.get(option, object()) != value:
            arguments += ["--policy-option", f"{option}={_value(value)}"]
    return arguments


def _measure(verdict: Verdict) -> str:
    return verdict.measure or DISTANCE


def _kind(before: Verdict, after: Verdict) -> str | None:
    if before.kept and not after.kept:
        return MERGED
    if after.kept and not before.kept:
        return SPLIT
    if not before.kept and before.duplicate_of != after.duplicate_of:
        return MOVED
    return None


def compare(
    texts: Sequence[str],
    *,
    keys: Sequence[str] | None = None,
    preset: str | Preset = "default",
    current: Policy,
    proposed: Policy,
    max_distance: int = DEFAULT_MAX_DISTANCE,
) -> WhatIf:
    """Decide ``texts`` in input order under ``current`` and under ``proposed`` (each as an
    empty namespace with that recipe would, ``batch.dedup``) and say what flips. Nothing is
    read or written but the texts.

    :param texts: the texts, in the order they would be added.
    :param keys: their unique keys (default ``"0"``, ``"1"``, ...).
    :param preset: the namespace's fingerprint preset.
    :param current: the namespace's policy.
    :param proposed: the policy to try (``proposal`` makes it from a change).
    :param max_distance: the namespace's SimHash radius.
    """
    current, proposed = check_policy(current), check_policy(proposed)
    names = [str(i) for i in range(len(texts))] if keys is None else list(keys)
    runs = [
        batch.dedup(texts, keys=names, preset=preset, policy=policy, max_distance=max_distance)
        for policy in (current, proposed)
    ]
    duplicates: dict[str, list[int]] = {}
    for side, verdicts in enumerate(runs):
        for measure, count in Counter(_measure(v) for v in verdicts if not v.kept).items():
            duplicates.setdefault(measure, [0, 0])[side] = count
    flips = []
    for before, after in zip(*runs, strict=True):
        kind = _kind(before, after)
        if kind is not None:
            flips.append(Flip(kind, before, after))
    return WhatIf(
        current=current.describe(max_distance),
        proposed=proposed.describe(max_distance),
        changes=tuple(option_changes(current, proposed)),
        new_namespace=tuple(new_namespace_options(proposed)),
        records=len(names),
        kept=(sum(v.kept for v in runs[0]), sum(v.kept for v in runs[1])),
        duplicates={m: (c[0], c[1]) for m, c in sorted(duplicates.items())},
        flips=tuple(flips),
        texts=dict(zip(names, texts, strict=True)),
    )
