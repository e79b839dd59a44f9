"""``simstore report``: what the namespace decided, as one self-contained HTML page."""

from __future__ import annotations

from collections.abc import Callable

import click

from simstore.cli._app import Settings, main, open_store
from simstore.cli.output import emit
from simstore.io.records import FORMATS


def _source_texts(
    path: str, format_: str | None, text_field: str, key_field: str
) -> Callable[[frozenset[str]], dict[str, str]]:
    """A function that reads the wanted keys' texts from the records file, in one pass (only
    those keys' texts are held), keyed as ``ingest`` keys them."""
    from simstore.io.records import InputOptions, Record, format_of, read_records

    try:
        chosen = format_of(path, format_)
    except click.UsageError:
        raise click.UsageError(
            f"cannot tell the format of {path!r} from its name: give --texts-format "
            "jsonl, csv or lines"
        ) from None
    options = InputOptions(
        format=chosen,
        text_field=text_field,
        key_field=key_field,
        strict=False,
        batch_size=1000,
        max_distance=None,
    )

    def read(wanted: frozenset[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for record in read_records([path], options):
            if isinstance(record, Record) and record.key in wanted:
                found[record.key] = record.text
        return found

    return read


@main.command()
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False, allow_dash=True),
    help="The HTML file to write ('-': stdout).",
)
@click.option(
    "--since",
    help="Only what was decided within this long before now (30m, 12h, 7d, 2w) [default: all].",
)
@click.option(
    "--sample",
    type=int,
    default=200,
    show_default=True,
    help="How many decisions nearest a threshold to show side by side.",
)
@click.option(
    "--clusters", type=int, default=10, show_default=True, help="How many of the biggest clusters."
)
@click.option(
    "--texts",
    "texts_path",
    type=click.Path(exists=True, dir_okay=False),
    help="The records that were ingested (as ingest reads them): the sampled pairs then show "
    "both texts (the store never keeps a duplicate's text).",
)
@click.option(
    "--texts-format", type=click.Choice(FORMATS), help="Format of --texts [default: from its name]."
)
@click.option(
    "--text-field", default="text", show_default=True, help="--texts field with the text."
)
@click.option("--key-field", default="id", show_default=True, help="--texts field with the key.")
@click.pass_obj
def report(
    settings: Settings,
    out: str,
    since: str | None,
    sample: int,
    clusters: int,
    texts_path: str | None,
    texts_format: str | None,
    text_field: str,
    key_field: str,
) -> None:
    """Write an HTML report of what the store decided.

    One self-contained page (inline CSS and SVG, no script, nothing loaded from the network):
    kept texts and duplicates per day, the scores and distances of the duplicates per measure
    with the policy's thresholds, the biggest clusters, and the decisions nearest a threshold
    side by side with their differences, each with the 'simstore explain' command that shows it
    again. Read-only: reads aggregates and bounded samples, never the whole namespace. --out may
    not be the database file or --texts (exit 4); it is replaced only once the page is complete.
    """
    from simstore.io.outputs import check_paths
    from simstore.io.report import MAX_SAMPLE
    from simstore.storage.retention import parse_duration
    from simstore.validate import check_int

    if since is not None:
        parse_duration(since)  # bad input is exit 4 before anything is opened
    check_int("--sample", sample, lowest=1, highest=MAX_SAMPLE)
    check_int("--clusters", clusters, lowest=1, highest=MAX_SAMPLE)
    check_paths({"--out": out}, inputs={"--texts": texts_path}, database=settings.url)
    texts = None
    if texts_path is not None:
        texts = _source_texts(texts_path, texts_format, text_field, key_field)
    with open_store(settings) as store:
        html = store.report(
            None if out == "-" else out, since=since, sample=sample, clusters=clusters, texts=texts
        )
    if out == "-":
        click.echo(html, nl=False)
        return
    data = {"namespace": settings.namespace, "out": out, "bytes": len(html.encode("utf-8"))}
    if not settings.quiet or settings.json:
        emit(settings, data, f"wrote the report of namespace {settings.namespace} to {out}")
