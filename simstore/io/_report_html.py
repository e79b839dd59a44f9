"""The report page (``simstore.io.report``): one self-contained HTML file.

Inline CSS and inline SVG charts, drawn here by hand; no script, no font, image or style sheet
from anywhere (the page opens from a file with no network). Every value that comes from the
store or from the caller's texts is escaped with ``html.escape`` at the one place it is written.
The only links are fragments within the page.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape

from simstore.io._report_model import (
    DISTANCE_MEASURE,
    SCORE_BINS,
    TEXT_CHARACTERS,
    Cluster,
    Histogram,
    Near,
    Refused,
    Report,
)

SECTIONS = (
    ("counts", "Counts"),
    ("scores", "Scores and distances"),
    ("clusters", "Biggest clusters"),
    ("nearest", "Nearest the threshold"),
    ("refused", "Refused near the threshold"),
    ("stored", "What the store keeps"),
)
"""The page's sections: (id, title), in order."""

NOT_KEPT_DUPLICATE = "not stored: simstore never keeps the text of a duplicate (only its decision)"
NOT_KEPT_LONG = "not stored: simstore keeps the normalised text of short texts only"
KEPT_GONE = "the kept row has since been removed or purged"

_CSS = """
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans",
  "Noto Sans CJK SC", "PingFang SC", "Microsoft YaHei", "WenQuanYi Zen Hei", sans-serif;
  color: #1d2330; background: #f5f6f8; margin: 0; }
main { max-width: 1180px; margin: 0 auto; padding: 20px 28px 48px; }
h1 { font-size: 22px; margin: 4px 0 2px; }
h2 { font-size: 18px; margin: 0 0 10px; padding-bottom: 6px; border-bottom: 1px solid #dde1e8; }
h3 { font-size: 14px; margin: 14px 0 4px; }
section { background: #fff; border: 1px solid #dde1e8; border-radius: 6px; padding: 16px 20px;
  margin: 16px 0; }
nav { margin: 10px 0 0; }
nav a { color: #2c5aa0; margin-right: 16px; text-decoration: none; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0; }
dl.meta dt { color: #5b6475; } dl.meta dd { margin: 0; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin-bottom: 12px; }
.card { border: 1px solid #dde1e8; border-radius: 6px; padding: 8px 14px; min-width: 120px; }
.card b { display: block; font-size: 20px; }
.card span { color: #5b6475; font-size: 12px; }
table { border-collapse: collapse; margin: 6px 0 10px; }
th, td { text-align: left; padding: 3px 10px 3px 0; vertical-align: top;
  border-bottom: 1px solid #eceef2; }
th { color: #5b6475; font-weight: 600; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
.charts { display: flex; flex-wrap: wrap; gap: 8px 24px; }
figure { margin: 4px 0; } figcaption { color: #5b6475; font-size: 12px; }
svg text { font: 11px system-ui, sans-serif; fill: #5b6475; }
svg .bar { fill: #4a78b5; } svg .axis { stroke: #9aa3b2; } svg line.mark { stroke: #c0392b;
  stroke-width: 1.5; stroke-dasharray: 4 3; } svg text.mark { fill: #c0392b; }
code { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; background: #f0f2f5;
  padding: 1px 4px; border-radius: 3px; }
.note { color: #5b6475; font-style: italic; }
.pair { border-top: 1px solid #eceef2; padding: 10px 0 4px; }
.pair .head { display: flex; flex-wrap: wrap; gap: 4px 18px; align-items: baseline; }
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 10px; margin-top: 6px; }
.side { background: #fafbfc; border: 1px solid #eceef2; border-radius: 4px; padding: 6px 8px;
  white-space: pre-wrap; word-break: break-word; }
.side .label { display: block; color: #5b6475; font-size: 12px; margin-bottom: 2px; }
del { background: #fbd3d0; text-decoration: line-through; color: #7a1f17; }
ins { background: #cdebd3; text-decoration: none; color: #14532d; }
.inside { color: #1e6b34; } .outside { color: #a1281c; } .at { color: #8a5a00; }
.merge { color: #2c5aa0; }
.when, td code { white-space: nowrap; }
.clip { max-width: 520px; white-space: pre-wrap; word-break: break-word; }
"""


def _e(value: object) -> str:
    """Escaped text (quotes too, so that a value is safe in an attribute)."""
    return escape(str(value), quote=True)


def _when(moment: datetime | None) -> str:
    return "-" if moment is None else f"{moment:%Y-%m-%d %H:%M:%S} UTC"


def _number(value: float | None, places: int = 3) -> str:
    return "-" if value is None else f"{value:.{places}f}"


# --- charts --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Bar:
    left: float  # data coordinates
    right: float
    count: int
    tip: str


@dataclass(frozen=True)
class _Axis:
    low: float
    high: float
    ticks: tuple[tuple[float, str], ...]


_WIDTH, _HEIGHT = 540, 200
_LEFT, _RIGHT, _TOP, _BOTTOM = 46, 14, 40, 34  # the top holds two rows of mark labels
_WIDEST = 48  # pixels a bar may span


def _svg(bars: Sequence[_Bar], axis: _Axis, marks: Sequence[tuple[float, str]], title: str) -> str:
    """A bar chart as inline SVG: bars over an x axis in data units, dashed threshold marks."""
    plot_w, plot_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM
    span = (axis.high - axis.low) or 1.0
    top = max((bar.count for bar in bars), default=0) or 1

    def x(value: float) -> float:
        return _LEFT + (value - axis.low) / span * plot_w

    base = _TOP + plot_h
    parts = [
        f'<svg width="{_WIDTH}" height="{_HEIGHT}" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" aria-label="{_e(title)}">',
        f'<line class="axis" x1="{_LEFT}" y1="{base}" x2="{_WIDTH - _RIGHT}" y2="{base}"/>',
        f'<line class="axis" x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{base}"/>',
        f'<text x="{_LEFT - 4}" y="{base}" text-anchor="end">0</text>',
        f'<text x="{_LEFT - 4}" y="{_TOP + 8}" text-anchor="end">{top:,}</text>',
    ]
    for bar in bars:
        height = bar.count / top * plot_h
        left, right = x(bar.left), x(bar.right)
        if right - left > _WIDEST:  # one or two days: a bar, not a wall
            middle = (left + right) / 2
            left, right = middle - _WIDEST / 2, middle + _WIDEST / 2
        parts.append(
            f'<rect class="bar" x="{left:.1f}" y="{base - height:.1f}" '
            f'width="{max(right - left, 1.0):.1f}" height="{height:.1f}">'
            f"<title>{_e(bar.tip)}</title></rect>"
        )
    for value, label in axis.ticks:
        parts.append(
            f'<text x="{x(value):.1f}" y="{base + 14}" text-anchor="middle">{_e(label)}</text>'
        )
    for number, (value, label) in enumerate(marks):
        at = x(value)
        anchor = "end" if at > _WIDTH / 2 else "start"
        shift = -3 if anchor == "end" else 3
        parts.append(
            f'<line class="mark" x1="{at:.1f}" y1="{_TOP - 2}" x2="{at:.1f}" y2="{base}"/>'
            f'<text class="mark" x="{at + shift:.1f}" y="{11 + 12 * number}" '
            f'text-anchor="{anchor}">{_e(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{_e(caption)}</figcaption></figure>"


def _every(count: int, most: int) -> int:
    """Label every n-th of ``count`` ticks so that at most ``most`` are labelled."""
    return max(1, math.ceil(count / most))


def _days_chart(report: Report) -> str:
    days = report.days
    step = _every(len(days), 8)
    bars = [
        _Bar(i - 0.4, i + 0.4, day.duplicates, f"{day.day}: {day.duplicates:,} duplicates")
        for i, day in enumerate(days)
    ]
    ticks = tuple((float(i), day.day) for i, day in enumerate(days) if i % step == 0)
    axis = _Axis(-0.5, len(days) - 0.5, ticks)
    return _figure(_svg(bars, axis, (), "duplicates per day"), "duplicates per day (UTC)")


def _score_chart(histogram: Histogram) -> str:
    values = [b / SCORE_BINS for b in histogram.counts] + [t.value for t in histogram.thresholds]
    low = max(0.0, math.floor(min(values) * 20) / 20 - 0.05)
    bars = [
        _Bar(
            b / SCORE_BINS,
            (b + 1) / SCORE_BINS,
            count,
            f"{b / SCORE_BINS:.2f}-{(b + 1) / SCORE_BINS:.2f}: {count:,}",
        )
        for b, count in sorted(histogram.counts.items())
        if b < SCORE_BINS  # exact copies (1.0) would dwarf every other bar: counted apart
    ]
    step = 0.05 if 1.0 - low <= 0.5 else 0.1
    ticks = tuple(
        (round(low + i * step, 2), f"{low + i * step:.2f}")
        for i in range(round((1.0 - low) / step) + 1)
    )
    marks = [(t.value, f"{t.label} {t.value:g}") for t in histogram.thresholds]
    title = f"{histogram.measure} score of {histogram.total:,} duplicates"
    exact = histogram.counts.get(SCORE_BINS, 0)
    caption = f"{title}; {exact:,} of them at 1.0 (exact copies), counted here and not drawn"
    return _figure(_svg(bars, _Axis(low, 1.0, ticks), marks, title), caption if exact else title)


def _distance_chart(histogram: Histogram) -> str:
    radius = max((t.value for t in histogram.thresholds), default=0)
    high = int(max(max(histogram.counts), radius)) + 1
    bars = [
        _Bar(d - 0.4, d + 0.4, count, f"distance {d}: {count:,}")
        for d, count in sorted(histogram.counts.items())
    ]
    step = _every(high + 1, 16)
    ticks = tuple((float(d), str(d)) for d in range(0, high + 1, step))
    marks = [(t.value + 0.5, f"{t.label} <= {t.value:g}") for t in histogram.thresholds]
    title = f"SimHash distance (bits) of {histogram.total:,} {_measure_name(histogram.measure)}"
    return _figure(_svg(bars, _Axis(-0.5, high + 0.5, ticks), marks, title), title)


def _measure_name(measure: str) -> str:
    if measure == DISTANCE_MEASURE:
        return "duplicates decided by distance alone"
    return f"duplicates decided by {measure}"


# --- sections ------------------------------------------------------------------------------


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: set[int]) -> str:
    """A table; cells are HTML already (escaped by the caller)."""

    def cls(i: int) -> str:
        return ' class="n"' if i in numeric else ""

    head = "".join(f"<th{cls(i)}>{_e(h)}</th>" for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f"<td{cls(i)}>{cell}</td>" for i, cell in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _card(value: str, label: str) -> str:
    return f'<div class="card"><b>{_e(value)}</b><span>{_e(label)}</span></div>'


def _counts(report: Report) -> str:
    rate = report.duplicates / report.decisions if report.decisions else 0.0
    cards = "".join(
        (
            _card(f"{report.decisions:,}", "decisions"),
            _card(f"{report.kept:,}", "kept"),
            _card(f"{report.duplicates:,}", f"duplicates ({rate:.1%})"),
            _card("not recorded", "replays"),
            _card(f"{report.kept_rows:,}", "kept rows now"),
            _card(f"{report.orphaned:,}", "duplicates of a removed key"),
        )
    )
    cards = f'<div class="cards">{cards}</div>'
    replays = (
        '<p class="note">A key added again replays its recorded decision and writes nothing, so '
        "the tables hold no count of replays (<code>simstore ingest</code> prints them as "
        "<code>replayed</code>). Kept rows now: texts in <code>simstore_fingerprints</code>, "
        "after any purge or removal.</p>"
    )
    if not report.days:
        return cards + replays + '<p class="note">No decisions in this period.</p>'
    rows = [
        (_e(day.day), f"{day.kept:,}", f"{day.duplicates:,}", f"{day.kept + day.duplicates:,}")
        for day in report.days
    ]
    table = _table(("day (UTC)", "kept", "duplicates", "decisions"), rows, {1, 2, 3})
    return f'{cards}{replays}<div class="charts">{_days_chart(report)}<div>{table}</div></div>'


def _scores(report: Report) -> str:
    if not report.measures:
        return '<p class="note">No duplicates in this period.</p>'
    rows = [
        (
            _e(measure.measure),
            f"{measure.duplicates:,}",
            _number(measure.lowest),
            _number(measure.highest),
        )
        for measure in report.measures
    ]
    table = _table(("measure", "duplicates", "lowest score", "highest score"), rows, {1, 2, 3})
    charts = "".join(
        _score_chart(h) if h.unit == "score" else _distance_chart(h) for h in report.histograms
    )
    note = (
        '<p class="note">Each measure\'s duplicates, by the score that confirmed them and by the '
        "Hamming distance of their SimHash fingerprints; dashed lines are the thresholds of the "
        f"policy this report was made with: {_e(report.policy)}. Measure "
        "<code>minhash</code> is the signature's estimate (long texts); "
        "<code>distance</code> means the distance alone decided (a row without a signature or "
        "kept text).</p>"
    )
    return f'{table}{note}<div class="charts">{charts}</div>'


def _kept_text(text: str | None, kept: bool) -> str:
    if not kept:
        return f'<span class="note">{_e(KEPT_GONE)}</span>'
    if text is None:
        return f'<span class="note">{_e(NOT_KEPT_LONG)}</span>'
    shown = text if len(text) <= 240 else text[:240] + "…"
    return f'<div class="clip">{_e(shown)}</div>'


def _clusters(report: Report) -> str:
    if not report.clusters:
        return '<p class="note">No clusters in this period.</p>'

    def row(cluster: Cluster) -> tuple[str, ...]:
        return (
            f"<code>{_e(cluster.key)}</code>",
            f"{cluster.size:,}",
            f'<span class="when">{_e(_when(cluster.kept_at))}</span>',
            f'<span class="when">{_e(_when(cluster.last_at))}</span>',
            _kept_text(cluster.text, cluster.kept_at is not None),
            f"<code>{_e(report.explain_command(cluster.key))}</code>",
        )

    headers = ("kept key", "size", "first arrival", "last arrival", "kept text", "again")
    note = (
        '<p class="note">A cluster is a kept key and the duplicates recorded against it '
        "(size counts the kept text); first arrival is when the kept text was added, last "
        "arrival the latest duplicate.</p>"
    )
    return note + _table(headers, [row(c) for c in report.clusters], {1})


_TOKEN = re.compile(
    r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]|[^\s\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]+|\s+"
)


def tokens(text: str) -> list[str]:
    """Diff units: one per Chinese or Japanese character, one per word otherwise, and the runs
    of white space between them (so that a mixed text diffs each part in its own unit)."""
    return _TOKEN.findall(text)


def diff(left: str, right: str) -> tuple[str, str]:
    """Both texts as HTML, what only the left has in ``<del>``, what only the right has in
    ``<ins>`` (difflib over ``tokens``)."""
    a, b = tokens(left), tokens(right)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    out_a: list[str] = []
    out_b: list[str] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        old, new = _e("".join(a[i1:i2])), _e("".join(b[j1:j2]))
        if op == "equal":
            out_a.append(old)
            out_b.append(new)
            continue
        if old:
            out_a.append(f"<del>{old}</del>")
        if new:
            out_b.append(f"<ins>{new}</ins>")
    return "".join(out_a), "".join(out_b)


def _clip(text: str | None) -> str | None:
    if text is None or len(text) <= TEXT_CHARACTERS:
        return text
    return text[:TEXT_CHARACTERS] + "…"


def _side(label: str, body: str) -> str:
    return f'<div class="side"><span class="label">{_e(label)}</span>{body}</div>'


def _pair_sides(report: Report, near: Near) -> str:
    kept = _clip(near.source_kept if near.source_kept is not None else near.kept_text)
    new = _clip(near.source_new)
    kept_label = f"kept: {near.duplicate_of}"
    new_label = f"duplicate: {near.key}"
    if kept is not None and new is not None:
        left, right = diff(kept, new)
        return _side(kept_label, left) + _side(new_label, right)
    if kept is not None:
        left = _e(kept)
    elif not near.kept_row:
        left = f'<span class="note">{_e(KEPT_GONE)}</span>'
    else:
        left = f'<span class="note">{_e(NOT_KEPT_LONG)}</span>'
    hint = "" if report.texts_given else "; give the source records (--texts) to see it"
    missing = "not in the source records given" if report.texts_given else NOT_KEPT_DUPLICATE
    right = f'<span class="note">{_e(missing + hint)}</span>'
    return _side(kept_label, left) + _side(new_label, right)


def _pair(report: Report, near: Near) -> str:
    unit = "bits" if near.measure == DISTANCE_MEASURE else ""
    side = "inside" if near.margin > 5e-7 else "outside" if near.margin < -5e-7 else "at"
    margin = f"{near.margin:+g} {unit}".strip() if unit else f"{near.margin:+.3f}"
    score = f"{near.measure} {_number(near.score)}" if near.score is not None else near.measure
    threshold = f"<= {near.threshold.value:g}" if unit else f">= {near.threshold.value:g}"
    head = (
        f'<div class="head"><b><code>{_e(near.key)}</code> duplicate of '
        f"<code>{_e(near.duplicate_of)}</code></b>"
        f"<span>{_e(score)}</span>"
        f'<span class="{side}">{_e(margin)} {side} {_e(near.threshold.label)} '
        f"{_e(threshold)}</span>"
        f"<span>distance {_e('-' if near.distance is None else near.distance)}</span>"
        f"<span>{_e(_when(near.decided_at))}</span>"
        f"<code>{_e(report.explain_command(near.key))}</code></div>"
    )
    return f'<div class="pair">{head}<div class="sides">{_pair_sides(report, near)}</div></div>'


def _nearest(report: Report) -> str:
    if not report.nearest:
        return '<p class="note">No scored duplicates in this period.</p>'
    known = sum(1 for near in report.nearest if near.source_new is not None)
    source = (
        f"{known:,} of them with both texts from the source records given"
        if report.texts_given
        else "the duplicates' own texts are not stored, so only the kept side is shown "
        "(<code>simstore report --texts FILE</code> adds both sides from the records ingested)"
    )
    note = (
        f'<p class="note">The {len(report.nearest):,} duplicates nearest a threshold of the '
        f"policy (a sample of at most {report.sample:,}), nearest first: texts as the policy "
        f"compared them (normalised); removed words or characters struck out on the kept side, "
        f"added ones marked on the duplicate's; {source}.</p>"
    )
    return note + "".join(_pair(report, near) for near in report.nearest)


def _refused_side(report: Report, text: str | None) -> str:
    """One side of a refused pair that is not known: a long text's (the store keeps only short
    texts), which only the source records can give."""
    if text:
        return _e(text)
    if text is not None:  # an empty comparison text
        return ""
    if report.texts_given:
        return f'<span class="note">{_e("not in the source records given")}</span>'
    hint = "; give the source records (--texts) to see it"
    return f'<span class="note">{_e(NOT_KEPT_LONG + hint)}</span>'


def _refused_pair(report: Report, refused: Refused) -> str:
    unit = refused.measure == DISTANCE_MEASURE
    bar = f"<= {refused.threshold:g} bits" if unit else f">= {refused.threshold:g}"
    merge = (
        ""
        if refused.merged_by is None
        else f'<span class="merge">would merge: {_e(refused.merged_by)}</span>'
    )
    head = (
        f'<div class="head"><b><code>{_e(refused.key)}</code> kept apart from '
        f"<code>{_e(refused.candidate)}</code></b>"
        f"<span>{_e(refused.measure)} {_e(_number(refused.score, 4))}</span>"
        f'<span class="outside">{_e(refused.reason)} (needs {_e(bar)})</span>{merge}'
        f"<code>{_e(report.explain_command(refused.key))}</code></div>"
    )
    kept = _clip(refused.source_kept if refused.source_kept is not None else refused.kept_text)
    new = _clip(refused.source_new if refused.source_new is not None else refused.new_text)
    if kept is not None and new is not None:
        left, right = diff(kept, new)
    else:
        left, right = _refused_side(report, kept), _refused_side(report, new)
    sides = _side(f"kept earlier: {refused.candidate}", left) + _side(f"kept: {refused.key}", right)
    return f'<div class="pair">{head}<div class="sides">{sides}</div></div>'


def _refused(report: Report) -> str:
    if not report.refused:
        return (
            f'<p class="note">None of the latest {report.probed:,} kept texts had a candidate '
            "that the policy refused.</p>"
        )
    note = (
        f'<p class="note">The other side of the thresholds: of the latest {report.probed:,} kept '
        f"texts, the {len(report.refused):,} whose nearest candidate was refused closest to a "
        "threshold, with the reason (a score under it, a look-alike, outside the window) and the "
        "option that would have merged it (checked by judging the pair again with it changed: "
        "set it with --policy-option NAME=VALUE, --threshold, --long-threshold or "
        "--max-distance on a new namespace, or --keep).</p>"
    )
    return note + "".join(_refused_pair(report, refused) for refused in report.refused)


def _stored(report: Report) -> str:
    return (
        f"<p>{report.kept_with_text:,} of {report.kept_rows:,} kept rows keep their normalised "
        "text (short texts; long texts keep only their fingerprint and MinHash signature). "
        "No duplicate's text is ever stored: a decision row holds its key, fingerprint, the key "
        "it matched, the distance, and the measure and score that confirmed it. "
        "Every count on this page comes from SQL aggregates over "
        "<code>simstore_decisions</code> and <code>simstore_fingerprints</code> (the README's "
        "audit recipes give the same numbers); the pairs are a bounded sample.</p>"
    )


def page(report: Report) -> str:
    """The whole page."""
    period = "everything" if report.since is None else f"decided since {_when(report.since)}"
    meta = (
        ("database", report.database),
        ("namespace", report.namespace),
        ("preset", report.preset),
        ("policy", report.policy),
        ("period", period),
        ("generated", _when(report.generated_at)),
    )
    bodies = {
        "counts": _counts(report),
        "scores": _scores(report),
        "clusters": _clusters(report),
        "nearest": _nearest(report),
        "refused": _refused(report),
        "stored": _stored(report),
    }
    return document(f"simstore report: {report.namespace}", meta, SECTIONS, bodies)


def document(
    title: str,
    meta: Sequence[tuple[str, object]],
    sections: Sequence[tuple[str, str]],
    bodies: Mapping[str, str],
) -> str:
    """A page in the report's style: a header with ``meta`` (label, value) and a link to each
    of ``sections`` (id, title), then each section's body (HTML already)."""
    listed = "".join(f"<dt>{_e(label)}</dt><dd>{_e(value)}</dd>" for label, value in meta)
    nav = "".join(f'<a href="#{ident}">{_e(name)}</a>' for ident, name in sections)
    shown = "".join(
        f'<section id="{ident}"><h2>{_e(name)}</h2>{bodies[ident]}</section>'
        for ident, name in sections
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>"
        f"<body><main><header><h1>{_e(title)}</h1>"
        f'<dl class="meta">{listed}</dl><nav>{nav}</nav></header>{shown}</main></body></html>\n'
    )
