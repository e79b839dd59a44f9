"""What the commands print: label/value lines and tables for people, one JSON document with --json.

The JSON shapes of matches and decisions live here too, so that every command shows them alike.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timezone
from typing import IO, TYPE_CHECKING, Any

import click

from simstore.text.encoding import to_hex

if TYPE_CHECKING:
    from simstore.cli._app import Settings
    from simstore.results import Decision, Match


def iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.replace(tzinfo=timezone.utc).isoformat()


def shown(moment: datetime | None) -> str:
    return "-" if moment is None else f"{moment:%Y-%m-%d %H:%M:%S} UTC"


def _width(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def table(headers: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> str:
    """Left-aligned columns (wide CJK characters counted as two cells)."""
    body = [headers, *rows]
    widths = [max(_width(row[column]) for row in body) for column in range(len(headers))]
    return "\n".join(
        "  ".join(
            cell + " " * (widths[column] - _width(cell)) for column, cell in enumerate(row)
        ).rstrip()
        for row in body
    )


def _shown_value(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def pairs(rows: Mapping[str, object]) -> str:
    """``label  value`` lines, labels padded to one width."""
    width = max(len(label) for label in rows)
    return "\n".join(f"{label:<{width}}  {_shown_value(value)}" for label, value in rows.items())


def emit(
    settings: Settings,
    data: Mapping[str, Any] | list[Any],
    text: str | None = "",
    *,
    err: bool = False,
) -> None:
    """One JSON document with --json, else ``text`` (by default the data as label/value lines)."""
    if text == "" and isinstance(data, Mapping):
        text = pairs(data)
    if settings.json:
        from simstore.cli._app import json_document

        click.echo(json_document(data), err=err)
        if not err:
            from simstore.cli._app import EMITTED

            click.get_current_context().find_root().meta[EMITTED] = True
    elif text is not None:
        click.echo(text, err=err)


@contextlib.contextmanager
def output_file(path: str) -> Iterator[IO[str]]:
    """stdout for ``-``, else ``simstore.io.outputs.replaced``: a temporary file renamed over
    ``path`` when the block ends without an error (check the path with ``check_paths`` first)."""
    if path == "-":
        with click.open_file("-", "w", encoding="utf-8") as stream:
            yield stream
        return
    from simstore.io.outputs import replaced

    with replaced(path) as stream:
        yield stream


def match_json(match: Match) -> dict[str, Any]:
    return {
        "key": match.key,
        "fingerprint": to_hex(match.fingerprint),
        "distance": match.distance,
        "measure": match.measure,
        "score": match.score,
        "added_at": iso(match.added_at),
    }


def decision_json(decision: Decision) -> dict[str, Any]:
    match = decision.duplicate_of
    return {
        "key": decision.key,
        "fingerprint": decision.hex,
        "inserted": decision.inserted,
        "duplicate_of": None if match is None else match_json(match),
    }


def verdict(decision: Decision) -> str:
    match = decision.duplicate_of
    if decision.inserted:
        return "kept"
    if match is None:
        return "duplicate of an entry that has since been purged"
    return f"duplicate of {match.key} at distance {match.distance}"
