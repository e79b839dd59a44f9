"""Commands that need no database: ``fingerprint``, ``presets`` and ``policies``."""

from __future__ import annotations

import click

from simstore.cli._app import Settings, main, read_argument
from simstore.cli.output import emit, table
from simstore.text.encoding import to_hex


@main.command()
@click.argument("text")
@click.pass_obj
def fingerprint(settings: Settings, text: str) -> None:
    """The fingerprint of TEXT (no database needed).

    TEXT '-' reads stdin. Prints the hex fingerprint and the number of features. Uses --preset, or
    'default' (a namespace may use another preset: see 'simstore stats').
    """
    from simstore.text.fingerprint import analyze
    from simstore.text.presets import get_preset

    preset = get_preset(settings.preset or "default")
    result = analyze(read_argument(text), preset=preset)
    hexed = to_hex(result.fingerprint)
    data = {"fingerprint": hexed, "value": result.fingerprint, "features": result.features}
    data["preset"] = preset.label
    emit(settings, data, f"{hexed}  {result.features} features  ({preset.label})")


@main.command()
@click.pass_obj
def presets(settings: Settings) -> None:
    """The fingerprint presets.

    Name, version and what each one does; the default is marked.
    """
    from simstore.text.presets import get_preset
    from simstore.text.presets import presets as preset_names

    default = get_preset("default").name
    listed = [get_preset(name) for name in preset_names()]
    data = [
        {"name": p.name, "version": p.version, "default": p.name == default,
         "params": dict(p.params), "summary": p.summary}
        for p in listed
    ]  # fmt: skip
    rows = [
        (p.name + " (default)" * (p.name == default), str(p.version), p.summary) for p in listed
    ]
    emit(settings, data, table(("name", "version", "summary"), rows))


@main.command()
@click.argument("name", required=False)
@click.pass_obj
def policies(settings: Settings, name: str | None) -> None:
    """The policies, their options with defaults and meanings.

    NAME shows one policy. Choose a policy with --policy NAME and set any of its options with
    --policy-option KEY=VALUE (threshold and long_threshold also with --threshold and
    --long-threshold); Flask and Django take the same names in SIMSTORE_POLICY and
    SIMSTORE_POLICY_OPTIONS. A namespace records its policy with every option.
    """
    from simstore.policy.options import (
        POLICY_NAMES,
        RADIUS_MEANING,
        default_name,
        option_rows,
        summary,
    )
    from simstore.policy.policies import POLICIES

    if name is not None and name not in POLICY_NAMES:
        raise click.BadParameter(
            f"{name!r} is not a policy; the policies: {', '.join(POLICY_NAMES)}",
            param_hint="NAME",
        )
    default = default_name()
    data = []
    blocks = []
    for policy in [name] if name else POLICY_NAMES:
        rows = option_rows(policy)
        by_radius = bool(getattr(POLICIES[policy], "decides_texts_by_distance", True))
        data.append(
            {
                "name": policy,
                "default": policy == default,
                "summary": summary(policy),
                "options": [row._asdict() for row in rows],
                "max_distance_decides": by_radius,
            }
        )
        heading = f"{policy}{' (default)' * (policy == default)}: {summary(policy)}"
        cells = [(row.name, _option_value(row.default), row.meaning) for row in rows]
        lines = [heading, table(("option", "default", "meaning"), cells)]
        if by_radius:
            lines.append(RADIUS_MEANING)
        blocks.append("\n".join(lines))
    emit(settings, data, "\n\n".join(blocks))


def _option_value(value: object) -> str:
    """A default as --policy-option takes it: none, true/false, the number or the word."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)
