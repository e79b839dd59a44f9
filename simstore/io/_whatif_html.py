"""The what-if page (``simstore.io.whatif``): one self-contained HTML file in the report's style.

The report's style sheet, diff and building blocks (``simstore.io._report_html``); every value
from the texts or the store is escaped where it is written. No script, nothing loaded.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from datetime import datetime

from simstore.io._report_html import _card, _clip, _e, _side, _table, _when, diff, document
from simstore.policy.batch import Verdict
from simstore.policy.whatif import MERGED, MOVED, SPLIT, Flip, WhatIf

SHOWN = 200  # flips shown per section (all are counted)

SECTIONS = (
    ("counts", "Counts"),
    (MERGED, "Would become duplicates"),
    (SPLIT, "Would be kept"),
    (MOVED, "Would match another kept text"),
)


def _verdict(verdict: Verdict) -> str:
    if verdict.kept:
        return "kept"
    score = "" if verdict.score is None else f", {verdict.measure} {verdict.score:.3f}"
    return f"duplicate of {verdict.duplicate_of} (distance {verdict.distance}{score})"


def _counts(result: WhatIf) -> str:
    flips = result.counts()
    (before, after) = result.kept
    cards = "".join(
        (
            _card(f"{result.records:,}", "texts decided"),
            _card(f"{before:,} → {after:,}", "kept"),
            _card(f"{result.records - before:,} → {result.records - after:,}", "duplicates"),
            _card(f"{flips[MERGED]:,}", "would become duplicates"),
            _card(f"{flips[SPLIT]:,}", "would be kept"),
            _card(f"{flips[MOVED]:,}", "would match another kept text"),
        )
    )
    measures = [
        (f"<code>{_e(measure)}</code>", f"{now:,}", f"{then:,}", f"{then - now:+,}")
        for measure, (now, then) in result.duplicates.items()
    ]
    table = _table(("measure", "duplicates now", "proposed", "change"), measures, {1, 2, 3})
    changes = [
        (f"<code>{_e(option)}</code>", _e(before_value), _e(after_value))
        for option, before_value, after_value in result.changes
    ]
    changed = _table(("option", "the namespace's", "proposed"), changes, set())
    command = " ".join(shlex.quote(word) for word in result.new_namespace)
    note = (
        '<p class="note">Both runs decide the same texts in input order, each as an empty '
        "namespace with that recipe would (texts kept before a text are its only references); "
        "nothing is written. A namespace records its recipe and refuses another: to use the "
        f"proposal, make a new namespace with <code>simstore --namespace NEW {_e(command)} "
        "ingest ...</code>.</p>"
    )
    return f'<div class="cards">{cards}</div>{table}<h3>Changed options</h3>{changed}{note}'


def _flip(result: WhatIf, flip: Flip) -> str:
    before, after = flip.before, flip.after
    matched = after if not after.kept else before
    head = (
        f'<div class="head"><b><code>{_e(flip.key)}</code></b>'
        f"<span>now: {_e(_verdict(before))}</span>"
        f'<span class="merge">proposed: {_e(_verdict(after))}</span></div>'
    )
    other = matched.duplicate_of or ""
    left, right = _clip(result.texts.get(other)), _clip(result.texts.get(flip.key))
    if left is not None and right is not None:
        left, right = diff(left, right)
    else:
        left, right = _e(left or ""), _e(right or "")
    sides = _side(f"kept: {other}", left) + _side(f"{flip.key}", right)
    return f'<div class="pair">{head}<div class="sides">{sides}</div></div>'


def _flips(result: WhatIf, kind: str) -> str:
    flips = result.of_kind(kind)
    if not flips:
        return '<p class="note">None.</p>'
    shown = flips[:SHOWN]
    more = f" (the first {len(shown):,} of {len(flips):,})" if len(flips) > len(shown) else ""
    note = (
        f'<p class="note">{len(flips):,} texts{more}, in input order: the kept text each would '
        "match on the left (removed words struck out), the text on the right (added words "
        "marked), as they were given.</p>"
    )
    return note + "".join(_flip(result, flip) for flip in shown)


def page(
    result: WhatIf, *, database: str, namespace: str, preset: str, source: str, at: datetime
) -> str:
    """The whole page."""
    meta = (
        ("database", database),
        ("namespace", namespace),
        ("preset", preset),
        ("policy now", result.current),
        ("proposed", result.proposed),
        ("texts", source),
        ("generated", _when(at)),
    )
    bodies = {ident: _flips(result, ident) for ident, _title in SECTIONS[1:]}
    bodies["counts"] = _counts(result)
    return document(f"simstore what-if: {namespace}", meta, SECTIONS, bodies)


def summary_lines(result: WhatIf, limit: int) -> Sequence[str]:
    """The first ``limit`` flips of each kind as plain lines, for the terminal."""
    lines: list[str] = []
    titles = dict(SECTIONS)
    for kind in (MERGED, SPLIT, MOVED):
        flips = result.of_kind(kind)
        if not flips:
            continue
        lines.append(f"{titles[kind]} ({len(flips):,}):")
        for flip in flips[:limit]:
            lines.append(f"  {flip.key}: {_verdict(flip.before)} -> {_verdict(flip.after)}")
        if len(flips) > limit:
            lines.append(
                f"  ... {len(flips) - limit:,} more (--report PATH shows them side by side)"
            )
    return lines
