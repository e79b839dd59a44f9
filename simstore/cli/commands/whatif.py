"""``whatif``: what a proposed recipe would flip, DB-free (``SimStore.whatif``)."""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any

import click

from simstore.cli._app import Settings, main, open_store
from simstore.cli.commands.check import (
    first_of_each_key,
    read_all,
    report_refused,
    without_refused,
)
from simstore.cli.commands.ingest import reading_options
from simstore.cli.output import emit, pairs, table
from simstore.errors import InvalidInput
from simstore.io.records import InputOptions
from simstore.policy.batch import Verdict
from simstore.policy.whatif import WhatIf

SHOWN = 10  # flips of each kind listed on the terminal


def _verdict(verdict: Verdict) -> dict[str, Any]:
    return {
        "kept": verdict.kept,
        "duplicate_of": verdict.duplicate_of,
        "distance": verdict.distance,
        "measure": verdict.measure,
        "score": verdict.score,
    }


def _data(result: WhatIf, source: str) -> dict[str, Any]:
    return {
        "texts": source,
        "records": result.records,
        "policy": result.current,
        "proposed": result.proposed,
        "changes": [
            {"option": option, "now": before, "proposed": after}
            for option, before, after in result.changes
        ],
        "kept": {"now": result.kept[0], "proposed": result.kept[1]},
        "duplicates": {
            measure: {"now": now, "proposed": then}
            for measure, (now, then) in result.duplicates.items()
        },
        "flips": result.counts(),
        "flipped": [
            {"key": f.key, "kind": f.kind, "now": _verdict(f.before), "proposed": _verdict(f.after)}
            for f in result.flips
        ],
        "new_namespace": list(result.new_namespace),
    }


def _text(result: WhatIf, settings: Settings, source: str) -> str:
    from simstore.io.whatif import summary_lines

    changed = ", ".join(f"{option} {before} -> {after}" for option, before, after in result.changes)
    flips = result.counts()
    head = pairs(
        {
            "namespace": settings.namespace,
            "texts": f"{source} ({result.records:,})",
            "policy now": result.current,
            "proposed": result.proposed,
            "changed": changed,
            "kept": f"{result.kept[0]:,} -> {result.kept[1]:,}",
            "flips": f"{flips['merged']:,} would become duplicates, {flips['split']:,} would be "
            f"kept, {flips['moved']:,} would match another kept text",
        }
    )
    rows = [
        (measure, f"{now:,}", f"{then:,}", f"{then - now:+,}")
        for measure, (now, then) in result.duplicates.items()
    ]
    measures = table(("measure", "duplicates now", "proposed", "change"), rows) if rows else ""
    command = " ".join(shlex.quote(word) for word in result.new_namespace)
    use = f"To use it, make a new namespace:\n  simstore --namespace NEW {command} ingest ..."
    parts = [head, measures, "\n".join(summary_lines(result, SHOWN)), use]
    return "\n\n".join(part for part in parts if part)


@main.command()
@click.argument(
    "files",
    metavar="[FILE...]",
    nargs=-1,
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
)
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Without FILE: how many of the latest kept texts to decide (short texts only: the "
    "namespace keeps no long text).",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False),
    help="Also write the flips side by side as one HTML page.",
)
@reading_options
@click.pass_obj
def whatif(
    settings: Settings,
    /,
    files: tuple[str, ...],
    sample: int,
    report_path: str | None,
    format_: str | None,
    text_field: str,
    key_field: str,
    key_from: str,
) -> None:
    """Show what a proposed recipe would decide otherwise, writing nothing.

    The change is given as the global options give a recipe: --policy-option KEY=VALUE
    (repeatable), --threshold, --long-threshold, or --policy NAME (another policy, its options
    from its defaults). The records of FILE (or, without one, the latest --sample kept texts of
    the namespace) are decided in input order twice, under the namespace's recipe and under the
    change, each as an empty namespace with that recipe would, and what flips is shown both
    ways: texts that would become duplicates, texts that would be kept, duplicates that would
    match another kept text, with the counts per measure and the options that make a new
    namespace with the proposal. --report writes the flips side by side (an HTML page in the
    report's style). Nothing is written to the store.
    """
    from simstore.cli._app import requested_options, requested_policy
    from simstore.io import whatif as page
    from simstore.io.outputs import check_paths

    inputs = {f"FILE {path}": path for path in files}
    if report_path is not None:
        check_paths({"--report": report_path}, inputs=inputs, database=settings.url)
    options = requested_options(settings)
    if settings.policy is None and not options:
        raise InvalidInput(
            "give the change to try before 'whatif': --policy-option KEY=VALUE (repeatable), "
            "--threshold, --long-threshold or --policy NAME"
        )
    requested_policy(settings)  # an unknown option or a bad value: exit 4 before opening
    own = dataclasses.replace(
        settings, policy=None, threshold=None, long_threshold=None, policy_options=()
    )
    reading = InputOptions(format_, text_field, key_field, False, 1000, None, key_from,
                           max_text_length=settings.max_text_length)  # fmt: skip
    with open_store(own) as store:
        if files:
            records, rejected = read_all(files, reading)
            records = first_of_each_key(records)  # a key again with its text: decided once
            source = ", ".join(files)
            records, result, refused = without_refused(store, records, lambda chosen: store.whatif(
                [r.text for r in chosen], keys=[r.key for r in chosen], policy=settings.policy,
                options=options,
            ))  # fmt: skip
            report_refused(refused, strict=False)
            rejected += refused
        else:
            rejected = []
            result = store.whatif(policy=settings.policy, options=options, sample=sample)
            source = "the namespace's latest kept texts"
        if report_path is not None:
            page.write(result, report_path, database=settings.url, namespace=settings.namespace,
                       preset=store.preset.label, source=source, inputs=inputs)  # fmt: skip
    data = {"namespace": settings.namespace, **_data(result, source), "report": report_path}
    emit(settings, data, _text(result, settings, source))
    if rejected:
        raise click.exceptions.Exit(1)
