"""Commands that need no database: ``fingerprint`` and ``presets``."""

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
